"""Agent Skills, as Claude Code and the cross-tool open format define them: a folder with a `SKILL.md`.

```
---
name: pdf-tools                  # lowercase letters, digits, hyphens; ≤ 64; the folder's name
description: Fill and merge PDF forms. Use when the user works with PDFs.   # what and when; ≤ 1024
allowed-tools: Read, Bash(python3 scripts/*)   # optional: asked no more while the skill is in use
model: haiku                     # optional: the model a forked skill runs on
context: fork                    # optional: run in a sub-agent of its own, return its report
argument-hint: <file>            # optional, for the slash command
disable-model-invocation: true   # optional: only the user starts it (as /pdf-tools)
user-invocable: false            # optional: only the model starts it
---
Instructions... (the body, read only when the skill is used; other files are read on demand)
```

Progressive disclosure, as the format intends: when a session starts only each skill's name and description
are read and offered (the `Skill` tool's description, within a budget of characters; the rest are found with
its `query`); the body is read when the skill is used; its references and scripts through the normal tools.

Where (the first to define a name wins): the user's own — the bridge's config dir `skills/`, `~/.claude/skills/`,
`~/.agents/skills/` — then the project's `.claude/skills/`, `.agents/skills/` and `.agent-bridge/skills/`, then
the skills of enabled plugins (named `plugin:skill`). A project's skill is the folder's: its files are read
without following a link out of the project, and its `allowed-tools` wait for the user's trust
(bridge/permissions/trust.py). A skill that can't be used is reported once, with the reason; never a crash.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bridge.agents.loader import front_matter, load_yaml
from bridge.memory import MemoryRefused, read_project_file, read_user_file
from bridge.permissions.rules import Rule
from bridge.permissions.specifiers import RuleSyntaxError
from bridge.permissions.trust import TrustItem
from bridge.permissions.widening import rule_binding

SkillSource = Literal["user", "project", "plugin"]
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
MAX_DESCRIPTION = 1024
MAX_FILE_BYTES = 256 * 1024
LISTING_BUDGET = 8_000  # characters of names and descriptions the Skill tool's description may hold
MAX_SKILLS = 2_000  # per location: a bound on what one folder can make a session read at start


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    directory: Path
    source: SkillSource
    root: Path | None = None  # a project skill: the project it must stay inside
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    fork: bool = False
    argument_hint: str | None = None
    model_invocable: bool = True
    user_invocable: bool = True
    plugin: str | None = None

    @property
    def path(self) -> Path:
        return self.directory / "SKILL.md"

    def body(self) -> str:
        """The instructions (read now: the body is read only when the skill is used). Raises SkillError."""
        text = _read(self.path, self.root)
        parts = front_matter(text)
        return (parts[1] if parts else text).strip()

    def expand(self, arguments: str) -> str:
        """The body with `$ARGUMENTS` (and `${CLAUDE_SKILL_DIR}`) filled in; arguments appended when not used."""
        body = self.body().replace("${CLAUDE_SKILL_DIR}", str(self.directory))
        if "$ARGUMENTS" in body:
            return body.replace("$ARGUMENTS", arguments)
        return body + (f"\n\nArguments: {arguments}" if arguments else "")


class SkillError(Exception):
    """A skill file that cannot be used, with why."""


@dataclass
class SkillCatalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def for_model(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.model_invocable]

    def for_user(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.user_invocable]

    def listing(self, budget: int = LISTING_BUDGET) -> tuple[list[str], int]:
        """The `- name: description` lines that fit in `budget` characters, and how many did not fit."""
        lines: list[str] = []
        used = 0
        skills = self.for_model()
        for skill in skills:
            line = f"- {skill.name}: {skill.description}"
            if used + len(line) + 1 > budget:
                break
            lines.append(line)
            used += len(line) + 1
        return lines, len(skills) - len(lines)

    def search(self, query: str, limit: int = 20) -> list[Skill]:
        """Skills whose name or description holds every word of `query` (case-insensitive), best first."""
        words = [w for w in re.split(r"\W+", query.lower()) if w]
        found = []
        for skill in self.for_model():
            text = f"{skill.name} {skill.description}".lower()
            if all(w in text for w in words):
                found.append((-sum(text.count(w) for w in words) - 5 * sum(w in skill.name for w in words), skill))
        found.sort(key=lambda pair: (pair[0], pair[1].name))
        return [skill for _, skill in found[:limit]]


def skill_dirs(cwd: Path, *, user_config_dir: Path, claude_home: Path) -> list[tuple[Path, SkillSource]]:
    """Where skills are read from, first-defining first."""
    home = Path(os.environ.get("HOME") or Path.home())
    return [
        (user_config_dir / "skills", "user"),
        (claude_home / "skills", "user"),
        (home / ".agents" / "skills", "user"),
        (cwd / ".claude" / "skills", "project"),
        (cwd / ".agents" / "skills", "project"),
        (cwd / ".agent-bridge" / "skills", "project"),
    ]


def load_skills(
    cwd: Path, *, user_config_dir: Path, claude_home: Path, plugins: Iterable[tuple[str, Path]] = ()
) -> SkillCatalog:
    """Every skill's name and description (not its body). `plugins`: (plugin name, its skills folder)."""
    catalog = SkillCatalog()
    places: list[tuple[Path, SkillSource, str | None]] = [
        (d, s, None) for d, s in skill_dirs(cwd, user_config_dir=user_config_dir, claude_home=claude_home)
    ]
    places += [(folder, "plugin", plugin) for plugin, folder in plugins]
    seen_dirs: set[Path] = set()
    for directory, source, plugin in places:
        real = Path(os.path.realpath(directory))
        if real in seen_dirs:  # the same folder reached twice (HOME opened as the project)
            continue
        seen_dirs.add(real)
        for folder in _skill_folders(directory, catalog.problems):
            skill = parse_skill(
                folder, source, root=cwd if source == "project" else None, plugin=plugin, problems=catalog.problems
            )
            if skill is not None and skill.name not in catalog.skills:
                catalog.skills[skill.name] = skill
    return catalog


