"""ACP wire shapes <-> domain objects: the only place ACP shapes are built. Nothing here does work; it only
translates (which event becomes which update is decided once, in `bridge/server/updates.py`)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.commands import Command
from bridge.display import Diff, Display, Location, PlanEntry, SubAgentLabel, TextContent
from bridge.loop.events import (
    AgentProgress,
    ModeChanged,
    PlanUpdate,
    RetryWait,
    ToolCallFinished,
    ToolCallInProgress,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
    UsageReport,
)
from bridge.mcp.host import Question, Reply
from bridge.messages import Block
from bridge.permissions.modes import MODE_DESCRIPTIONS, MODE_NAMES, MODES
from bridge.permissions.trust import TRUST_CHOICES, TrustAnswer, TrustQuestion
from bridge.permissions.types import PermissionAnswer, PermissionRequest, RuleSuggestion
from bridge.transcript import StoredSession
from bridge.visible import capped, code_span, fits, has_hidden, one_line, visible, visible_spans

ChunkKind = Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list, alias="mcpServers")


class PromptParams(WireModel):
    session_id: str = Field(alias="sessionId")
    prompt: list[dict[str, Any]]
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")  # `{turnId: true}`: answer with the turn's id


class SessionParams(WireModel):
    session_id: str = Field(alias="sessionId")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ToolCallParams(WireModel):
    session_id: str = Field(alias="sessionId")
    tool_call_id: str = Field(alias="toolCallId")


class SetModeParams(WireModel):
    session_id: str = Field(alias="sessionId")
    mode_id: str = Field(alias="modeId")


class SetModelParams(WireModel):
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId", min_length=1)


class AuthenticateParams(WireModel):
    method_id: str = Field(alias="methodId")


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


IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")  # what the Messages API takes


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
            media, data = item.get("mimeType"), item.get("data")
            if media not in IMAGE_TYPES:
                raise ValueError(f"Invalid params: prompt.{index}.mimeType: an image must be one of "
                                 f"{', '.join(IMAGE_TYPES)} (the model takes no other), got {media!r}")
            if not isinstance(data, str) or not data:
                raise ValueError(f"Invalid params: prompt.{index}.data: an image needs its base64 data")
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
        else:
            raise ValueError(f"Invalid params: prompt.{index}.type: unsupported content block {kind!r}")
    if not blocks:
        raise ValueError("Invalid params: prompt: the prompt has no content")
    return blocks


def location(item: Location) -> dict[str, Any]:
    return {"path": item.path} | ({"line": item.line} if item.line is not None else {})


def tool_content(item: Display) -> dict[str, Any]:
    """ACP tool-call content for what a tool shows."""
    match item:
        case TextContent(text=text):
            return _text_content(text)
        case Diff():
            diff: dict[str, Any] = {"type": "diff", "path": item.path, "oldText": item.old_text,
                                    "newText": item.new_text}
            if item.first_line is not None:
                diff["_meta"] = {"partial": True, "line": item.first_line}
            return diff
        case _:
            assert_never(item)


def plan_entry(entry: PlanEntry) -> dict[str, Any]:
    return {"content": entry.content, "status": entry.status, "priority": "medium"}


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def chunk(kind: ChunkKind, text: str, parent: str | None = None) -> dict[str, Any]:
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    return nested(update, parent) if parent is not None else update


def nested(update: dict[str, Any], parent: str | None) -> dict[str, Any]:
    """A sub-agent's update: `_meta.parentToolCallId` names the `Agent` call that started the sub-agent (our
    extension of ACP: a client that does not know it shows the update as the session's own)."""
    if parent is None:
        return update
    return {**update, "_meta": {**(update.get("_meta") or {}), "parentToolCallId": parent}}


def agent_label(label: SubAgentLabel) -> dict[str, Any]:
    return {"type": label.agent_type, "description": label.description, "parentToolCallId": label.parent_tool_call_id}


