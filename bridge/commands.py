"""Slash commands: built-ins, which answer without the model (but `/compact`), custom ones from markdown files
(`.agent-bridge/commands/NAME.md`, `.claude/commands/NAME.md`, the user's, and enabled plugins' as
`/plugin:NAME`) whose text — with `$ARGUMENTS` replaced — becomes the prompt, and the skills a user may start
(`/skill-name args`: the skill's instructions become the prompt). A folder's command files are read as its memory
files are: regular files inside it, no link out. A folder (a cloned repository) never takes the name of one of
the user's own commands: the user's `/review` stays theirs, the folder's is `/project:review`."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from bridge import session_wiring
from bridge.abort import Abort
from bridge.loop.events import TextDelta
from bridge.memory import MemoryRefused, read_project_file, read_user_file
from bridge.permissions.modes import MODES, PermissionModeError
from bridge.skills import Skill, SkillError

if TYPE_CHECKING:
    from bridge.loop.query import StopReason
    from bridge.messages import Block
    from bridge.session import Session

log = logging.getLogger(__name__)

BUILTINS: dict[str, tuple[str, str | None]] = {
    "help": ("Show the commands this session offers", None),
    "compact": ("Summarize the conversation to free context (optional: what to keep)", "instructions"),
    "clear": ("Start over with an empty conversation", None),
    "cost": ("Show tokens used and cost in this session", None),
    "status": ("Show model, mode, working directory and context use", None),
    "mode": ("Show or change the permission mode", "mode"),
    "plugins": ("Show the plugins that loaded, and why any did not", None),
    "skills": ("Show the skills this session has", None),
    "rewind": (
        "Go back to before an earlier prompt: code, conversation or both (lists the prompts)",
        "N [both|code|conversation] [keep|merge|overwrite]",
    ),
    "changes": (
        "Show what the agent changed (pending, or prompt N's) and keep or undo it per file or hunk",
        "[N] [undo|keep PATH[#HUNK]|all]",
    ),
}


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    hint: str | None
    template: str | None = None  # custom commands: the markdown body
    skill: str | None = None  # a skill's command: the skill's name

    def expand(self, arguments: str) -> str:
        assert self.template is not None
        if "$ARGUMENTS" in self.template:
            return self.template.replace("$ARGUMENTS", arguments)
        return self.template + (f"\n\n{arguments}" if arguments else "")


MAX_COMMAND_FILES = 500  # per folder: a bound on what one folder makes a session read (attack round 26: 100,000
# one-byte files in .claude/commands took 16 s at every start)
PROJECT_PREFIX = "project:"  # a folder's command whose name one of the user's own commands has


def command_dirs(cwd: Path) -> list[Path]:
    """Where custom commands are read: the user's (theirs win a name), then the folder's (the last of them wins
    between its two)."""
    config = Path(os.environ.get("AGENT_BRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("agent-bridge"))
    return [
        config / "commands",
        Path.home() / ".claude" / "commands",
        cwd / ".claude" / "commands",
        cwd / ".agent-bridge" / "commands",
    ]


def available_commands(
    cwd: Path,
    provided: Iterable[Command] = (),
    *,
    plugins: Iterable[tuple[str, Path]] = (),
    skills: Iterable[Skill] = (),
) -> dict[str, Command]:
    """Built-ins, then `provided` ones (MCP: `/mcp` and servers' prompts), then custom files, plugins' commands
    (`plugins`: name, folder) and skills the user may start (names not taken)."""
    commands = {name: Command(name, desc, hint) for name, (desc, hint) in BUILTINS.items()}
    commands.update({c.name: c for c in provided if c.name not in commands})
    places = [(d, "") for d in command_dirs(cwd)] + [(folder, f"{name}:") for name, folder in plugins]
    skills = list(skills)
    # names the user's own command files took, and the user's and their plugins' skills (attack round 24: the
    # folder's `review.md` took `/review` from the user's own skill, and `plug:ps.md` a plugin's command)
    users: set[str] = {s.name for s in skills if s.source != "project"}
    for directory, prefix in places:
        if not directory.is_dir():
            continue
        root = cwd if not prefix and directory.is_relative_to(cwd) else None
        paths = sorted(directory.glob("*.md"))
        if len(paths) > MAX_COMMAND_FILES:
            log.warning("%s: %d command files; only the first %d are read", directory, len(paths), MAX_COMMAND_FILES)
        for path in paths[:MAX_COMMAND_FILES]:
            try:
                data = read_project_file(root, path) if root is not None else read_user_file(path)
            except MemoryRefused:
                continue
            description, template = _front_matter(data.decode("utf-8", errors="replace"))
            name = prefix + path.stem
            if root is not None and (name in users or ":" in name):  # (`a:b` is a plugin's name)
                name = PROJECT_PREFIX + name
            if name in BUILTINS or (name in commands and commands[name].template is None):
                continue
            if root is None and not prefix:
                users.add(name)
            commands[name] = Command(name, description or f"Custom command ({path.name})", "arguments", template)
    for skill in skills:
        if skill.user_invocable and skill.name not in commands:
            commands[skill.name] = Command(
                skill.name, f"Skill: {skill.description}", skill.argument_hint or "arguments", skill=skill.name
            )
    return commands


def _front_matter(body: str) -> tuple[str, str]:
    """Claude Code's optional `---\\ndescription: ...\\n---` header."""
    if body.startswith("---\n"):
        head, sep, rest = body[4:].partition("\n---\n")
        if sep:
            for line in head.splitlines():
                key, _, value = line.partition(":")
                if key.strip() == "description":
                    return value.strip(), rest.strip()
            return "", rest.strip()
    first = body.strip().splitlines()[0] if body.strip() else ""
    return first.lstrip("# ")[:80], body.strip()


def parse(text: str) -> tuple[str, str] | None:
    """`/name args` -> (name, args); None when the text is not a command."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, arguments = stripped[1:].partition(" ")
    if not name or "/" in name:
        return None
    return name, arguments.strip()


def skill_prompt(skill: Skill, arguments: str) -> str | None:
    """What `/skill args` sends: the skill's instructions, as the Skill tool would give them (None: it can't be
    read now). A forked skill runs through the tool, in a sub-agent of its own."""
    if skill.fork:
        args = f" with args {arguments!r}" if arguments else ""
        return f"Use the Skill tool to run the skill `{skill.name}`{args}."
    try:
        body = skill.expand(arguments)
    except SkillError:
        return None
    return (
        f"The user started the skill `{skill.name}` (its folder is {skill.directory}: read its other files "
        f"there, run its scripts with Bash). Follow it:\n\n{body}"
    )


async def expand(session: Session, blocks: list[Block], abort: Abort) -> list[Block] | StopReason:
    """What a prompt that starts with a slash command becomes: an MCP prompt's messages, a custom command's or a
    skill's text (a skill's `allowed-tools` held for the turn), or a built-in's whole answer (the turn's end)."""
    first = blocks[0].get("text", "") if blocks and blocks[0].get("type") == "text" else ""
    parsed = parse(str(first))
    if parsed is None:
        return blocks
    name, arguments = parsed
    mcp = session.toolset.mcp
    if mcp is not None and mcp.has_command(name):
        outcome = await mcp.run_command(name, arguments)
        if outcome.blocks is None:
            session.frontend.emit(TextDelta(outcome.reply or ""))
            return "end_turn"
        return [*outcome.blocks, *blocks[1:]]
    command = session.toolset.commands.get(name)
    if command is None:
        return blocks
    skill = session.toolset.skills.get(command.skill) if command.skill else None
    if skill is not None:
        text = skill_prompt(skill, arguments)
        if text is None:
            session.frontend.emit(TextDelta(f"The skill {skill.name} cannot be read now."))
            return "end_turn"
        if skill.allowed_tools and not skill.fork:
            session.allow_for_turn(skill.allowed_tools, skill.path, skill.source == "project")
        return [{"type": "text", "text": text}, *blocks[1:]]
    if command.template is None:
        return await run_builtin(session, name, arguments, abort)
    return [{"type": "text", "text": command.expand(arguments)}, *blocks[1:]]


async def run_builtin(session: Session, name: str, arguments: str, abort: Abort) -> StopReason:
    """A built-in command's turn: its answer is shown as the agent's text."""
    said = await _RUNS[name](session, arguments, abort)
    if said is None:
        return "cancelled"
    session.frontend.emit(TextDelta(said))
    return "end_turn"


async def _help(session: Session, arguments: str, abort: Abort) -> str | None:
    """Every command the session offers (built-ins, MCP prompts, custom commands, plugins', skills), as a list."""
    lines = [
        f"- `/{c.name}{' ' + c.hint if c.hint else ''}` — {c.description}" for c in session.toolset.commands.values()
    ]
    text = "Commands:\n" + "\n".join(lines)
    if session.config.offline:
        text += "\n\nOn the offline demo model, `help` (without the slash) says what it answers to."
    return text


async def _compact(session: Session, arguments: str, abort: Abort) -> str | None:
    before = len(session.conversation.messages)
    if before == 0:
        return "Nothing to compact yet."
    if not await session_wiring.compact(session, abort, instructions=arguments):
        return None
    size = len(session.conversation.messages[0]["content"][0]["text"])
    return f"Compacted {before} messages into a summary of {size:,} characters."


async def _clear(session: Session, arguments: str, abort: Abort) -> str | None:
    session.clear()
    return "Started a new, empty conversation."


async def _cost(session: Session, arguments: str, abort: Abort) -> str | None:
    conversation, u = session.conversation, session.conversation.usage_total
    offline = session.config.offline
    cost = "No cost (the offline demo model)" if offline else f"Session cost: ${conversation.cost_usd:.4f}"
    return (
        f"{cost} — input {u.input_tokens:,}, output {u.output_tokens:,}, "
        f"cache read {u.cache_read_tokens:,}, cache write {u.cache_write_tokens:,} tokens."
    )


async def _status(session: Session, arguments: str, abort: Abort) -> str | None:
    conversation = session.conversation
    model = "the offline demo model (scripted answers, no cost)" if session.config.offline else session.config.model
    return (  # (a list: the agent's text is shown as markdown, where lines alone would run together)
        f"- Model: {model}\n"
        f"- Mode: {session.mode}\n- Working directory: {session.cwd}\n"
        f"- Context: {conversation.context_tokens:,} of {session.config.context_window:,} tokens\n"
        f"- Messages: {len(conversation.messages)}"
    )


async def _plugins(session: Session, arguments: str, abort: Abort) -> str | None:
    return session.setup.plugins.describe()


async def _skills(session: Session, arguments: str, abort: Abort) -> str | None:
    catalog = session.setup.skills
    lines = [
        f"- {s.name} ({s.source}{', model only' if not s.user_invocable else ''}"
        f"{', user only' if not s.model_invocable else ''}): {s.description}"
        for s in catalog.skills.values()
    ]
    text = "Skills:\n" + "\n".join(lines) if lines else "Skills: none"
    if catalog.problems:
        text += "\n\nNot loaded:\n" + "\n".join(f"- {p}" for p in catalog.problems)
    return text


async def _mode(session: Session, arguments: str, abort: Abort) -> str | None:
    if not arguments:
        return f"Mode: {session.mode} (one of {', '.join(MODES)})"
    try:
        session.set_mode(arguments)
    except PermissionModeError as error:
        return f"{error} (modes: {', '.join(MODES)})"
    return f"Mode set to {session.mode}."


async def _rewind(session: Session, arguments: str, abort: Abort) -> str | None:
    from bridge import checkpoint_commands  # with the history and review modules: ~9 ms no start needs

    return await checkpoint_commands.rewind_command(session, arguments, abort)


async def _changes(session: Session, arguments: str, abort: Abort) -> str | None:
    from bridge import checkpoint_commands

    return await checkpoint_commands.changes_command(session, arguments, abort)


_RUNS: dict[str, Callable[[Session, str, Abort], Awaitable[str | None]]] = {
    "help": _help,
    "compact": _compact,
    "clear": _clear,
    "cost": _cost,
    "status": _status,
    "mode": _mode,
    "plugins": _plugins,
    "skills": _skills,
    "rewind": _rewind,
    "changes": _changes,
}
"""How each of `BUILTINS` runs: the text it answers, or None when it was cancelled."""
