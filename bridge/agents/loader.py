"""The user's agent types: Markdown files with YAML front matter, as Claude Code reads them.

```
---
name: code-reviewer
description: Reviews a change for bugs and style. Use after writing code.
tools: Read, Grep, Glob        # optional: a comma-separated list or a YAML list; absent = every tool
model: haiku                   # optional: sonnet, opus, haiku, inherit or a model id
---
You are a code reviewer... (the system prompt)
```

Read from (a later one wins a name): `~/.claude/agents/`, the user config dir's `agents/`, the project's
`.claude/agents/`, the project's `.agent-bridge/agents/`. A file that cannot be used is reported and skipped,
never fatal; built-in types may be overridden by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.agents.definitions import AGENT_TOOL, BUILTIN_AGENTS, READ_ONLY_BUILTINS, AgentDefinition
from bridge.memory import MemoryRefused, read_project_file, read_user_file

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
MAX_FILE_BYTES = 256 * 1024
MAX_AGENT_FILES = 500  # per folder


@dataclass
class AgentCatalog:
    """The agent types of one session, by name (built-ins first, then the files, in the order read)."""

    types: dict[str, AgentDefinition] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentDefinition | None:
        return self.types.get(name)

    def names(self) -> list[str]:
        return list(self.types)


def agent_dirs(cwd: Path, *, user_config_dir: Path, claude_home: Path) -> list[Path]:
    """Where agent files are read from, lowest precedence first."""
    return [
        claude_home / "agents",
        user_config_dir / "agents",
        cwd / ".claude" / "agents",
        cwd / ".agent-bridge" / "agents",
    ]


def load_catalog(
    cwd: Path, *, user_config_dir: Path, claude_home: Path, plugins: Iterable[tuple[str, Path]] = ()
) -> AgentCatalog:
    """Built-ins, the user's and the folder's agent files (a folder's are read as its memory files are: no link
    out of it), and the agents of enabled plugins (`plugins`: name, folder), named `plugin:agent`."""
    catalog = AgentCatalog({agent.name: agent for agent in BUILTIN_AGENTS})
    not_the_folders = {agent.name for agent in BUILTIN_AGENTS}  # built-in, the user's, a plugin's
    places: list[tuple[Path, str | None]] = [
        (d, None) for d in agent_dirs(cwd, user_config_dir=user_config_dir, claude_home=claude_home)
    ]
    places += [(folder, name) for name, folder in plugins]
    for directory, plugin in places:
        try:
            files = sorted(directory.glob("*.md")) if directory.is_dir() else []
        except OSError as error:
            catalog.problems.append(f"{directory}: cannot list agent files ({error.strerror or error})")
            continue
        root = cwd if plugin is None and directory.is_relative_to(cwd) else None
        if len(files) > MAX_AGENT_FILES:  # (a bound on what one folder can make a session read at start)
            catalog.problems.append(f"{directory}: {len(files)} agent files; only the first {MAX_AGENT_FILES} are read")
            files = files[:MAX_AGENT_FILES]
        for path in files:
            agent = parse_agent_file(path, catalog.problems, root=root, prefix=f"{plugin}:" if plugin else "")
            if agent is not None and root is not None and agent.name in READ_ONLY_BUILTINS:
                # a folder's file does not turn a read-only built-in the model and the user rely on into a writer
                # (attack round 24: an `Explore.md` without a `tools` line)
                catalog.problems.append(
                    f"{path}: {agent.name!r} is a read-only built-in agent's name; skipped (rename it)"
                )
                continue
            if agent is not None and root is not None and (":" in agent.name or agent.name in not_the_folders):
                # nor does it replace a type that is not its own, as a folder's command doesn't: a folder's
                # `reviewer.md` turned the user's read-only reviewer on haiku into one with every tool on another
                # model, and a `general-purpose.md` every default sub-agent; a `plug:x` took a plugin's name
                # (attack round 36)
                whose = "a plugin's name form" if ":" in agent.name else "the name of an agent type of yours"
                catalog.problems.append(f"{path}: {agent.name!r} is {whose}; skipped (rename it)")
                continue
            if agent is not None and root is None:
                not_the_folders.add(agent.name)
            if agent is not None:
                catalog.types.pop(agent.name, None)  # re-inserted: listed where it was last defined
                catalog.types[agent.name] = agent
    return catalog


def parse_agent_file(
    path: Path, problems: list[str], *, root: Path | None = None, prefix: str = ""
) -> AgentDefinition | None:
    """The agent a file defines, or None (with the reason appended to `problems`). `root`: the folder a project's
    file must stay inside; `prefix`: a plugin's `name:`."""
    try:
        data = (
            read_project_file(root, path, MAX_FILE_BYTES) if root is not None else read_user_file(path, MAX_FILE_BYTES)
        )
        text = data.decode("utf-8")
    except (MemoryRefused, UnicodeDecodeError) as error:
        problems.append(f"{path}: cannot read the agent file ({error}); skipped")
        return None
    parsed = front_matter(text)
    if parsed is None:
        problems.append(f"{path}: no YAML front matter (a `---` block with name and description); skipped")
        return None
    head, body = parsed
    try:
        meta = load_yaml(head)
    except ValueError as error:
        problems.append(f"{path}: invalid YAML front matter ({_first_line(error)}); skipped")
        return None
    if not isinstance(meta, dict):
        problems.append(f"{path}: the front matter must be a mapping of name, description, tools, model; skipped")
        return None
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        shown = repr(name)[:80] if isinstance(name, str | int | float | bool | None) else type(name).__name__
        problems.append(f"{path}: `name` is required: letters, digits, `-`, `_`, `.` or `:` (got {shown}); skipped")
        return None
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{path}: `description` is required (when to use this agent); skipped")
        return None
    if not body.strip():
        problems.append(f"{path}: the system prompt (the text after the front matter) is empty; skipped")
        return None
    tools = _tools(meta.get("tools"), path, problems)
    model = meta.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        problems.append(f"{path}: `model` must be sonnet, opus, haiku, inherit or a model id; inheriting instead")
        model = None
    return AgentDefinition(
        name=prefix + name.strip(),
        description=" ".join(description.split()),
        prompt=body.strip(),
        tools=tools,
        model=model.strip() if isinstance(model, str) else None,
        source=path,
    )


