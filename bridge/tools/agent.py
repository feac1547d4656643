"""Agent: start a sub-agent — the same query loop with its own history, prompt and tools — on one task, and
return its final message (Claude Code's `Agent` tool, formerly `Task`).

The tool only knows its input and the agent types it lists; running a sub-agent is the session's
(`ctx.services.agents`, implemented in `bridge/agents/runner.py`, above the loop). Calls are concurrency-safe:
several in one response run in parallel, and what each does inside goes through the usual permission and
concurrency rules. It answers the abort itself (`answers_abort`): a sub-agent stops at its own checkpoints and
leaves its own history valid, so it is never cancelled from outside.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field

from bridge.tools.base import InterruptBehavior, Tool, ToolContext, ToolInput, ToolKind, ToolResult, required

TaskStatus = Literal["running", "completed", "failed", "stopped"]


class AgentInput(ToolInput):
    description: str = Field(description="A short (3-5 word) description of the task")
    prompt: str = Field(description="The task for the agent, with all the context it needs, and what to report")
    subagent_type: str = Field(default="general-purpose", description="The type of agent (listed above)")
    model: Literal["sonnet", "opus", "haiku"] | None = Field(
        default=None, description="A model for this agent; default: the agent type's, else the session's"
    )
    run_in_background: bool | None = Field(
        default=None, description="Return at once with an agent id; you are told when it ends"
    )


class AgentTask(Protocol):
    """A sub-agent as TaskOutput and TaskStop see it."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> TaskStatus: ...

    def describe(self) -> str:
        """One line: which agent, its status, what it used."""
        ...

    def output(self) -> str:
        """Its final message once it ended; before that, its latest text."""
        ...

    async def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` s for it to end; True once it has."""
        ...


class AgentRunner(Protocol):
    """What the Agent, TaskOutput and TaskStop tools need of the session's sub-agents (`ctx.services.agents`)."""

    async def run_agent(self, data: AgentInput, ctx: ToolContext) -> ToolResult: ...

    def find(self, task_id: str) -> AgentTask | None: ...

    def known(self) -> list[str]: ...

    async def stop(self, task_id: str) -> AgentTask: ...

    def mark_read(self, task_id: str) -> None:
        """Its result has been read (TaskOutput): the end notification would only repeat it."""
        ...


class AgentTool(Tool[AgentInput]):
    name: ClassVar[str] = "Agent"
    input_model = AgentInput
    description: ClassVar[str] = (
        "Launch a sub-agent: a loop of its own, with its own context and tools, that works on one task "
        "autonomously and returns its final message as this call's result."
    )
    search_hint: ClassVar[str] = "sub-agent subagent delegate task parallel explore research"
    kind: ClassVar[ToolKind] = "think"
    interrupt_behavior: ClassVar[InterruptBehavior] = "cancel"
    answers_abort: ClassVar[bool] = True

    def __init__(self, types: list[tuple[str, str, str]]) -> None:
        """`types`: (name, when to use it, its tools) of each agent type, in the order to list them."""
        self.types = list(types)

    def schema(self) -> dict[str, Any]:
        listing = "\n".join(f"- {name}: {when} (Tools: {tools})" for name, when, tools in self.types)
        usage = (
            "Usage:\n"
            "- `prompt` is the whole task: the agent does not see this conversation. Say what to return, and "
            "whether it should change code or only research.\n"
            "- Several Agent calls in one message run in parallel: use that for independent work.\n"
            "- The result is not shown to the user: tell them what matters in it.\n"
            "- `run_in_background`: the call returns an agent id at once and a <task-notification> message "
            "tells you when the agent ends; TaskOutput reads its result, TaskStop stops it.\n"
            "- For a known file or a single search, use Read, Grep or Glob directly: it is faster."
        )
        text = f"{self.description}\n\nAgent types (subagent_type) and their tools:\n{listing}\n\n{usage}"
        return {**super().schema(), "description": text}

    def is_read_only(self, data: AgentInput) -> bool:
        return True  # the call itself changes nothing; each of the agent's own calls is decided on its own

    def is_concurrency_safe(self, data: AgentInput) -> bool:
        return True

    def rule_subject(self, data: AgentInput) -> str:
        return data.subagent_type  # `Agent(Explore)`

    async def validate_input(self, data: AgentInput, ctx: ToolContext) -> str | None:
        names = [name for name, _, _ in self.types]
        if data.subagent_type not in names:
            return f"Unknown subagent_type {data.subagent_type!r}. Available agent types: {', '.join(names)}."
        if not data.prompt.strip():
            return "prompt is empty: give the agent its task."
        return None

    def user_facing_title(self, data: AgentInput) -> str:
        title = data.description.strip() or data.subagent_type
        return f"{title} (background)" if data.run_in_background else title

    async def call(self, data: AgentInput, ctx: ToolContext) -> ToolResult:
        return await required(ctx.services.agents, "sub-agents").run_agent(data, ctx)
