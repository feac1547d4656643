"""ACP v1 wire shapes <-> domain objects: the only place ACP shapes are built (the capabilities, every answer,
every `session/update`, the requests we send). Nothing here does work; it only translates (which event becomes
which update is decided once, in `bridge/server/updates.py`). ACP v2 (a draft) would be a second module of this
kind beside this one, chosen at `initialize` by the protocol version."""

from __future__ import annotations

import base64
import binascii
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bridge.commands import Command
from bridge.display import Diff, Display, Location, PlanEntry, SubAgentLabel, TextContent
from bridge.loop import events as ev
from bridge.messages import Block, image_media_type
from bridge.transcript import StoredSession
from bridge.visible import one_line, visible

ChunkKind = Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]
Level = Literal["info", "warning", "error"]

SUB_AGENTS_META = "agent-bridge/subAgentUpdates"
"""`clientCapabilities._meta` key: `"nested"` asks for a sub-agent's own updates (each with
`_meta.parentToolCallId`) instead of its work inside the `Agent` call's content."""


@dataclass(frozen=True)
class ClientFeatures:
    """What the mapping does differently for a client, from its `clientCapabilities` (and the transport)."""

    notices: bool = False  # `session.notices`: notices as `notice` updates, not quoted message chunks
    nested_sub_agents: bool = False  # sub-agents' own updates tagged `_meta.parentToolCallId` (our extension)
    session_metadata: bool = True  # `config_option_update` and `session_info_update` (ACP 2026)


def client_features(capabilities: Any, *, lsp: bool = False) -> ClientFeatures:
    """`lsp`: `serve`'s one client, the VS Code extension, draws sub-agents' nested updates itself and knows the
    session updates of ACP before 2026 only."""
    caps = capabilities if isinstance(capabilities, dict) else {}
    session = caps.get("session")
    meta = caps.get("_meta")
    nested = isinstance(meta, dict) and meta.get(SUB_AGENTS_META) == "nested"
    return ClientFeatures(
        notices=isinstance(session, dict) and isinstance(session.get("notices"), dict),
        nested_sub_agents=lsp or nested,
        session_metadata=not lsp,
    )


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class NewSessionParams(WireModel):
    cwd: str
    mcp_servers: list[dict[str, Any]] = Field(default=[], alias="mcpServers")
    additional_directories: list[str] = Field(default=[], alias="additionalDirectories")

    @field_validator("mcp_servers", "additional_directories", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


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


class SetConfigOptionParams(WireModel):
    session_id: str = Field(alias="sessionId")
    config_id: str = Field(alias="configId")
    value: str | bool


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
MAX_IMAGE_DATA = 5 * 1024 * 1024  # the API's limit on one image's base64 data (5 MB)
MAX_IMAGES = 100  # the API's limit on images in one request


def prompt_blocks(prompt: list[dict[str, Any]]) -> list[Block]:
    """ACP content blocks -> Messages API blocks; none for a prompt without content (`[]`, blank text), which the
    schema allows and which asks nothing of the model. What the API would refuse is refused here, with the field
    named (-32602): refused by the API, the prompt would stay in the history and every later request fail too."""
    blocks: list[Block] = []
    images = 0
    for index, item in enumerate(prompt):
        where = f"Invalid params: prompt.{index}"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: a content block is an object, got {type(item).__name__}")
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if not isinstance(text, str):
                raise ValueError(f"{where}.text: a text block's text is a string, got {type(text).__name__}")
            if text.strip():
                blocks.append({"type": "text", "text": text})
        elif kind == "resource_link":
            uri, name = item.get("uri"), item.get("name")
            if not isinstance(uri, str) or not (name is None or isinstance(name, str)):
                raise ValueError(f"{where}: a resource link's uri (and name) are strings")
            blocks.append({"type": "text", "text": f"[@{name or uri}]({uri})"})
        elif kind == "resource":
            resource = item.get("resource")
            if not isinstance(resource, dict) or not isinstance(resource.get("uri", ""), str):
                raise ValueError(f"{where}.resource: an embedded resource is an object with a string uri")
            uri = resource.get("uri", "")
            if "text" in resource:
                if not isinstance(resource["text"], str):
                    raise ValueError(f"{where}.resource.text: a text resource's text is a string")
                blocks.append({"type": "text", "text": f'<context ref="{uri}">\n{resource["text"]}\n</context>'})
            else:
                blocks.append({"type": "text", "text": f"[@{uri}]({uri})"})
        elif kind == "image":
            images += 1
            blocks.append(_image(item, where, images))
        else:
            raise ValueError(f"{where}.type: unsupported content block {kind!r}")
    return blocks


def _image(item: dict[str, Any], where: str, count: int) -> Block:
    """An image block the API takes: of its four types (the type its bytes say, should the editor have named
    another), valid base64, at most 5 MB of it, at most 100 in a prompt."""
    media, data = item.get("mimeType"), item.get("data")
    if media not in IMAGE_TYPES:
        raise ValueError(
            f"{where}.mimeType: an image must be one of {', '.join(IMAGE_TYPES)} (the model takes no other), "
            f"got {media!r}"
        )
    if not isinstance(data, str) or not data:
        raise ValueError(f"{where}.data: an image needs its base64 data")
    if count > MAX_IMAGES:
        raise ValueError(f"{where}: a prompt can carry at most {MAX_IMAGES} images")
    if len(data) > MAX_IMAGE_DATA:
        raise ValueError(f"{where}.data: the image is {len(data):,} bytes of base64, over the model's 5 MB limit")
    try:
        head = base64.b64decode(data[:64], validate=True)
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}.data: the image's data is not valid base64") from None
    sniffed = image_media_type(head)
    if sniffed is None:
        raise ValueError(f"{where}.data: the data is not a PNG, JPEG, GIF or WebP image")
    return {"type": "image", "source": {"type": "base64", "media_type": sniffed, "data": data}}