def agent_progress(event: AgentProgress) -> dict[str, Any]:
    """The `Agent` call's card while its sub-agent works: a line for people, the figures in `_meta.agent`."""
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": event.tool_call_id,
        "content": [_text_content(event.summary())],
        "_meta": {"agent": {
            "type": event.agent.agent_type, "description": event.agent.description, "status": event.status,
            "background": event.background, "startedAt": round(event.started_at * 1000),
            "elapsedMs": round(event.elapsed_s * 1000), "toolCalls": event.tool_calls, "tokens": event.tokens,
            "lastTool": event.last_tool,
        }},
    }


def tool_call(event: ToolCallStarted) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": event.tool_call_id,
        "title": event.title,
        "kind": event.tool_kind,
        "status": "pending",
        "rawInput": event.raw_input,
        "locations": [location(item) for item in event.locations],
    }


def tool_in_progress(event: ToolCallInProgress) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id, "status": "in_progress"}


def tool_progress(event: ToolCallProgress) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id,
            "content": [_text_content(event.output)]}


NOTICE_LABELS = {"info": "", "warning": "**Warning:** ", "error": "**Error:** "}


def notice_update(message: str, level: Literal["info", "warning", "error"]) -> dict[str, Any]:
    """A notice for an ACP client: a paragraph of its own in the agent's message (ACP has no notification an
    editor shows; Zed renders `agent_message_chunk`), marked `_meta.notice` so a client may render it apart."""
    text = f"\n\n> {NOTICE_LABELS[level]}{message}\n\n"
    content = {"type": "text", "text": text}
    return {"sessionUpdate": "agent_message_chunk", "content": content, "_meta": {"notice": level}}


def retry(event: RetryWait) -> dict[str, Any]:
    """A retry the turn waits for: a notice (what an ACP client shows) whose `_meta.retry` lets a client that
    knows it show a countdown in its status instead (the VS Code panel does)."""
    update = notice_update(event.summary(), "info")
    update["_meta"]["retry"] = {"reason": event.reason, "attempt": event.attempt, "attempts": event.attempts,
                                "delayMs": round(event.delay * 1000)}
    return update


def tool_finished(event: ToolCallFinished) -> dict[str, Any]:
    content = [_text_content(event.text)] if event.text else []
    content += [tool_content(item) for item in event.display]
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": event.tool_call_id,
        "status": event.status,
        "content": content,
    }
    if event.raw_output is not None:
        update["rawOutput"] = event.raw_output
    return update


def usage(event: UsageReport, *, offline: bool = False) -> dict[str, Any]:
    """`offline`: the offline demo model answered: no `cost` (it costs nothing), `_meta.offline`."""
    update: dict[str, Any] = {
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
    if offline:
        del update["cost"], update["_meta"]["responseCost"]
        update["_meta"]["offline"] = True
    return update


def mode(event: ModeChanged) -> dict[str, Any]:
    return {"sessionUpdate": "current_mode_update", "currentModeId": event.mode}


def plan(event: PlanUpdate) -> dict[str, Any]:
    return {"sessionUpdate": "plan", "entries": [plan_entry(entry) for entry in event.entries]}


def command(item: Command) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": item.name, "description": item.description}
    if item.hint:
        entry["input"] = {"hint": item.hint}
    return entry


def available_commands(commands: list[Command]) -> dict[str, Any]:
    return {"sessionUpdate": "available_commands_update", "availableCommands": [command(c) for c in commands]}


def stored_session(item: StoredSession) -> dict[str, Any]:
    updated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(item.updated_at))
    return {"sessionId": item.session_id, "cwd": item.cwd, "title": item.title, "updatedAt": updated}


def models_state(current: str) -> dict[str, Any]:
    """ACP's (unstable) session model state: the picker's models, with the current one listed first when it is
    not one of them (a model set by settings)."""
    from bridge.model.pricing import MODELS

    listed = [{"modelId": m, "name": name, "description": about} for m, name, about in MODELS]
    if current not in {m for m, _, _ in MODELS}:
        listed.insert(0, {"modelId": current, "name": current, "description": "Set by the bridge's settings"})
    return {"currentModelId": current, "availableModels": listed}


OFFLINE_MODEL = {"modelId": "offline-demo", "name": "Offline demo model",
                 "description": "The bridge's built-in offline model: scripted answers, no network, no cost"}


