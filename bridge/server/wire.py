"""ACP wire shapes <-> domain objects. Nothing here does work; it only translates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.loop.events import (
    LoopEvent,
    ModeChanged,
    Notice,
    PlanUpdate,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallInProgress,
    ToolCallProgress,
    ToolCallStarted,
    UsageReport,
)
from bridge.mcp.host import Question, Reply
from bridge.messages import MARKER, MARKER_TOOL_USE, Block
from bridge.permissions.types import PermissionAnswer, PermissionRequest, RuleSuggestion


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list, alias="mcpServers")


class PromptParams(WireModel):
    session_id: str = Field(alias="sessionId")
    prompt: list[dict[str, Any]]


class SessionParams(WireModel):
    session_id: str = Field(alias="sessionId")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class SetModeParams(WireModel):
    session_id: str = Field(alias="sessionId")
    mode_id: str = Field(alias="modeId")


def parse(model: type[WireModel], params: Any) -> Any:
    """Validated params, or ValueError with a message that names the field."""
    try:
        return model.model_validate(params if params is not None else {})
    except ValidationError as error:
        problems = []
        for item in error.errors():
            where = ".".join(str(p) for p in item["loc"]) or "params"
            problems.append(f"{where}: {item['msg']}")
        raise ValueError("Invalid params: " + "; ".join(problems)) from None


def prompt_blocks(prompt: list[dict[str, Any]]) -> list[Block]:
    """ACP content blocks -> Messages API blocks."""
    blocks: list[Block] = []
    for index, item in enumerate(prompt):
        kind = item.get("type")
        if kind == "text":
            if str(item.get("text", "")).strip():
                blocks.append({"type": "text", "text": str(item["text"])})
        elif kind == "resource_link":
            name = item.get("name") or item.get("uri")
            blocks.append({"type": "text", "text": f"[@{name}]({item.get('uri')})"})
        elif kind == "resource":
            resource = item.get("resource") or {}
            uri = resource.get("uri", "")
            if "text" in resource:
                blocks.append({"type": "text", "text": f'<context ref="{uri}">\n{resource["text"]}\n</context>'})
            else:
                blocks.append({"type": "text", "text": f"[@{uri}]({uri})"})
        elif kind == "image":
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": item.get("mimeType"), "data": item.get("data")},
                }
            )
        else:
            raise ValueError(f"Invalid params: prompt.{index}.type: unsupported content block {kind!r}")
    if not blocks:
        raise ValueError("Invalid params: prompt: the prompt has no content")
    return blocks


def _tool_call(event: ToolCallStarted) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": event.tool_call_id,
        "title": event.title,
        "kind": event.tool_kind,
        "status": "pending",
        "rawInput": event.raw_input,
        "locations": event.locations,
    }


def update_for(event: LoopEvent) -> dict[str, Any] | None:
    """The `session/update` payload for a loop event (text deltas are paced elsewhere)."""
    if isinstance(event, ToolCallStarted):
        return _tool_call(event)
    if isinstance(event, ToolCallInProgress):
        return {"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id, "status": "in_progress"}
    if isinstance(event, ToolCallProgress):
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.tool_call_id,
            "content": [_text_content(event.output)],
        }
    if isinstance(event, ToolCallFinished):
        content = [_text_content(event.text)] if event.text else []
        content += [_display(item) for item in event.display]
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.tool_call_id,
            "status": event.status,
            "content": content,
        }
        if event.raw_output is not None:
            update["rawOutput"] = event.raw_output
        return update
    if isinstance(event, UsageReport):
        return {
            "sessionUpdate": "usage_update",
            "used": event.context_used,
            "size": event.context_size,
            "cost": {"amount": round(event.session_cost_usd, 6), "currency": "USD"},
            "_meta": {
                "inputTokens": event.input_tokens,
                "outputTokens": event.output_tokens,
                "cacheReadTokens": event.cache_read_tokens,
                "cacheWriteTokens": event.cache_write_tokens,
                "responseCost": round(event.cost_usd, 6),
            },
        }
    if isinstance(event, ModeChanged):
        return {"sessionUpdate": "current_mode_update", "currentModeId": event.mode}
    if isinstance(event, PlanUpdate):
        return {"sessionUpdate": "plan", "entries": event.entries}
    if isinstance(event, (TextDelta, ThinkingDelta, Notice)):
        return None
    return None


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def _display(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") in ("diff", "content", "terminal"):
        return item
    return {"type": "content", "content": item}


OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


def permission_params(session_id: str, request: PermissionRequest) -> dict[str, Any]:
    options: list[dict[str, Any]] = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    for suggestion in request.suggestions:
        if suggestion.behavior == "allow":
            options.append(_always_option("allow_always", f"Always allow {suggestion.label}", suggestion))
    options.append({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
    for suggestion in request.suggestions:
        if suggestion.behavior == "deny":
            options.append(_always_option("reject_always", f"Always reject {suggestion.label}", suggestion))
    content = [_display(item) for item in request.display]
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": request.tool_call_id,
            "title": request.title,
            "kind": request.kind,
            "status": "pending",
            "rawInput": request.raw_input,
            "content": content,
            "locations": request.locations,
        },
        "options": options,
        "_meta": {"reason": request.reason},
    }


def _always_option(kind: OptionKind, name: str, suggestion: RuleSuggestion) -> dict[str, Any]:
    where = Path(suggestion.destination).name
    return {
        "optionId": kind,
        "name": f"{name} (saved to {where})",
        "kind": kind,
        "_meta": {"rule": suggestion.rule, "rules": list(suggestion.rules), "destination": suggestion.destination},
    }


def permission_answer(result: Any, request: PermissionRequest) -> PermissionAnswer:
    """The editor's answer; anything unrecognized denies (never allows by accident)."""
    if not isinstance(result, dict):
        return PermissionAnswer("cancelled")
    outcome = result.get("outcome") or {}
    meta = result.get("_meta") or {}
    feedback = meta.get("feedback") if isinstance(meta, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return PermissionAnswer("cancelled", feedback=feedback)
    option = outcome.get("optionId")
    if option == "allow_once":
        return PermissionAnswer("allow_once")
    if option in ("allow_always", "reject_always"):
        wanted = "allow" if option == "allow_always" else "deny"
        chosen = next((s for s in request.suggestions if s.behavior == wanted), None)
        return PermissionAnswer(option, feedback=feedback, suggestion=chosen)
    if option == "reject_once":
        return PermissionAnswer("reject_once", feedback=feedback)
    return PermissionAnswer("cancelled", feedback=feedback)


def question_params(session_id: str, question: Question) -> dict[str, Any]:
    """An MCP question (approve a project's server, a server's form) as `session/request_permission`: the
    question's own choices as options, its data (e.g. `elicitation` with the schema) in `_meta` and `rawInput`."""
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": question.id,
            "title": question.title,
            "kind": "other",
            "status": "pending",
            "rawInput": question.meta,
            "content": [{"type": "content", "content": {"type": "text", "text": question.text}}],
            "locations": [],
        },
        "options": [{"optionId": c.id, "name": c.name, "kind": c.kind} for c in question.choices],
        "_meta": question.meta,
    }


