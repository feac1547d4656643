"""Conversation history in the Messages API's own shape, and the pairing invariant.

History is a list of plain `{"role", "content": [block, ...]}` dicts, exactly what is sent to the model:
no conversion step means the request prefix stays byte-stable from one request to the next.
"""

from __future__ import annotations

import copy
import re
from typing import Any

Block = dict[str, Any]
Message = dict[str, Any]

TOOL_USE_ID_MAX = 128
_TOOL_USE_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{TOOL_USE_ID_MAX}}}")


def valid_tool_use_id(value: object) -> bool:
    """A tool_use id as the Messages API spells them (`toolu_01A…`: letters, digits, `_`, `-`; the API refuses
    any other in a tool_result), at most `TOOL_USE_ID_MAX` characters. The stream parser refuses others where
    they enter, and whatever makes a file name of an id asks again: an id is chosen by whoever serves the API
    (a gateway at ANTHROPIC_BASE_URL), and `../x` must never become a path."""
    return isinstance(value, str) and _TOOL_USE_ID.fullmatch(value) is not None


INTERRUPTED_RESULT = "Interrupted by user"
MARKER = "[Request interrupted by user]"
MARKER_TOOL_USE = "[Request interrupted by user for tool use]"


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrubbed(value: Any) -> Any:
    """`value` with every lone surrogate in its strings made U+FFFD (the same object when there is none). JSON
    lets an editor or a tool send one (`"\\ud83d"`: a selection cut mid-emoji); UTF-8 can't carry it, so neither the
    transcript nor a request could be written."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        items = [scrubbed(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = {scrubbed(key): scrubbed(item) for key, item in value.items()}
        same = all(pairs.get(key) is item for key, item in value.items())
        return value if same else pairs
    return value


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def user_message(blocks: list[Block]) -> Message:
    return {"role": "user", "content": blocks}


def tool_result_block(tool_use_id: str, content: str | list[Block], *, is_error: bool = False) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def interrupted_result(tool_use_id: str, output_so_far: str = "") -> Block:
    text = INTERRUPTED_RESULT
    if output_so_far.strip():
        text += f"\n\nOutput before the interruption:\n{output_so_far}"
    return tool_result_block(tool_use_id, text, is_error=True)


def tool_uses(message: Message) -> list[Block]:
    if message.get("role") != "assistant":
        return []
    return [b for b in message.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"]


def _is_empty(block: Block) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _fits_pairing(block: object, role: str) -> bool:
    """Whether the repair can place `block` at all: an object with a type, and no tool_result from the model nor
    tool_use from the user (the API refuses both). A tool_use needs a valid id: pairing is by id, and a file
    name may be made of it. (What else a stored block must be is `sound_blocks`' business, on load.)"""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return False
    kind = block["type"]
    if kind == "tool_use":
        return role == "assistant" and valid_tool_use_id(block.get("id"))
    return not (kind == "tool_result" and role != "user")


def repair_pairing(history: list[Message]) -> list[Message]:
    """A copy of `history` that the API accepts, whatever happened to it (a cancel, a crash mid-turn,
    a transcript cut short):

    - roles alternate, starting with `user`; consecutive messages of one role are merged;
    - every `tool_use` is answered by exactly one `tool_result` in the next user message (missing ones
      are synthesized as interrupted), tool_results come first in that message;
    - tool_use ids are unique in the whole history (the API refuses a request that repeats one): a later call
      with an id an earlier one has is dropped, and with it the result that answers it (a model or gateway reused
      the id, or an older bridge stored it; the live loop renames such calls as they come, see
      bridge/loop/query.py's `unique_tool_id`);
    - tool_results that answer nothing, duplicates, empty text blocks and blocks the pairing can't place (not an
      object, a tool_use without a valid id or from the user, a tool_result from the model) are dropped.

    Dropping can make a new neighbour pair (a stray result between two assistant messages leaves them
    adjacent; a leading assistant message dropped leaves its results answering nothing), so the pass repeats
    until nothing changes: each pass only drops, merges or answers, so it settles within a few.
    """
    repaired = _repair_once(history)
    for _ in range(len(repaired) + 1):
        again = _repair_once(repaired)
        if again == repaired:
            break
        repaired = again
    return repaired


def _repair_once(history: list[Message]) -> list[Message]:
    merged: list[Message] = []
    for message in history:
        role = message.get("role")
        content = message.get("content")
        if role not in ("user", "assistant") or not isinstance(content, list):
            continue
        blocks = [b for b in content if _fits_pairing(b, role) and not _is_empty(b)]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(copy.deepcopy(blocks))
        else:
            merged.append({"role": message["role"], "content": copy.deepcopy(blocks)})
    while merged and merged[0]["role"] != "user":
        merged.pop(0)

    repaired: list[Message] = []
    expected: list[str] = []  # tool_use ids the next user message must answer
    seen: set[str] = set()  # every tool_use id so far: a later call with one is dropped (its result then too)
    for message in merged:
        if message["role"] == "assistant":
            if expected:  # an assistant turn with no user message in between: answer the previous one
                repaired.append(user_message([interrupted_result(i) for i in expected]))
                expected = []
            kept = [b for b in message["content"] if b.get("type") != "tool_use" or _first_use(b["id"], seen)]
            if not kept:
                continue
            message["content"] = kept
            repaired.append(message)
            expected = [b["id"] for b in tool_uses(message)]
            continue
        results: dict[str, Block] = {}
        others: list[Block] = []
        for block in message["content"]:
            if block.get("type") == "tool_result":
                use_id = block.get("tool_use_id")
                if use_id in expected and use_id not in results:
                    results[use_id] = block
            else:
                others.append(block)
        answered = [results.get(i) or interrupted_result(i) for i in expected]
        content = answered + others
        expected = []
        if content:
            repaired.append(user_message(content))
    if expected:
        repaired.append(user_message([interrupted_result(i) for i in expected]))
    return repaired


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_IMAGE_BASE64_MAX = 5 * 1024 * 1024
_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result"})
_USER_BLOCKS = _RESULT_BLOCKS | {"tool_result"}
_THINKING = frozenset({"thinking", "redacted_thinking"})
# The server tools' blocks a response may hold (sent back as they came): only their ids are looked at. (The offline
# API's bridge/offline/rules.py lists them too, on purpose apart: it plays the API, the oracle the tests hold this
# repair to; one list shared would make a wrong entry wrong in both, and the bridge never imports its test server.)
_SERVER_BLOCKS = frozenset(
    {
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
    }
)
_ASSISTANT_BLOCKS = frozenset({"text", "tool_use"}) | _THINKING | _SERVER_BLOCKS


def sound_blocks(message: Message) -> tuple[list[Block], list[str]]:
    """The blocks of a stored message that the API takes back, and what the others were (for the person: "a
    tool_use without a valid id"). A transcript is a file anyone may have written (a hand edit, another tool,
    an older bridge, an attacker), and one block the API refuses makes every later request of the session fail:
    so only blocks of known types with fields of the right types are kept (a tool_result's unreadable inner
    blocks go, the rest of it stays), and a `cache_control` (the bridge never stores one; a forged one can
    break the request's limit of 4) is left off. `message` must have a role and a list for content."""
    role = message["role"]
    kept: list[Block] = []
    dropped: list[str] = []
    for block in message["content"]:
        fixed, why = _sound_block(block, role)
        if fixed is not None:
            kept.append(fixed)
        if why is not None:
            dropped.append(why)
    thinking = [b for b in kept if b["type"] in _THINKING]
    if thinking and kept[0]["type"] not in _THINKING:  # the API wants them first or not at all
        kept = [b for b in kept if b["type"] not in _THINKING]
        dropped += ["a thinking block that is not first in its message"] * len(thinking)
    return kept, dropped


def _sound_block(block: object, role: str) -> tuple[Block | None, str | None]:
    """`block` as the API takes it back from a `role` message (a copy without `cache_control`), or None; and
    what of it was dropped (None: nothing)."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None, "a content block that is not an object with a type"
    kind = block["type"]
    if kind not in (_USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS):
        return None, f"a {kind[:40]!r} block, which a {role} message can't hold"
    block = _uncached(block)
    why = _flaw(block)
    if why is not None:
        return None, why
    content = block.get("content", "")
    if kind != "tool_result" or isinstance(content, str):
        return block, None
    if not isinstance(content, list):
        block["content"] = "(the stored result could not be read)"
        return block, "a tool_result's content that is neither text nor blocks"
    inner = [_uncached(b) for b in content if isinstance(b, dict) and b.get("type") in _RESULT_BLOCKS and not _flaw(b)]
    block["content"] = inner  # (left empty, it is filled in before it is sent: `within_limits`)
    return block, "a malformed block in a tool_result" if len(inner) < len(content) else None


def _uncached(block: Block) -> Block:
    return {key: value for key, value in block.items() if key != "cache_control"}


def _flaw(block: Block) -> str | None:
    """What makes a block of a known type one the API refuses, or None."""
    kind = block["type"]
    if kind == "text":
        return None if isinstance(block.get("text"), str) else "a text block whose text is not a string"
    if kind == "tool_use":
        if not valid_tool_use_id(block.get("id")):
            return "a tool_use without a valid id"
        name = block.get("name")
        if not isinstance(name, str) or _TOOL_NAME.fullmatch(name) is None:
            return "a tool_use without a valid tool name"
        return None if isinstance(block.get("input"), dict) else "a tool_use whose input is not an object"
    if kind == "tool_result":
        if not valid_tool_use_id(block.get("tool_use_id")):
            return "a tool_result without a valid tool_use_id"
        return None if isinstance(block.get("is_error", False), bool) else "a tool_result with a bad is_error"
    if kind == "thinking":
        fine = isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
        return None if fine and block["signature"] else "a thinking block without a signature"
    if kind == "redacted_thinking":
        return None if isinstance(block.get("data"), str) else "a redacted thinking block without its data"
    if kind == "image":
        return None if _image_source(block.get("source")) else "an image without a source the API takes"
    if kind == "document":
        return None if _document_source(block.get("source")) else "a document without a source the API takes"
    if kind in _SERVER_BLOCKS:
        key = "id" if kind == "server_tool_use" else "tool_use_id"
        return None if valid_tool_use_id(block.get(key)) else f"a {kind} block without a valid id"
    return None  # search_result: kept as stored


def _image_source(source: object) -> bool:
    if not isinstance(source, dict):
        return False
    kind = source.get("type")
    if kind == "url":
        return isinstance(source.get("url"), str)
    if kind == "file":
        return isinstance(source.get("file_id"), str)
    data = source.get("data")
    return (
        kind == "base64"
        and source.get("media_type") in _IMAGE_TYPES
        and isinstance(data, str)
        and len(data) <= _IMAGE_BASE64_MAX
    )


def _document_source(source: object) -> bool:
    if not isinstance(source, dict):
        return False
    kind = source.get("type")
    if kind == "base64":
        return source.get("media_type") == "application/pdf" and isinstance(source.get("data"), str)
    if kind == "text":
        return source.get("media_type") == "text/plain" and isinstance(source.get("data"), str)
    if kind == "content":
        return isinstance(source.get("content"), (str, list))
    field = {"url": "url", "file": "file_id"}.get(str(kind))
    return field is not None and isinstance(source.get(field), str)


def _first_use(use_id: str, seen: set[str]) -> bool:
    """Whether `use_id` is new to the history so far (it is then taken)."""
    if use_id in seen:
        return False
    seen.add(use_id)
    return True


MAX_REQUEST_IMAGES = 100  # the API's limit on images in one request, the whole history's
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_media_type(head: bytes) -> str | None:
    """The type an image's first bytes say (PNG, JPEG, GIF, WebP: what the API takes), or None."""
    found = next((kind for magic, kind in _IMAGE_MAGIC if head.startswith(magic)), None)
    if found is None and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        found = "image/webp"
    return found


def within_limits(messages: list[Message]) -> list[Message]:
    """`messages` (a repaired copy, changed in place) as the API takes them however long the session: past 100
    images in the whole history the oldest become a note (each prompt may bring 100, a Read or a tool result
    more: refused, every later request would be too), and a blank text block beside other content in a tool
    result (an MCP server's) is dropped, or made a note when it is all there is."""
    images: list[tuple[list[Block], int]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for index, block in enumerate(content):
            if block.get("type") == "image":
                images.append((content, index))
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                inner = [b for b in block["content"] if not _is_empty(b)]
                block["content"] = inner or [text_block("(no output)")]
                images += [(block["content"], i) for i, b in enumerate(inner) if b.get("type") == "image"]
    for content, index in images[: max(0, len(images) - MAX_REQUEST_IMAGES)]:
        content[index] = text_block("[an earlier image, left out: a request carries at most 100 images]")
    return messages


EPHEMERAL = {"type": "ephemeral"}


def thinking_fits(messages: list[Message]) -> bool:
    """Whether a request with these messages may turn thinking on: the API wants the last assistant message, when
    the request goes on from its tool calls, to start with a thinking block. One made with thinking off (before
    the user turned it on, or cut off by a cancel) doesn't: that request goes without thinking, the next
    response starts the loop over with it."""
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if last is None or not isinstance(last.get("content"), list) or not tool_uses(last):
        return True
    first = last["content"][0] if last["content"] else {}
    return isinstance(first, dict) and first.get("type") in ("thinking", "redacted_thinking")


def with_cache_breakpoints(messages: list[Message]) -> list[Message]:
    """The request's messages with a cache breakpoint on the latest message's last block. Only that
    message is copied: everything before it is sent exactly as before, so the cached prefix matches."""
    if not messages:
        return messages
    last = messages[-1]
    blocks = list(last["content"])
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return [*messages[:-1], {"role": last["role"], "content": blocks}]