def offline_models_state() -> dict[str, Any]:
    """The models of a bridge on its offline demo model: that one (an editor must not show a Claude model and
    a price for it)."""
    return {"currentModelId": OFFLINE_MODEL["modelId"], "availableModels": [OFFLINE_MODEL]}


def modes_state(current: str) -> dict[str, Any]:
    """`session/new`'s `modes`: the current mode and every mode, named and described."""
    return {
        "currentModeId": current,
        "availableModes": [
            {"id": mode_id, "name": MODE_NAMES[mode_id], "description": MODE_DESCRIPTIONS[mode_id]}
            for mode_id in MODES
        ],
    }


OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


def permission_params(session_id: str, request: PermissionRequest) -> dict[str, Any]:
    """`session/request_permission` for a tool call: the title alone tells the whole truth (a client may show
    only it: the whole command, every line; a path and where it really leads), the first content block says it
    again with the reason, `_meta.question` carries it as data (the marked parts, the paths), and an always-
    option names every rule it saves. Every text a person sees is made visible (`bridge.visible`)."""
    options: list[dict[str, Any]] = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    options += _always_options("allow_always", "Always allow", _suggested(request, "allow"))
    options.append({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
    options += _always_options("reject_always", "Always reject", _suggested(request, "deny"))
    content = [_text_content(_question_text(request)), *(tool_content(item) for item in request.display)]
    meta: dict[str, Any] = {"reason": visible(request.reason), "question": _question(request)}
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": request.tool_call_id,
            "title": _question_title(request),
            "kind": request.kind,
            "status": "pending",
            "rawInput": request.raw_input,
            "content": content,
            "locations": [location(item) for item in request.locations],
        },
        "options": options,
        "_meta": meta | ({"agent": agent_label(request.agent)} if request.agent else {}),
    }


def _question_title(request: PermissionRequest) -> str:
    shown = request.shown
    if shown.command is not None:
        background = " (background)" if request.raw_input.get("run_in_background") else ""
        title = code_span(one_line(shown.command)) + background
        if not fits(shown.command) and shown.marks:  # what asks may be past the cut: name it
            asked = ", ".join(code_span(one_line(shown.command[m.start:m.end], 300)) for m in shown.marks[:5])
            title += f" — it asks about {asked}"
        return title
    title = one_line(request.title)
    if shown.paths:
        title += " → " + ", ".join(one_line(p.resolved) for p in shown.paths)
    return title


def _question_text(request: PermissionRequest) -> str:
    shown = request.shown
    if shown.command is not None:
        body, more = capped(shown.command)
        head = visible(body, keep_newlines=True) + more
    elif shown.paths:
        head = "\n".join(f"{visible(p.named)} → {visible(p.resolved)}" for p in shown.paths)
    else:
        head = "\n".join(visible(item.path) for item in request.locations) or visible(request.title)
    return f"{head}\n\n{visible(request.reason)}" if request.reason else head


def _question(request: PermissionRequest) -> dict[str, Any]:
    shown = request.shown
    command: str | None = None
    marks: list[dict[str, Any]] = []
    body = ""
    if shown.command is not None:
        body, more = capped(shown.command)
        command, spans = visible_spans(body, [(m.start, m.end) for m in shown.marks])
        command += more
        marks = [{"start": start, "end": end, "why": visible(mark.why)}
                 for (start, end), mark in zip(spans, shown.marks, strict=True) if end > start]
    return {
        "command": command,
        "marks": marks,
        "reason": visible(request.reason),
        "paths": [{"named": visible(p.named), "resolved": visible(p.resolved)} for p in shown.paths],
        "escaped": any(has_hidden(text) for text in (body, request.reason, request.title,
                                                     *(p.named for p in shown.paths))),
    }


def _always_options(kind: OptionKind, verb: str, suggestions: list[RuleSuggestion]) -> list[dict[str, Any]]:
    """One option per suggestion (ids `allow_always`, `allow_always:2`…); its name lists every rule it saves
    and where."""
    out = []
    for option_id, suggestion in _always_ids(kind, suggestions):
        where = Path(suggestion.destination).name
        rules = ", ".join(visible(rule) for rule in suggestion.rules)
        out.append({
            "optionId": option_id,
            "name": f"{verb} {rules} (saved to {where})",
            "kind": kind,
            "_meta": {"rule": suggestion.rule, "rules": list(suggestion.rules), "destination": suggestion.destination},
        })
    return out


