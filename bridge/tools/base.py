"""The seed's Tool contract.

A tool is one module: its pydantic input model next to its `call`. The loop (and nothing else) drives
the contract in this order: parse input -> `validate_input` (the input alone: nothing it names is touched)
-> permissions (`permission_facts` feed the engine, which judges each path's real path) -> `validate_target`
(what the call names: the file, the editor's buffer) -> `call` -> result bounded by `max_result_chars`. So a
path the call may not use is never looked at: whether it exists cannot change the answer. When reading the
named paths needs no permission (inside the workspace, no rule against it), `validate_target` runs before the
question instead, so a call bound to fail is not asked about and the question can show the real diff.
Observers (editor `rawInput`, hooks) see `backfill_observable_input(input)`; the model always gets back
exactly what it sent.

A tool states its own permission facts (`permission_facts`: the paths it reads and writes, the host it fetches
from, the command it runs, what `Tool(name)` rules name of it, the `rule_form` its rules take, whether it leaves
plan mode); the engine judges by them and names no tool (bridge/permissions/facts.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from bridge.abort import Abort
from bridge.display import Display, PlanEntry
from bridge.display import Location as Location  # re-exported: the tools name their locations from here
from bridge.permissions.facts import NAME_RULES, Access, CallFacts, RuleForm, ShellCall

if TYPE_CHECKING:  # the services' own modules import this one
    from bridge.execution.background import BackgroundShells
    from bridge.execution.sandbox import Sandbox
    from bridge.execution.supervisor import ProcessSupervisor
    from bridge.tools.agent import AgentRunner

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
InterruptBehavior = Literal["block", "cancel"]


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown fields are an error the model can act on."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


In = TypeVar("In", bound=ToolInput)


class ToolError(Exception):
    """Raised by a tool for any failure the model should read and act on (becomes `is_error`)."""


@dataclass(frozen=True)
class PlanChanged:
    """Effect: the agent's plan (its todo list) is now `entries`, the whole list."""

    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True)
class LeavePlanMode:
    """Effect: the user approved the plan; the session leaves plan mode for the mode before it."""


@dataclass(frozen=True)
class AllowForTurn:
    """Effect: these allow rules hold until the turn ends (a skill's `allowed-tools`). `source` is the file that
    says so; `project`: it is the folder's own, so the rules wait for the user's trust. Deny and ask rules win."""

    rules: tuple[str, ...]
    source: Path
    project: bool


Effect = PlanChanged | LeavePlanMode | AllowForTurn
"""What a call changes beyond its result, as data: the loop hands each to the session, which applies it."""


@dataclass
class ToolResult:
    """What a tool returns. `content` goes to the model (a string or content blocks, e.g. an image);
    `display` is what a person is shown (e.g. a diff); `raw_output` is structured
    data for observers; `effects` are applied by the session once the call is done."""

    content: str | list[dict[str, Any]]
    is_error: bool = False
    display: list[Display] = field(default_factory=list)
    raw_output: dict[str, Any] | None = None
    effects: list[Effect] = field(default_factory=list)


@dataclass
class FileSnapshot:
    """What the session knows of a file it read: to refuse edits of files not read, or changed since."""

    mtime_ns: int
    size: int
    digest: str | None = None
    """The text's hash when it was read from the editor (which gives no mtime): then "changed since read"
    compares texts, not stat data."""


class DocumentSource:
    """The editor's view of files: its unsaved text (LSP document sync), and for an editor that offers it
    (ACP `fs/read_text_file` / `fs/write_text_file`) reading and writing files through it. The default has
    nothing: every file tool uses the disk. Permission and containment checks come first, always."""

    asks_editor: ClassVar[bool] = False
    """True when `read_text` / `write_text` ask the editor to read or write the file by its name (ACP `fs/*`):
    the tools then check before and after that the name still leads where the permission step judged."""

    def get_text(self, path: Path) -> str | None:
        """The editor's text of `path` if it has it at hand without asking (synced documents)."""
        return None

    async def read_text(self, path: Path) -> str | None:
        """The editor's text of `path`, unsaved changes included; None: not open / not available (the tool
        reads the disk)."""
        return self.get_text(path)

    async def write_text(self, path: Path, text: str) -> bool:
        """Make `text` the content of `path` through the editor (its buffer: undo, no "changed on disk");
        False: not handled (the tool writes the disk). Raise ToolError when the editor refused or failed:
        the model is told why, and nothing is written to disk."""
        return False