def location(item: Location) -> dict[str, Any]:
    return {"path": item.path} | ({"line": item.line} if item.line is not None else {})


def tool_content(item: Display) -> dict[str, Any]:
    """ACP tool-call content for what a tool shows."""
    match item:
        case TextContent(text=text):
            return _text_content(text)
        case Diff():
            diff: dict[str, Any] = {
                "type": "diff",
                "path": item.path,
                "oldText": item.old_text,
                "newText": item.new_text,
            }
            if item.partial:
                diff["_meta"] = {"partial": True}
                if item.first_line is not None:
                    diff["_meta"]["line"] = item.first_line
                if item.unread:
                    diff["_meta"]["unread"] = True
            return diff
        case _:
            assert_never(item)


def plan_entry(entry: PlanEntry) -> dict[str, Any]:
    return {"content": entry.content, "status": entry.status, "priority": "medium"}


def text_content(text: str) -> dict[str, Any]:
    """Tool-call content: a block of text."""
    return {"type": "content", "content": {"type": "text", "text": text}}


_text_content = text_content
TOOL_MARKS = {"pending": "○", "in_progress": "◌", "completed": "✓", "failed": "✗"}


def tool_line(title: str, status: str) -> str:
    """One of a sub-agent's tool calls, as a line of its `Agent` call's content."""
    return f"{TOOL_MARKS.get(status, '○')} {title}"


def agent_card(call: str, content: list[dict[str, Any]], progress: ev.AgentProgress | None) -> dict[str, Any]:
    """The `Agent` call's update while its sub-agent works, its work as the call's own content (what a client
    that knows nothing of `_meta` shows); `_meta.agent` has the figures, as `agent_progress`'s."""
    update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call, "content": content}
    if progress is not None:
        update["_meta"] = agent_progress(progress)["_meta"]
    return update


def chunk(kind: ChunkKind, text: str, parent: str | None = None, message_id: str | None = None) -> dict[str, Any]:
    """A streamed piece of a message; `message_id` names the message it belongs to (ACP's `messageId`: a client
    joins the chunks of one message and starts a new one when it changes)."""
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return nested(update, parent) if parent is not None else update


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:16]}"


def nested(update: dict[str, Any], parent: str | None) -> dict[str, Any]:
    """A sub-agent's update: `_meta.parentToolCallId` names the `Agent` call that started the sub-agent (our
    extension of ACP: a client that does not know it shows the update as the session's own)."""
    if parent is None:
        return update
    return {**update, "_meta": {**(update.get("_meta") or {}), "parentToolCallId": parent}}


def agent_label(label: SubAgentLabel) -> dict[str, Any]:
    """Which sub-agent: its description is the model's text, shown escaped as every title is (attack round 34)."""
    return {
        "type": label.agent_type,
        "description": visible(label.description),
        "parentToolCallId": label.parent_tool_call_id,
    }


def agent_progress(event: ev.AgentProgress) -> dict[str, Any]:
    """The `Agent` call's card while its sub-agent works: a line for people, the figures in `_meta.agent`."""
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": event.tool_call_id,
        "content": [_text_content(event.summary())],
        "_meta": {
            "agent": {
                "type": event.agent.agent_type,
                "description": visible(event.agent.description),
                "status": event.status,
                "background": event.background,
                "startedAt": round(event.started_at * 1000),
                "elapsedMs": round(event.elapsed_s * 1000),
                "toolCalls": event.tool_calls,
                "tokens": event.tokens,
                "lastTool": event.last_tool,
            }
        },
    }


def tool_call(event: ev.ToolCallStarted) -> dict[str, Any]:
    """A call as it starts. Its title is the call's own text (a URL, a path the model chose): on one line, every
    hidden character made visible (a bidi override reordered a URL on the panel's card, attack round 23); a
    command's (`execute`) is its tool's code span, made so already. A call a PreToolUse hook rewrote is the same
    call again: its card is updated to what runs."""
    update = {
        "sessionUpdate": "tool_call_update" if event.rewritten else "tool_call",
        "toolCallId": event.tool_call_id,
        "title": event.title if event.tool_kind == "execute" else one_line(event.title),
        "kind": event.tool_kind,
        "status": "pending",
        "rawInput": event.raw_input,
        "locations": [location(item) for item in event.locations],
    }
    if event.rewritten:
        del update["status"]  # (where it stands is not news)
    return update


