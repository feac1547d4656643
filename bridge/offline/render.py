"""Turn a scenario response into what the real API sends: SSE events or a full Message JSON."""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from typing import Any

from bridge.offline.scenario import Json
from bridge.offline.usage import Usage

DEFAULT_CHUNK_CHARS = 20
DEFAULT_JSON_PIECES = 3


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class SseEvent:
    type: str
    data: Json
    delay: float  # seconds to wait before sending it

    def encode(self) -> bytes:
        return f"event: {self.type}\ndata: {json.dumps(self.data, separators=(',', ':'))}\n\n".encode()


def split_text(text: str, chunks: int | None) -> list[str]:
    """`chunks` equal parts (the last may be shorter), or pieces of ~20 characters."""
    if not text:
        return []
    count = chunks if chunks and chunks > 0 else math.ceil(len(text) / DEFAULT_CHUNK_CHARS)
    size = math.ceil(len(text) / min(count, len(text)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _pieces(block: Json, key: str) -> list[str]:
    deltas = block.get("deltas")
    if isinstance(deltas, list):
        return [str(d) for d in deltas]
    return split_text(str(block.get(key, "")), block.get("chunks"))


def block_text(block: Json) -> str:
    """The full text of a text/thinking block (explicit deltas win over `text`/`thinking`)."""
    key = "thinking" if block["type"] == "thinking" else "text"
    deltas = block.get("deltas")
    return "".join(str(d) for d in deltas) if isinstance(deltas, list) else str(block.get(key, ""))


def final_blocks(response: Json) -> list[Json]:
    """The content blocks as they appear in the finished Message, with generated tool_use ids filled in."""
    blocks: list[Json] = []
    for block in response.get("content", []):
        kind = block["type"]
        if kind == "text":
            blocks.append({"type": "text", "text": block_text(block)})
        elif kind == "thinking":
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": block_text(block),
                    "signature": str(block.get("signature", new_id("sig"))),
                }
            )
        elif kind == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": str(block.get("data", ""))})
        else:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": str(block.get("id") or new_id("toolu")),
                    "name": block["name"],
                    "input": dict(block.get("input", {})),
                }
            )
    return blocks


def stop_reason(response: Json, blocks: list[Json]) -> str:
    explicit = response.get("stop_reason")
    if isinstance(explicit, str):
        return explicit
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def output_tokens(response: Json, blocks: list[Json]) -> int:
    override = response.get("usage", {}).get("output_tokens")
    if isinstance(override, int):
        return override
    return max(1, len(json.dumps(blocks)) // 4)


def _split_json(text: str, pieces: int) -> list[str]:
    size = max(1, math.ceil(len(text) / max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def message_json(response: Json, request: Json, usage: Usage, blocks: list[Json] | None = None) -> Json:
    blocks = final_blocks(response) if blocks is None else blocks
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": str(request.get("model", "")),
        "content": blocks,
        "stop_reason": stop_reason(response, blocks),
        "stop_sequence": response.get("stop_sequence"),
        "usage": {**usage.as_json(), "output_tokens": output_tokens(response, blocks)},
    }


def sse_events(response: Json, request: Json, usage: Usage) -> list[SseEvent]:
    """The exact event sequence the SDK accumulates: message_start, per block start/deltas/stop,
    message_delta (stop_reason + usage), message_stop."""
    default_delay = float(response.get("delay_ms", 0)) / 1000
    source = list(response.get("content", []))
    blocks = final_blocks(response)
    message = message_json(response, request, usage, blocks)
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage.as_json(), "output_tokens": 1},
    }
    events = [SseEvent("message_start", {"type": "message_start", "message": start}, 0.0)]

    def add(kind: str, data: Json, delay: float) -> None:
        events.append(SseEvent(kind, {"type": kind, **data}, delay))

    for index, (spec, block) in enumerate(zip(source, blocks, strict=True)):
        delay = float(spec["delay_ms"]) / 1000 if "delay_ms" in spec else default_delay
        kind = block["type"]
        deltas: list[Json]
        if kind == "text":
            opening: Json = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(spec, "text")]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(spec, "thinking")]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "redacted_thinking":
            opening, deltas = block, []
        else:
            opening = {**block, "input": {}}
            text = json.dumps(block["input"]) if block["input"] else ""
            pieces = int(spec.get("pieces", DEFAULT_JSON_PIECES))
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _split_json(text, pieces)]
        add("content_block_start", {"index": index, "content_block": opening}, delay)
        for delta in deltas:
            add("content_block_delta", {"index": index, "delta": delta}, delay)
        add("content_block_stop", {"index": index}, delay)
    add(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
        default_delay,
    )
    add("message_stop", {}, 0.0)
    return events


def error_json(error_type: str, message: str) -> Json:
    return {"type": "error", "error": {"type": error_type, "message": message}}


STATUS_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ERROR_TYPE_STATUS: dict[str, int] = {v: k for k, v in STATUS_ERROR_TYPES.items()}
DEFAULT_MESSAGES: dict[str, str] = {
    "invalid_request_error": "Invalid request",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "Rate limited",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


def fault_error(fault: dict[str, Any], default_status: int = 500) -> tuple[int, Json]:
    """(status, error body) for a status or sse_error fault."""
    status = int(fault.get("status", 0)) or ERROR_TYPE_STATUS.get(str(fault.get("error_type", "")), default_status)
    error_type = str(fault.get("error_type") or STATUS_ERROR_TYPES.get(status, "api_error"))
    message = str(fault.get("message") or DEFAULT_MESSAGES.get(error_type, "Error"))
    return status, error_json(error_type, message)