ReadGuard = Callable[[Path, Path | None], str | None]
"""`guard(path, scope)`: why a file tool may not show `path` (its name or content, e.g. a Grep or Glob result),
or None when it may: a Read deny/ask rule matches it, or its real path is outside the workspace and outside
`scope` (the directory the permission step allowed for this call)."""

ProgressSink = Callable[[str], None]
"""Receives a tool's output so far (e.g. Bash's streamed output); the loop forwards it to the editor."""


def _no_env() -> Mapping[str, str]:
    return {}


def _no_names() -> Sequence[str]:
    return ()


@dataclass
class Services:
    """The session's services a tool may use, built in one place (`bridge.agent.Agent._open`). A context
    without one (a unit test of a tool that needs none) leaves it None; a tool that needs it asks
    `required(...)`, which fails the call with a message instead of making one up."""

    processes: ProcessSupervisor | None = None  # every command the agent runs (process-wide)
    background: BackgroundShells | None = None  # this session's background shells
    settings_env: Callable[[], Mapping[str, str]] = _no_env  # the settings files' `env` in effect, at each call
    pass_env: Callable[[], Sequence[str]] = _no_names  # secret-looking variables of ours commands may see
    agents: AgentRunner | None = None  # sub-agents at this level (filled by the session: they need the session)
    sandbox: Sandbox | None = None  # the OS sandbox Bash runs its commands in (None: unsandboxed)
    owner: Abort | None = None  # a sub-agent's signal: what it starts in the background stops with it


S = TypeVar("S")


def required(service: S | None, what: str) -> S:
    """`service`, or a `ToolError` naming `what` when this context has none."""
    if service is None:
        raise ToolError(f"This tool needs {what}, which this session does not provide.")
    return service


@dataclass(frozen=True)
class CallTraits:
    """What the executor asks of a call before it runs: `is_read_only` (for the permission decision) and
    `is_concurrency_safe` (may it run beside other calls)."""

    read_only: bool = False
    concurrency_safe: bool = False


@dataclass
class ToolContext:
    """Everything a tool may use. Built per call by the loop; tools never reach anything above."""

    cwd: Path
    abort: Abort
    data_dir: Path
    tool_use_id: str = ""
    additional_dirs: list[Path] = field(default_factory=list)
    read_files: dict[Path, FileSnapshot] = field(default_factory=dict)
    documents: DocumentSource = field(default_factory=DocumentSource)
    progress: ProgressSink = lambda _text: None
    read_guard: ReadGuard | None = None
    """None: containment in cwd + additional_dirs only (no rules); the session sets the engine's."""
    services: Services = field(default_factory=Services)
    granted: dict[Path, Path] | None = None
    """The real path the permission step judged for each path the call named (`permission_paths`, keyed as
    named). A file tool opens exactly that path (`bridge.safefs`: no symlink followed), so a name flipped to
    a link after the check cannot send it elsewhere. None: no permission step judged this call (a tool used
    on its own); the tool resolves the path itself when it opens it."""
    grants: tuple[Path, ...] = ()
    """Protected paths the permission step allowed this call to write (`Decision.grants`): the OS sandbox opens
    exactly these for a Bash command; everything else protected stays read-only."""


