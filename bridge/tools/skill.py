"""Skill: use one of the installed Agent Skills (bridge/skills.py) — the format's progressive disclosure.

The tool's description lists each skill's name and description (as many as fit the budget; the rest are found
with `query`), so the model knows what exists without reading any skill. Using one reads its `SKILL.md` body
now and returns it, with the skill's folder, so its references are read and its scripts run through the usual
tools (Read, Bash: sandboxed and asked like any other). A skill with `context: fork` runs in a sub-agent of its
own instead and its report is the result. Its `allowed-tools` hold for the rest of the turn (`AllowForTurn`;
a project's only once the folder is trusted).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from bridge.skills import Skill, SkillCatalog, SkillError
from bridge.tools.agent import AgentInput
from bridge.tools.base import (
    AllowForTurn,
    Effect,
    InterruptBehavior,
    Tool,
    ToolContext,
    ToolError,
    ToolInput,
    ToolKind,
    ToolResult,
    required,
)

_MODELS: dict[str, Literal["sonnet", "opus", "haiku"]] = {"sonnet": "sonnet", "opus": "opus", "haiku": "haiku"}


class SkillInput(ToolInput):
    skill: str | None = Field(default=None, description="The skill to use, by its name as listed")
    args: str | None = Field(default=None, description="Arguments for the skill, if it takes any")
    query: str | None = Field(default=None, description="Instead of `skill`: words to find skills not listed")


class SkillTool(Tool[SkillInput]):
    name: ClassVar[str] = "Skill"
    input_model = SkillInput
    description: ClassVar[str] = (
        "Use a skill: a folder of instructions, references and scripts for a kind of task. When a task matches a "
        "skill's description, use the skill first: it returns the skill's instructions and its folder; follow "
        "them, reading its other files with Read and running its scripts with Bash as they say."
    )
    search_hint: ClassVar[str] = "skill skills instructions workflow playbook"
    kind: ClassVar[ToolKind] = "read"
    interrupt_behavior: ClassVar[InterruptBehavior] = "cancel"

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog

    def schema(self) -> dict[str, Any]:
        lines, more = self.catalog.listing()
        listing = "\n".join(lines) or "(none)"
        extra = f'\n\n{more} more skills are installed: find them with {{"query": "words"}}.' if more else ""
        text = f"{self.description}\n\nAvailable skills:\n{listing}{extra}"
        return {**super().schema(), "description": text}

    def is_read_only(self, data: SkillInput) -> bool:
        return True  # reading a skill changes nothing; what its instructions lead to is decided call by call

    def rule_subject(self, data: SkillInput) -> str | None:
        return data.skill  # `Skill(pdf)`

    def is_concurrency_safe(self, data: SkillInput) -> bool:
        return data.query is not None or not self._fork(data)

    def _fork(self, data: SkillInput) -> bool:
        skill = self.catalog.get(data.skill or "")
        return skill is not None and skill.fork

    async def validate_input(self, data: SkillInput, ctx: ToolContext) -> str | None:
        if data.query is not None:
            return None
        if not data.skill:
            return "Give `skill` (a name from the list) or `query` (words to find one)."
        skill = self.catalog.get(data.skill)
        if skill is None:
            found = self.catalog.search(data.skill, limit=5)
            near = f" Did you mean: {', '.join(s.name for s in found)}?" if found else ""
            return f"No skill named {data.skill!r}.{near} Search with `query`."
        if not skill.model_invocable:
            return f"Skill {skill.name!r} is started only by the user (/{skill.name})."
        return None

    def starts(self, data: SkillInput) -> tuple[str, str] | None:
        """A forking skill runs as a sub-agent (general-purpose): `Agent` and `Agent(general-purpose)` rules are
        about it too."""
        skill = self.catalog.get(data.skill or "") if data.query is None else None
        return ("Agent", AgentInput.model_fields["subagent_type"].default) if skill is not None and skill.fork else None

    def user_facing_title(self, data: SkillInput) -> str:
        return f"Find skills: {data.query}" if data.query is not None else f"Skill: {data.skill}"

    async def call(self, data: SkillInput, ctx: ToolContext) -> ToolResult:
        if data.query is not None:
            found = self.catalog.search(data.query)
            if not found:
                return ToolResult(f"No skill matches {data.query!r}.")
            return ToolResult("\n".join(f"- {s.name}: {s.description}" for s in found))
        skill = self.catalog.get(data.skill or "")
        assert skill is not None  # validated
        return await use_skill(skill, data.args or "", ctx)


async def use_skill(skill: Skill, arguments: str, ctx: ToolContext) -> ToolResult:
    """The skill's instructions for the model (inline), or its forked sub-agent's report."""
    try:
        body = skill.expand(arguments)
    except SkillError as error:
        raise ToolError(f"Skill {skill.name!r} cannot be read now: {error}") from None
    where = (
        f"Skill `{skill.name}` — its folder is {skill.directory} (read its other files there with Read; run "
        "its scripts with Bash)."
    )
    if skill.fork:  # its own context: its calls are asked as a sub-agent's (allowed-tools are for the turn's own)
        agents = required(ctx.services.agents, "sub-agents")
        model = _MODELS.get(skill.model or "")
        task = AgentInput(description=f"skill {skill.name}", prompt=f"{where}\n\n{body}", model=model)
        return await agents.run_agent(task, ctx)
    effects: list[Effect] = (
        [AllowForTurn(skill.allowed_tools, skill.path, skill.source == "project")] if skill.allowed_tools else []
    )
    return ToolResult(f"{where}\n\n{body}", effects=effects)
