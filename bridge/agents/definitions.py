"""Agent types: what a sub-agent started by the `Agent` tool is (its prompt, its tools, its model).

Built in: `general-purpose` (every tool of the session but Agent) and `Explore` (read-only: Read, Grep, Glob, and
Bash for read-only commands). More come from the user's Markdown files (`bridge/agents/loader.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

AGENT_TOOL = "Agent"
DEFAULT_TYPE = "general-purpose"
MAX_DEPTH = 2  # the session's loop is depth 0; a sub-agent whose type lists `Agent` may start one more level
NEVER_INHERITED = frozenset({"ExitPlanMode"})  # the session's plan mode is the session's to leave

# Claude Code's model aliases (the `model` of an `Agent` call or of an agent file).
MODEL_ALIASES = {"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"}


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str  # when to use it: the Agent tool's description lists it
    prompt: str  # its system prompt (the environment section is added)
    tools: tuple[str, ...] | None = None  # None: every tool of the session (but Agent)
    read_only: bool = False  # every call must be read-only (checked before the permission engine is asked)
    model: str | None = None  # an alias, a model id, or None (`inherit`): the session's model
    source: Path | None = None  # the file it came from; None for a built-in one

    def tools_text(self) -> str:
        if self.tools is None:
            return "all tools"
        listed = ", ".join(self.tools) or "none"
        return f"{listed} (read-only calls only)" if self.read_only else listed

    def model_for(self, session_model: str, requested: str | None = None) -> str:
        """The model this agent runs on: the call's choice, else the file's, else the session's."""
        chosen = requested or self.model
        if chosen is None or chosen == "inherit":
            return session_model
        return MODEL_ALIASES.get(chosen, chosen)


_REPORT = (
    "Your final message is all the agent that started you will see of your work: make it a complete, concise "
    "report of what you found or did, with absolute file paths and the lines that matter. You cannot ask "
    "questions: no one will answer them."
)

GENERAL_PURPOSE = AgentDefinition(
    name=DEFAULT_TYPE,
    description=(
        "General-purpose agent for researching complex questions, searching for code, and carrying out "
        "multi-step tasks. Use it when a search may take several rounds, or for independent pieces of work."
    ),
    prompt=(
        "You are a sub-agent of a coding agent. It gave you one task: complete it with the tools you have, doing "
        "what was asked and nothing more. Read before you edit; use absolute paths.\n" + _REPORT
    ),
)

EXPLORE = AgentDefinition(
    name="Explore",
    description=(
        "Fast read-only agent for exploring a codebase: finding files by pattern, searching code for keywords, "
        "reading files to answer questions about them. It cannot change anything. Say how thorough to be."
    ),
    prompt=(
        "You are a read-only search agent working for a coding agent. You cannot create, edit or delete files, "
        "and Bash runs only read-only commands (ls, git log, cat...). Search efficiently: Glob for file names, "
        "Grep for contents, Read for files you know; run independent searches in parallel.\n" + _REPORT
    ),
    tools=("Read", "Grep", "Glob", "Bash"),
    read_only=True,
)

BUILTIN_AGENTS: tuple[AgentDefinition, ...] = (GENERAL_PURPOSE, EXPLORE)
READ_ONLY_BUILTINS = frozenset(agent.name for agent in BUILTIN_AGENTS if agent.read_only)
