"""Tool calls as the permission engine asks about them, stated by the real tools: the executor's way (a tool bound
to its call states its facts: bridge/tools/base.py's `BoundCall`), so a test of the engine runs the same facts a
session does. A test may state a call's paths or read-only-ness itself (`paths=`, `read_only=`), as a call with
only part of its input; a raw input a tool's model refuses is taken as given (`model_construct`), so a test can
name just the fields a permission fact is read from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bridge.abort import Abort
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.facts import Access, CallFacts
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.hooks import HookOutcome
from bridge.permissions.types import Decision
from bridge.tools.agent import AgentTool
from bridge.tools.base import AnyTool, BoundCall, ToolContext
from bridge.tools.registry import core_tools, rule_grammar

GRAMMAR: RuleGrammar = rule_grammar()
TOOLS: dict[str, AnyTool] = {tool.name: tool for tool in [*core_tools(), AgentTool([])]}


@dataclasses.dataclass(frozen=True)
class StatedCall:
    """A call whose facts the test states; a hook's rewrite of it is stated by its tool, as in a session."""

    stated: CallFacts
    raw_input: dict[str, Any]
    bound: BoundCall | None

    @property
    def tool_name(self) -> str:
        return self.stated.tool

    @property
    def read_only(self) -> bool:
        return self.stated.read_only

    def facts(self, rewritten: dict[str, Any] | None = None) -> CallFacts:
        if rewritten is None or self.bound is None:
            return self.stated
        return self.bound.facts(rewritten)


def call(
    cwd: Path,
    tool: str,
    raw: dict[str, Any] | None = None,
    *,
    paths: Sequence[tuple[Path, Access]] | None = None,
    read_only: bool | None = None,
) -> StatedCall:
    """A call of `tool` with `raw` as its input, its facts stated by the tool (a name no tool has: a tool that
    states nothing, like an MCP server's); `paths` and `read_only` replace what the tool states."""
    raw = dict(raw or {})
    found = TOOLS.get(tool)
    bound = None
    if found is None:
        facts = CallFacts(tool)
    else:
        try:
            data = found.input_model.model_validate(raw)
        except ValueError:
            data = found.input_model.model_construct(**raw)
        ctx = ToolContext(cwd=cwd, abort=Abort(), data_dir=cwd)
        bound = BoundCall(found, data, raw, ctx, found.traits(data).read_only)
        facts = (
            found.permission_facts(data, ctx)
            if paths is None
            else CallFacts(
                tool, found.rule_form, read_only=found.traits(data).read_only, leaves_plan=found.leaves_plan_mode
            )
        )
    if paths is not None:
        facts = dataclasses.replace(facts, paths=tuple(paths))
    if read_only is not None:
        facts = dataclasses.replace(facts, read_only=read_only)
    return StatedCall(facts, raw, bound)


def decide(
    engine: PermissionEngine,
    tool: str,
    raw: dict[str, Any] | None = None,
    *,
    paths: Sequence[tuple[Path, Access]] | None = None,
    read_only: bool | None = None,
    hook: HookOutcome | None = None,
) -> Decision:
    """The engine's decision on a call of `tool` (see `call`)."""
    return engine.decide(call(engine.cwd, tool, raw, paths=paths, read_only=read_only), hook=hook)


async def decide_async(
    engine: PermissionEngine, tool: str, raw: dict[str, Any] | None = None, *, hook: HookOutcome | None = None
) -> Decision:
    return await engine.decide_async(call(engine.cwd, tool, raw), hook=hook)