class Tool(Generic[In]):
    name: ClassVar[str]
    input_model: type[In]
    description: ClassVar[str]
    search_hint: ClassVar[str] = ""
    kind: ClassVar[ToolKind] = "other"
    interrupt_behavior: ClassVar[InterruptBehavior] = "block"
    # True: the call answers the abort itself (a sub-agent repairs its own history, then returns): the loop does
    # not cancel it, and a result returned after the abort counts as interrupted, its text as the output so far.
    answers_abort: ClassVar[bool] = False
    max_result_chars: ClassVar[float] = 30_000
    rule_form: ClassVar[RuleForm] = NAME_RULES
    """What the specifier of a rule naming this tool is (a command pattern, `domain:`, a path; bridge/permissions/
    facts.py). The session's engine is composed with every tool's form (bridge/tools/registry.py)."""
    leaves_plan_mode: ClassVar[bool] = False
    """The call asks to leave plan mode: in plan mode it always asks (the user approves the plan)."""

    def is_read_only(self, data: In) -> bool:
        return False

    def is_concurrency_safe(self, data: In) -> bool:
        return self.is_read_only(data)

    def is_destructive(self, data: In) -> bool:
        return False

    def traits(self, data: In) -> CallTraits:
        """`is_read_only` and `is_concurrency_safe` at once; a question that fails is answered no."""
        try:
            return CallTraits(self.is_read_only(data), self.is_concurrency_safe(data))
        except Exception:
            return CallTraits()

    async def traits_async(self, data: In) -> CallTraits:
        """`traits`, as the executor asks them on the event loop: a tool whose answers take real work (Bash
        reads its command) does it in a worker thread."""
        return self.traits(data)

    async def validate_input(self, data: In, ctx: ToolContext) -> str | None:
        """A message for the model when the input cannot work. Checked before any permission, so it must not
        touch what the input names (the existence of a file the call may not see would show in the answer)."""
        return None

    async def validate_target(self, data: In, ctx: ToolContext) -> str | None:
        """A message for the model when what the call names makes it fail (a file not read first, an
        old_string not in the file). Runs once the permission step allowed the call — or before its question
        when the paths may be read without asking (see the module docstring). May keep a plan for `preview`."""
        return None

    def permission_paths(self, data: In, ctx: ToolContext) -> list[tuple[Path, Access]]:
        """The paths this call reads or writes, as it names them, for the permission engine (which resolves them)."""
        return []

    def permission_host(self, data: In) -> str | None:
        """The host this call fetches from, for a tool whose rules take `domain:` (None: it can't be known)."""
        return None

    def permission_command(self, data: In) -> ShellCall | None:
        """The shell command this call runs, read (bridge/permissions/shell.py), for a tool that runs commands."""
        return None

    def rule_subject(self, data: In) -> str | None:
        """What a `Tool(name)` rule of this tool names in this call (`Agent(Explore)`: the agent type)."""
        return None

    def permission_facts(self, data: In, ctx: ToolContext) -> CallFacts:
        """Everything the permission engine judges this call by, as this tool states it."""
        try:
            read_only = self.is_read_only(data)
        except Exception:  # a question that fails is answered no, as in `traits`
            read_only = False
        return CallFacts(
            self.name,
            self.rule_form,
            read_only=read_only,
            paths=tuple(self.permission_paths(data, ctx)),
            host=self.permission_host(data),
            shell=self.permission_command(data),
            subject=self.rule_subject(data),
            leaves_plan=self.leaves_plan_mode,
            starts=self.starts(data),
        )

    def starts(self, data: In) -> tuple[str, str] | None:
        """Another tool this call runs as, and its subject, whose rules (about every call of it, or of that subject)
        apply to this one too."""
        return None

    def preview(self, data: In, ctx: ToolContext) -> list[Display]:
        """What the permission dialog shows before the call runs (e.g. an edit's diff). Never writes, and
        reads nothing the call names unless `validate_target` ran (its plan): else the input alone."""
        return []

    def stored_display(self, data: In, readable: Callable[[Path], bool]) -> list[Display]:
        """What a finished call showed, as far as its input alone tells (a stored session's replay). A file it
        names may be read only when `readable(path)`: the stored input is anyone's words (a forged transcript),
        so the session's workspace and added folders bound what a replay reads."""
        return []

    def replayed_effects(self, data: In) -> list[Effect]:
        """The effects a finished call had on its session, as far as its input alone tells (a replay's plan)."""
        return []

    def backfill_observable_input(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Derived fields for observers' copy only (e.g. an absolute path). Never sent to the model."""
        return raw

    def locations(self, data: In) -> list[Location]:
        return []

    def user_facing_title(self, data: In) -> str:
        return self.name

    def edited_input(self, data: In, text: str) -> tuple[str, dict[str, Any]] | None:
        """The call that writes `text`, the user's edit of this call's proposed file content (the permission
        dialog's diff, edited before accepting): (tool name, raw input). None: this tool's change is not editable."""
        return None

    async def call(self, data: In, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def schema(self) -> dict[str, Any]:
        """The tool definition sent to the model."""
        return {"name": self.name, "description": self.description, "input_schema": input_schema(self.input_model)}


_INPUT_SCHEMAS: dict[type[BaseModel], str] = {}
# The core tools' input schemas as `computed_input_schema` gives them, by model (`module.qualname`): the first
# request of a process would otherwise wait ~5 ms for pydantic to work them out. Written by
# scripts/gen_tool_schemas.py; tests/test_first_request.py holds it equal to the models.
SHIPPED_INPUTS = Path(__file__).resolve().parent.parent / "tool_inputs.json"
_shipped: dict[str, Any] | None = None


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s lean JSON schema. Every request sends every tool's: pydantic works each out once per process (it
    took about a tenth of a tool round trip), kept as JSON text so each caller gets a copy of its own."""
    text = _INPUT_SCHEMAS.get(model)
    if text is None:
        shipped = _shipped_inputs().get(f"{model.__module__}.{model.__qualname__}")
        text = _INPUT_SCHEMAS[model] = json.dumps(
            shipped if shipped is not None else computed_input_schema(model), ensure_ascii=False
        )
    schema: dict[str, Any] = json.loads(text)
    return schema


def computed_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """What pydantic makes of `model`, leaned."""
    schema: dict[str, Any] = lean_schema(model.model_json_schema())
    return schema


def _shipped_inputs() -> dict[str, Any]:
    global _shipped
    if _shipped is None:
        try:
            loaded = json.loads(SHIPPED_INPUTS.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        _shipped = loaded if isinstance(loaded, dict) else {}
    return _shipped


def lean_schema(schema: Any, *, _in_properties: bool = False) -> Any:
    """A JSON schema without pydantic's noise, to keep the tool set small in every request: `title`
    keywords are dropped, and an optional field (`X | None = None`) is shown as plain `X` (absent is how
    a model leaves it out). Property names are kept even when one is called `title`."""
    if isinstance(schema, list):
        return [lean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if _in_properties:
        return {name: lean_schema(sub) for name, sub in schema.items()}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        out[key] = lean_schema(value, _in_properties=key in ("properties", "$defs", "definitions"))
    variants = out.get("anyOf")
    if isinstance(variants, list) and "default" in out and out["default"] is None:
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(variants) and isinstance(kept[0], dict):
            del out["anyOf"], out["default"]
            out = {**kept[0], **out}
    return out


AnyTool = Tool[Any]
Unbounded = math.inf


@dataclass(frozen=True)
class BoundCall:
    """A tool bound to one call, as the permission engine asks about it (`bridge.permissions.facts.PermissionCall`).
    `read_only` is what the executor found before asking."""

    tool: AnyTool
    data: Any
    raw_input: dict[str, Any]
    ctx: ToolContext
    read_only: bool

    @property
    def tool_name(self) -> str:
        return self.tool.name

    def facts(self, rewritten: dict[str, Any] | None = None) -> CallFacts:
        """The tool's facts of the call's input, or of a hook's rewrite of it. A rewrite the tool can't take states
        only the tool's form (the executor refuses it once the decision is made)."""
        if rewritten is None:
            return self.tool.permission_facts(self.data, self.ctx)
        try:
            data = self.tool.input_model.model_validate(rewritten)
        except ValidationError:
            return CallFacts(self.tool.name, self.tool.rule_form)
        return self.tool.permission_facts(data, self.ctx)