def question_reply(result: Any, question: Question) -> Reply:
    """The editor's answer: one of the question's options (and the answer's `_meta`, e.g. a form's `content`)."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    option = outcome.get("optionId") if isinstance(outcome, dict) and outcome.get("outcome") == "selected" else None
    if option not in {c.id for c in question.choices}:
        return Reply(None)
    meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
    return Reply(str(option), dict(meta))


class LoadSessionParams(WireModel):
    session_id: str = Field(alias="sessionId")
    cwd: str | None = None
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list, alias="mcpServers")


class ListSessionsParams(WireModel):
    cwd: str | None = None


def replay_updates(
    messages: list[dict[str, Any]], describe: Callable[[Block], ToolCallStarted] | None = None
) -> list[dict[str, Any]]:
    """A stored history as the `session/update`s an editor would have seen.

    `describe` gives a tool_use its live title, kind and locations (the session's tools); without it a call
    shows under the tool's name. The interruption markers are for the model, not the reader: they are skipped
    (the interrupted tool call already says `Interrupted by user`).
    """
    updates: list[dict[str, Any]] = []
    for message in messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind == "text":
                if message["role"] == "user" and block["text"] in (MARKER, MARKER_TOOL_USE):
                    continue
                chunk = "user_message_chunk" if message["role"] == "user" else "agent_message_chunk"
                updates.append({"sessionUpdate": chunk, "content": {"type": "text", "text": block["text"]}})
            elif kind == "thinking":
                updates.append(
                    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": block["thinking"]}}
                )
            elif kind == "tool_use":
                name, raw = block["name"], block.get("input", {})
                started = describe(block) if describe else ToolCallStarted(block["id"], name, name, "other", raw)
                updates.append(_tool_call(started))
            elif kind == "tool_result":
                content = block.get("content")
                text = content if isinstance(content, str) else " ".join(
                    str(b.get("text", "")) for b in content or [] if isinstance(b, dict)
                )
                updates.append(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": block["tool_use_id"],
                        "status": "failed" if block.get("is_error") else "completed",
                        "content": [_text_content(text)] if text else [],
                    }
                )
    return updates