def _skill_folders(directory: Path, problems: list[str]) -> list[Path]:
    try:
        if not directory.is_dir():
            return []
        entries = sorted(p for p in directory.iterdir() if p.is_dir())
    except OSError as error:
        problems.append(f"{directory}: cannot list skills ({error.strerror or error})")
        return []
    if len(entries) > MAX_SKILLS:
        problems.append(f"{directory}: {len(entries)} skill folders; only the first {MAX_SKILLS} are read")
    return [p for p in entries[:MAX_SKILLS] if os.path.lexists(p / "SKILL.md")]


def parse_skill(
    folder: Path, source: SkillSource, *, root: Path | None, plugin: str | None, problems: list[str]
) -> Skill | None:
    path = folder / "SKILL.md"
    try:
        text = _read(path, root)
    except SkillError as error:
        problems.append(f"{path}: {error}; skipped")
        return None
    parts = front_matter(text)
    if parts is None:
        problems.append(f"{path}: no front matter (`---` lines with name and description); skipped")
        return None
    try:
        meta = load_yaml(parts[0]) or {}
    except ValueError as error:
        problems.append(f"{path}: the front matter is not valid YAML ({str(error).splitlines()[0]}); skipped")
        return None
    if not isinstance(meta, dict):
        problems.append(f"{path}: the front matter must be a mapping; skipped")
        return None
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(f"{path}: `name` must be lowercase letters, digits and hyphens (at most 64); skipped")
        return None
    if name != folder.name:
        problems.append(f"{path}: `name` {name!r} must be the folder's name ({folder.name!r}); skipped")
        return None
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{path}: `description` (what the skill does and when to use it) is missing; skipped")
        return None
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        problems.append(f"{path}: `description` is over {MAX_DESCRIPTION} characters; cut to fit")
        description = description[:MAX_DESCRIPTION]
    return Skill(
        name=f"{plugin}:{name}" if plugin else name,
        description=description,
        directory=folder,
        source=source,
        root=root,
        allowed_tools=_allowed_tools(meta.get("allowed-tools"), path, problems),
        model=_text(meta.get("model")),
        fork=meta.get("context") == "fork",
        argument_hint=_text(meta.get("argument-hint")),
        model_invocable=meta.get("disable-model-invocation") is not True,
        user_invocable=meta.get("user-invocable") is not False,
        plugin=plugin,
    )


def skill_items(catalog: SkillCatalog, cwd: Path) -> list[TrustItem]:
    """A folder's own skills' `allowed-tools`, as what its trust must admit before they hold."""
    return [
        item
        for skill in catalog.skills.values()
        if skill.source == "project"
        for item in rule_items(skill.path, skill.allowed_tools, cwd)
    ]


def rule_items(path: Path, rules: Iterable[str], cwd: Path) -> list[TrustItem]:
    """A folder's own skill's `allowed-tools` as trust items: a rule for one exact command is bound to the workspace
    files it runs as they are now (widening.rule_binding), as the same rule in the folder's settings is: trusting
    it is trusting that script as it is, and a pull that changes the script asks again."""
    file = path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else str(path)
    items = []
    for text in rules:
        try:
            binds = rule_binding(Rule.parse(text), cwd)
        except RuleSyntaxError:
            binds = ""
        items.append(TrustItem(file, "allow", text, binds))
    return items


def _read(path: Path, root: Path | None) -> str:
    try:
        data = (
            read_project_file(root, path, MAX_FILE_BYTES) if root is not None else read_user_file(path, MAX_FILE_BYTES)
        )
    except MemoryRefused as refused:
        raise SkillError(str(refused)) from None
    return data.decode("utf-8", errors="replace")


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def split_rules(text: str) -> list[str]:
    """`Read, Bash(git add *) Grep`: split at commas, and at white space unless a `)` comes before the next `(` (a
    rule's specifier keeps its spaces): what `re.split(r",\\s*|\\s+(?![^(]*\\))", text)` gives, stripped and without
    empty parts, in one pass. That pattern looked ahead to the end of the text from every space, a cubic cost on a
    long run of them (attack round 20: a cloned folder's 6 KB SKILL.md held the bridge 23 s before a session could
    start; 200 KB, for days)."""
    closes_first = [False] * (len(text) + 1)  # from here on, a `)` comes before any `(`
    for i in range(len(text) - 1, -1, -1):
        char = text[i]
        closes_first[i] = True if char == ")" else False if char == "(" else closes_first[i + 1]
    parts: list[str] = []
    start = 0
    for i, char in enumerate(text):
        if char == "," or (char.isspace() and not closes_first[i]):
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _allowed_tools(value: Any, path: Path, problems: list[str]) -> tuple[str, ...]:
    """Claude Code's `allowed-tools`: a comma- or space-separated string or a list of permission rules."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [p.strip() for p in split_rules(value) if p.strip()]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        problems.append(f"{path}: `allowed-tools` must be a list of tools or rules; ignored")
        return ()
    return tuple(dict.fromkeys(items))