def tool_in_progress(event: ev.ToolCallInProgress) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id, "status": "in_progress"}


def tool_progress(event: ev.ToolCallProgress) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": event.tool_call_id,
        "content": [_text_content(event.output)],
    }


NOTICE_LABELS = {"info": "", "warning": "**Warning:** ", "error": "**Error:** "}
NOTICE_TITLE_CHARS = 120


def notice_update(message: str, level: Level, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A notice for a client that advertised `session.notices`: ACP's `notice` update — a plain-text title that
    stands alone (the message's first line, cut), the whole message as its description when it says more."""
    first = message.strip().splitlines()[0] if message.strip() else level
    title = first if len(first) <= NOTICE_TITLE_CHARS else first[: NOTICE_TITLE_CHARS - 1].rstrip() + "…"
    update: dict[str, Any] = {"sessionUpdate": "notice", "severity": level, "title": title}
    if message.strip() != title:
        update["description"] = message.strip()
    if meta:
        update["_meta"] = meta
    return update


def notice_chunk(
    message: str, level: Level, meta: dict[str, Any] | None = None, message_id: str | None = None
) -> dict[str, Any]:
    """A notice for a client without `session.notices` (ACP's advice: an agent message): a quoted paragraph,
    a message of its own (`messageId`), marked `_meta.notice` so a client may render it apart."""
    update = chunk("agent_message_chunk", f"\n\n> {NOTICE_LABELS[level]}{message}\n\n", message_id=message_id)
    update["_meta"] = {"notice": level, **(meta or {})}
    return update


def retry_meta(event: ev.RetryWait) -> dict[str, Any]:
    """A retry the turn waits for, as data (`_meta.retry` of its notice): a client that knows it shows a
    countdown in its status instead (the VS Code panel does)."""
    return {
        "retry": {
            "reason": event.reason,
            "attempt": event.attempt,
            "attempts": event.attempts,
            "delayMs": round(event.delay * 1000),
        }
    }


def tool_finished(event: ev.ToolCallFinished, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`content`: what the call shows in place of its result text (an `Agent` call's: its sub-agent's work and
    then the result)."""
    if content is None:
        content = [_text_content(event.text)] if event.text else []
    content = [*content, *(tool_content(item) for item in event.display)]
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": event.tool_call_id,
        "status": event.status,
        "content": content,
    }
    if event.raw_output is not None:
        update["rawOutput"] = event.raw_output
    return update


def usage(event: ev.UsageReport, *, offline: bool = False) -> dict[str, Any]:
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


def mode(event: ev.ModeChanged) -> dict[str, Any]:
    return {"sessionUpdate": "current_mode_update", "currentModeId": event.mode}


def plan(event: ev.PlanUpdate) -> dict[str, Any]:
    return {"sessionUpdate": "plan", "entries": [plan_entry(entry) for entry in event.entries]}


def command(item: Command) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": item.name, "description": item.description}
    if item.hint:
        entry["input"] = {"hint": item.hint}
    return entry


def available_commands(commands: list[Command]) -> dict[str, Any]:
    return {"sessionUpdate": "available_commands_update", "availableCommands": [command(c) for c in commands]}


def stored_session(item: StoredSession) -> dict[str, Any]:
    return {"sessionId": item.session_id, "cwd": item.cwd, "title": item.title, "updatedAt": iso_time(item.updated_at)}


def session_info(title: str | None, updated_at: float) -> dict[str, Any]:
    """`session_info_update`: the session's title (as `session/list` gives it) and its last activity."""
    update: dict[str, Any] = {"sessionUpdate": "session_info_update", "updatedAt": iso_time(updated_at)}
    if title is not None:
        update["title"] = title
    return update


def iso_time(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


# ---- session configuration: `configOptions` (and the older `modes`) ------------------------------------------


def config_update(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sessionUpdate": "config_option_update", "configOptions": options}


def option_values(options: list[dict[str, Any]], option_id: str) -> list[str]:
    """The values a select option `option_id` takes (none: no such option)."""
    option = next((o for o in options if o["id"] == option_id), None)
    return [str(item["value"]) for item in option["options"]] if option is not None else []


class LoadSessionParams(NewSessionParams):
    """`session/load` and `session/resume`."""

    session_id: str = Field(alias="sessionId")
    cwd: str | None = None  # type: ignore[assignment]  # the session's own; a client may leave it out


class ListSessionsParams(WireModel):
    cwd: str | None = None


def turn_end(event: ev.TurnEnded) -> dict[str, Any]:
    """How a replayed turn ended, for its last update's `_meta.turnEnd`."""
    if event.error is not None:
        return {"stopReason": None, "error": event.error}
    if event.cut_off:
        return {"stopReason": None, "cutOff": True}
    return {"stopReason": event.stop_reason}