def _tools(value: Any, path: Path, problems: list[str]) -> tuple[str, ...] | None:
    if value is None or value == "*" or value == ["*"]:
        return None
    if isinstance(value, str):
        items: list[Any] = [part.strip() for part in value.split(",")]
    elif isinstance(value, list):
        items = [part.strip() if isinstance(part, str) else part for part in value]
    else:
        problems.append(f"{path}: `tools` must be a comma-separated list of tool names; the agent gets no tools")
        return ()
    names: list[str] = []
    for item in items:
        if item == "":
            continue
        if not isinstance(item, str) or not _TOOL_NAME.match(item):
            # `Bash(git *)` and the like: a narrowing we cannot honour here; leaving it out is the safe side.
            shown = repr(item)[:80]
            problems.append(f"{path}: tool {shown} left out (only tool names; narrow them with permission rules)")
            continue
        if item == "*":
            return None
        names.append(item)
    return tuple(dict.fromkeys(names))


def front_matter(text: str) -> tuple[str, str] | None:
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    return None


MAX_FRONT_MATTER = 32 * 1024  # characters: a name, a description, a few fields
MAX_YAML_DEPTH = 32


def load_yaml(text: str) -> Any:
    """A front matter's YAML (`ValueError` when it isn't, or is more than a front matter needs: attack round 24 — a
    622-byte file of nested aliases took gigabytes once printed, 20,000 `[` crashed the start with RecursionError,
    ten 254 KB lists held the start for 27 s). At most `MAX_FRONT_MATTER` characters, no anchors or aliases, at
    most `MAX_YAML_DEPTH` levels, read by libyaml when PyYAML has it. PyYAML loads here, on the first agent or skill
    file: most starts have none, and its ~10 ms import would sit between `run`'s first request and its first tool."""
    if len(text) > MAX_FRONT_MATTER:
        raise ValueError(f"it is longer than {MAX_FRONT_MATTER // 1024} KB")
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise ValueError("anchors and aliases (`&a`, `*a`) are not read in a front matter")
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise ValueError(f"it is nested more than {MAX_YAML_DEPTH} levels deep")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=loader)  # (a safe loader: CSafeLoader or SafeLoader)
    except yaml.YAMLError as error:
        raise ValueError(str(error)) from None
    except RecursionError:
        raise ValueError(f"it is nested more than {MAX_YAML_DEPTH} levels deep") from None
    except ValueError:
        raise
    except Exception as error:  # what a value's constructor raises (`1:1:…:1.5`: OverflowError, round 24's check)
        raise ValueError(f"a value can't be read ({type(error).__name__}: {str(error)[:120]})") from None


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


__all__ = ["AGENT_TOOL", "AgentCatalog", "agent_dirs", "load_catalog", "parse_agent_file"]