def _suggested(request: PermissionRequest, behavior: str) -> list[RuleSuggestion]:
    return [s for s in request.suggestions if s.behavior == behavior]


def _always_ids(kind: str, suggestions: list[RuleSuggestion]) -> list[tuple[str, RuleSuggestion]]:
    return [(kind if index == 0 else f"{kind}:{index + 1}", s) for index, s in enumerate(suggestions)]


def permission_answer(result: Any, request: PermissionRequest) -> PermissionAnswer:
    """The editor's answer; anything unrecognized denies (never allows by accident). An always-option saves
    exactly the rules its option listed."""
    if not isinstance(result, dict):
        return PermissionAnswer("cancelled")
    outcome = result.get("outcome") or {}
    meta = result.get("_meta") or {}
    feedback = meta.get("feedback") if isinstance(meta, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return PermissionAnswer("cancelled", feedback=feedback)
    option = outcome.get("optionId")
    edited = meta.get("editedText") if isinstance(meta, dict) else None
    edited = edited if isinstance(edited, str) else None
    if option == "allow_once":
        return PermissionAnswer("allow_once", edited_text=edited)
    for option_id, chosen in _always_ids("allow_always", _suggested(request, "allow")):
        if option == option_id:
            return PermissionAnswer("allow_always", feedback=feedback, suggestion=chosen, edited_text=edited)
    for option_id, chosen in _always_ids("reject_always", _suggested(request, "deny")):
        if option == option_id:
            return PermissionAnswer("reject_always", feedback=feedback, suggestion=chosen)
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
            "title": one_line(question.title),
            "kind": "other",
            "status": "pending",
            "rawInput": question.meta,
            "content": [{"type": "content", "content": {"type": "text",
                                                        "text": visible(question.text, keep_newlines=True)}}],
            "locations": [],
        },
        "options": [{"optionId": c.id, "name": one_line(c.name), "kind": c.kind} for c in question.choices],
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


_TRUST_KINDS: dict[TrustAnswer, OptionKind] = {
    "trust": "allow_always", "session": "allow_once", "not_now": "reject_once", "keep_off": "reject_always",
}


def trust_params(session_id: str, question: TrustQuestion) -> dict[str, Any]:
    """The folder-trust question as `session/request_permission`: every item verbatim in the content (a client
    that shows only text shows them all) and as data in `_meta.trust` (an editor that renders a list)."""
    items = [item.as_json() for item in question.items]
    trust = {"folder": str(question.folder), "items": items}
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": f"trust_{uuid.uuid4().hex[:12]}",
            "title": question.title,
            "kind": "other",
            "status": "pending",
            "rawInput": trust,
            "content": [{"type": "content", "content": {"type": "text", "text": question.text}}],
            "locations": [],
        },
        "options": [{"optionId": answer, "name": name, "kind": _TRUST_KINDS[answer]} for answer, name in TRUST_CHOICES],
        "_meta": {"trust": trust},
    }


def trust_answer(result: Any) -> TrustAnswer | None:
    """The editor's answer to the trust question; anything unrecognized trusts nothing."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    option = outcome.get("optionId") if isinstance(outcome, dict) and outcome.get("outcome") == "selected" else None
    return next((answer for answer in _TRUST_KINDS if answer == option), None)


class LoadSessionParams(WireModel):
    session_id: str = Field(alias="sessionId")
    cwd: str | None = None
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list, alias="mcpServers")


class ListSessionsParams(WireModel):
    cwd: str | None = None


def turn_end(event: TurnEnded) -> dict[str, Any]:
    """How a replayed turn ended, for its last update's `_meta.turnEnd`."""
    if event.error is not None:
        return {"stopReason": None, "error": event.error}
    if event.cut_off:
        return {"stopReason": None, "cutOff": True}
    return {"stopReason": event.stop_reason}
