"""What the real Messages API rejects with 400 `invalid_request_error`, checked before anything is played.

This is a test oracle of its own: it is written from the API's contract — the request schema (as the SDK's
generated `*Param` types carry it) and the API's own error messages (quoted where they are known) — and it
imports nothing from the bridge outside `bridge.offline`. The bridge's history repair (`bridge/messages.py`)
is what it checks, so it must not share a line of code with it.

Every check belongs to a rule in `RULES`. A rule's `source` says where it comes from:
- `api`: the real API answers 400 (the message text is the API's where it is known);
- `strict`: the real API accepts it, but the bridge promises never to send it, so the offline API (a test
  double) rejects it to make a test fail. Each says why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

# A relative import: the oracle and its table are one unit, and neither imports the bridge.
from .rules import (
    ASSISTANT_BLOCKS,
    BLOCK_TYPES,
    IMAGE_MEDIA_TYPES,
    MAX_CACHE_BREAKPOINTS,
    MAX_IMAGE_BASE64_BYTES,
    MAX_IMAGES,
    MAX_MESSAGES,
    RESULT_CONTENT_BLOCKS,
    RULE_IDS,
    THINKING_BLOCKS,
    TOOL_ID,
    TOOL_NAME,
    USER_BLOCKS,
    Json,
    Violation,
)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Check:
    """One pass over a request body, collecting violations."""

    def __init__(self, body: Json) -> None:
        self.body = body
        self.found: list[Violation] = []
        self.cache_ttls: list[tuple[str, str]] = []  # (where, ttl) in request order: tools, system, messages
        self.images = 0

    def add(self, rule: str, message: str) -> None:
        assert rule in RULE_IDS, rule
        self.found.append(Violation(rule, message))

    # ---- pieces ----------------------------------------------------------------------------------------

    def cache_control(self, holder: Json, where: str) -> None:
        if "cache_control" not in holder or holder["cache_control"] is None:
            return
        control = holder["cache_control"]
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            self.add("cache_control.shape", f"{where}.cache_control.type: Input should be 'ephemeral'")
            return
        ttl = control.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            self.add("cache_control.shape", f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
            return
        self.cache_ttls.append((where, str(ttl)))

    def text(self, block: Json, where: str) -> None:
        text = block.get("text")
        if not isinstance(text, str):
            self.add("text.shape", f"{where}.text: Field required (a string)")
        elif not text:
            self.add("text.nonempty", f"{where}: text content blocks must be non-empty")
        elif not text.strip():
            self.add("text.whitespace", f"{where}: text content blocks must contain non-whitespace text")

    def image(self, block: Json, where: str) -> None:
        self.images += 1
        source = block.get("source")
        kind = source.get("type") if isinstance(source, dict) else None
        if not isinstance(source, dict) or kind not in ("base64", "url", "file"):
            self.add("image.source", f"{where}.source: Input should be a base64, url or file image source")
            return
        if kind == "url":
            if not isinstance(source.get("url"), str):
                self.add("image.source", f"{where}.source.url: Field required")
            return
        if kind == "file":
            if not isinstance(source.get("file_id"), str):
                self.add("image.source", f"{where}.source.file_id: Field required")
            return
        if source.get("media_type") not in IMAGE_MEDIA_TYPES:
            self.add(
                "image.source",
                f"{where}.source.base64.media_type: Input should be 'image/jpeg', "
                f"'image/png', 'image/gif' or 'image/webp' (got {source.get('media_type')!r})",
            )
        data = source.get("data")
        if not isinstance(data, str):
            self.add("image.source", f"{where}.source.base64.data: Field required (a string)")
        elif len(data) > MAX_IMAGE_BASE64_BYTES:
            self.add(
                "image.size",
                f"{where}.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > "
                f"{MAX_IMAGE_BASE64_BYTES} bytes",
            )

    def document(self, block: Json, where: str) -> None:
        source = block.get("source")
        if not isinstance(source, dict):
            self.add("document.source", f"{where}.source: Field required")
            return
        kind = source.get("type")
        required = {
            "base64": ("data", "application/pdf"),
            "text": ("data", "text/plain"),
            "url": ("url", None),
            "file": ("file_id", None),
            "content": ("content", None),
        }
        if kind not in required:
            self.add(
                "document.source", f"{where}.source.type: Input should be 'base64', 'text', 'content', 'url' or 'file'"
            )
            return
        field, media = required[str(kind)]
        if field == "content":
            if not isinstance(source.get("content"), (str, list)):
                self.add("document.source", f"{where}.source.content: Field required")
        elif not isinstance(source.get(field), str):
            self.add("document.source", f"{where}.source.{field}: Field required (a string)")
        if media is not None and source.get("media_type") != media:
            self.add("document.source", f"{where}.source.media_type: Input should be '{media}'")

    def tool_use(self, block: Json, where: str) -> None:
        if (
            not isinstance(block.get("id"), str)
            or not isinstance(block.get("name"), str)
            or not isinstance(block.get("input"), dict)
        ):
            self.add("tool_use.shape", f"{where}: a tool_use needs a string id, a string name and an object input")
            return
        if not TOOL_ID.fullmatch(block["id"]):
            self.add("tool_use.id", f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        if not TOOL_NAME.fullmatch(block["name"]):
            self.add("tool_use.name", f"{where}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")

    def tool_result(self, block: Json, where: str) -> None:
        if not isinstance(block.get("tool_use_id"), str):
            self.add("tool_result.shape", f"{where}.tool_use_id: Field required (a string)")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            self.add("tool_result.shape", f"{where}.is_error: Input should be a valid boolean")
        content = block.get("content", "")
        if isinstance(content, str):
            return
        if not isinstance(content, list):
            self.add("tool_result.shape", f"{where}.content: Input should be a string or a list of blocks")
            return
        for index, inner in enumerate(content):
            here = f"{where}.content.{index}"
            if not isinstance(inner, dict) or inner.get("type") not in RESULT_CONTENT_BLOCKS:
                kind = inner.get("type") if isinstance(inner, dict) else None
                self.add(
                    "tool_result.shape",
                    f"{here}: a tool_result holds text, image, document, search_result "
                    f"or tool_reference blocks (got {kind!r})",
                )
                continue
            self.cache_control(inner, here)
            if inner["type"] == "text":
                self.text(inner, here)
            elif inner["type"] == "image":
                self.image(inner, here)
            elif inner["type"] == "document":
                self.document(inner, here)

    def thinking(self, block: Json, where: str) -> None:
        if block["type"] == "thinking":
            if not isinstance(block.get("thinking"), str):
                self.add("thinking.signature", f"{where}.thinking.thinking: Field required")
            if not isinstance(block.get("signature"), str):
                self.add("thinking.signature", f"{where}.thinking.signature: Field required")
        elif not isinstance(block.get("data"), str):
            self.add("thinking.signature", f"{where}.redacted_thinking.data: Field required")
        if block.get("cache_control") is not None:
            self.add("cache_control.thinking", f"{where}: thinking blocks cannot be marked with cache_control")

    def block(self, block: Json, role: str, where: str) -> None:
        kind = block["type"]
        if kind not in BLOCK_TYPES:
            self.add(
                "block.type",
                f"{where}.type: Input tag {kind!r} found using 'type' does not match any of the expected tags",
            )
            return
        allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS
        if kind not in allowed:
            self.add("block.role", f"{where}: {kind} blocks are not allowed in {role} messages")
        if kind in THINKING_BLOCKS:
            self.thinking(block, where)
            return
        self.cache_control(block, where)
        handler: dict[str, Callable[[Json, str], None]] = {
            "text": self.text,
            "image": self.image,
            "document": self.document,
            "tool_use": self.tool_use,
            "tool_result": self.tool_result,
        }
        if kind in handler:
            handler[kind](block, where)

    # ---- the request -----------------------------------------------------------------------------------

    def top_level(self) -> bool:
        """Fields outside `messages`; False when `messages` cannot be read at all."""
        body = self.body
        if not isinstance(body.get("model"), str) or not body["model"]:
            self.add("model.required", "model: Field required")
        max_tokens = body.get("max_tokens")
        if not _is_int(max_tokens) or max_tokens < 0:
            self.add("max_tokens.required", "max_tokens: Field required (a positive integer)")
        elif max_tokens == 0:
            self.add(
                "max_tokens.zero",
                "max_tokens: 0 asks for no answer (cache pre-warming); the offline API wants a positive integer",
            )
        if "stream" in body and not isinstance(body["stream"], bool):
            self.add("stream.bool", "stream: Input should be a valid boolean")
        for name in ("temperature", "top_p"):
            if name in body and not (_is_number(body[name]) and 0 <= body[name] <= 1):
                self.add("sampling.range", f"{name}: Input should be a number between 0 and 1")
        if "top_k" in body and not (_is_int(body["top_k"]) and body["top_k"] >= 0):
            self.add("sampling.range", "top_k: Input should be a non-negative integer")
        messages = body.get("messages")
        if not isinstance(messages, list):
            self.add("messages.required", "messages: Field required")
            return False
        if not messages:
            self.add("messages.nonempty", "messages: at least one message is required")
            return False
        if len(messages) > MAX_MESSAGES:
            self.add("messages.max", f"messages: at most {MAX_MESSAGES} messages are allowed")
        readable = True
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                self.add("message.shape", f"messages.{index}: each message must be an object with role and content")
                readable = False
                continue
            content = message.get("content")
            if not isinstance(content, (str, list)):
                self.add(
                    "message.shape",
                    f"messages.{index}.content: Input should be a valid string or list of content blocks",
                )
                readable = False
            elif isinstance(content, list) and not all(
                isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
            ):
                self.add("message.shape", f"messages.{index}.content: each content block must be an object with a type")
                readable = False
        return readable

    def tools(self) -> set[str]:
        tools = self.body.get("tools")
        if tools is None:
            return set()
        if not isinstance(tools, list):
            self.add("tools.shape", "tools: Input should be a valid list")
            return set()
        names: list[str] = []
        for index, tool in enumerate(tools):
            where = f"tools.{index}"
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
                self.add("tools.shape", f"{where}.name: Field required")
                continue
            names.append(tool["name"])
            self.cache_control(tool, where)
            if tool.get("type") not in (None, "custom"):
                continue  # a server tool (web_search_..., bash_..., ...): its own schema
            if not TOOL_NAME.fullmatch(tool["name"]):
                self.add("tools.name", f"{where}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict):
                self.add("tools.shape", f"{where}.custom.input_schema: Field required")
            elif schema.get("type") != "object":
                self.add("tools.shape", f"{where}.custom.input_schema.type: Input should be 'object'")
        if len(names) != len(set(names)):
            duplicates = sorted({n for n in names if names.count(n) > 1})
            self.add("tools.unique", f"tools: Tool names must be unique. ({', '.join(duplicates)})")
        return set(names)

    def system(self) -> None:
        system = self.body.get("system")
        if system is None or isinstance(system, str):
            return
        if not isinstance(system, list):
            self.add("system.shape", "system: Input should be a valid string or list of text blocks")
            return
        for index, block in enumerate(system):
            where = f"system.{index}"
            if not isinstance(block, dict) or block.get("type") != "text":
                self.add("system.shape", f"{where}: system blocks must be text blocks")
                continue
            self.cache_control(block, where)
            text = block.get("text")
            if not isinstance(text, str) or not text:
                self.add("system.shape", f"{where}: text content blocks must be non-empty")

    def thinking_config(self) -> bool:
        """True when thinking is on (enabled or adaptive)."""
        thinking = self.body.get("thinking")
        if thinking is None:
            return False
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if kind not in ("enabled", "disabled", "adaptive"):
            self.add("thinking.config", "thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'")
            return False
        assert isinstance(thinking, dict)
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            max_tokens = self.body.get("max_tokens")
            if not _is_int(budget) or budget < 1024:
                self.add(
                    "thinking.config", "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                )
            elif _is_int(max_tokens) and budget >= max_tokens:
                self.add("thinking.config", "`max_tokens` must be greater than `thinking.budget_tokens`")
        return bool(kind != "disabled")

    def conversation(self, messages: list[Json], tool_names: set[str], thinking_on: bool) -> None:
        last = len(messages) - 1
        pending: list[str] = []  # tool_use ids of the previous assistant message
        pending_at = -1
        seen_ids: set[str] = set()
        uses_tools = False
        for index, message in enumerate(messages):
            role = message["role"]
            where = f"messages.{index}"
            if role not in ("user", "assistant"):
                self.add("message.role", f"{where}.role: Input should be 'user' or 'assistant'")
                pending = []
                continue
            if index == 0 and role != "user":
                self.add("messages.first_user", 'messages: first message must use the "user" role')
            if index and messages[index - 1].get("role") == role:
                self.add(
                    "messages.alternate",
                    f"{where}: roles must alternate between user and assistant (the "
                    "bridge never sends two messages of one role in a row)",
                )
            content = message["content"]
            blocks: list[Json] = (
                [{"type": "text", "text": content}]
                if isinstance(content, str) and content
                else ([] if isinstance(content, str) else content)
            )
            if not blocks and not (role == "assistant" and index == last):
                self.add(
                    "message.nonempty",
                    f"{where}: all messages must have non-empty content except for the "
                    "optional final assistant message",
                )
            for position, block in enumerate(blocks):
                self.block(block, role, f"{where}.content.{position}")
                if block["type"] in ("tool_use", "tool_result"):
                    uses_tools = True
            if role == "user":
                self.answers(blocks, pending, pending_at, where)
                pending = []
                continue
            if pending:  # an assistant message right after one with unanswered tool_use blocks
                self.missing(pending, pending_at)
            pending, pending_at = [], index
            for position, block in enumerate(blocks):
                if block["type"] != "tool_use" or not isinstance(block.get("id"), str):
                    continue
                if block["id"] in seen_ids:
                    self.add("tool_use.unique", f"{where}.content.{position}: `tool_use` ids must be unique")
                    continue
                seen_ids.add(block["id"])
                pending.append(block["id"])
                if tool_names and block.get("name") not in tool_names:
                    self.add(
                        "tool_use.known",
                        f"{where}.content.{position}: tool_use names tool "
                        f"{block.get('name')!r}, which is not among the request's tools",
                    )
            self.assistant(blocks, index, last, thinking_on, where)
        if pending:
            self.missing(pending, pending_at)
        if uses_tools and not tool_names:
            self.add("tools.required", "Requests which include `tool_use` or `tool_result` blocks must define tools.")
        if thinking_on:
            self.thinking_loop(messages)

    def answers(self, blocks: list[Json], pending: list[str], pending_at: int, where: str) -> None:
        """A user message: its tool_result blocks against the previous assistant message's tool_use ids."""
        answered: set[str] = set()
        for position, block in enumerate(blocks):
            if block["type"] != "tool_result":
                continue
            use_id = block.get("tool_use_id")
            here = f"{where}.content.{position}"
            if use_id not in pending:
                self.add(
                    "pairing.unexpected",
                    f"{here}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{use_id}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.",
                )
            elif use_id in answered:
                self.add(
                    "pairing.duplicate",
                    f"{here}: each tool_use must have a single result. Found multiple "
                    f"`tool_result` blocks with id: {use_id}",
                )
            else:
                answered.add(str(use_id))
        missing = [i for i in pending if i not in answered]
        if missing:
            self.missing(missing, pending_at)
        elif pending:
            leading = 0
            while leading < len(blocks) and blocks[leading]["type"] == "tool_result":
                leading += 1
            if leading < len(pending):
                self.add(
                    "pairing.first",
                    f"{where}: Did not find {len(pending)} `tool_result` block(s) at the "
                    "beginning of this message. Messages following `tool_use` blocks must "
                    "begin with a matching number of `tool_result` blocks.",
                )

    def missing(self, ids: list[str], at: int) -> None:
        self.add(
            "pairing.missing",
            f"messages.{at}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(ids)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message.",
        )

    def assistant(self, blocks: list[Json], index: int, last: int, thinking_on: bool, where: str) -> None:
        kinds = [b["type"] for b in blocks]
        if any(k in THINKING_BLOCKS for k in kinds) and kinds[0] not in THINKING_BLOCKS:
            self.add(
                "thinking.first",
                f"{where}.content.0: If an assistant message contains any thinking blocks, "
                f"the first block must be thinking or redacted_thinking. Found {kinds[0]}.",
            )
        if index != last:
            return
        if not thinking_on and any(k in THINKING_BLOCKS for k in kinds):
            self.add(
                "thinking.disabled_final",
                f"{where}: When thinking is disabled, an `assistant` message in the "
                "final position cannot contain `thinking`.",
            )
        if blocks and blocks[-1]["type"] == "text":
            text = blocks[-1].get("text")
            if isinstance(text, str) and text != text.rstrip():
                self.add(
                    "final.trailing_whitespace", "messages: final assistant content cannot end with trailing whitespace"
                )

    def thinking_loop(self, messages: list[Json]) -> None:
        """With thinking on, a request that continues a tool loop (the last message answers tool_use blocks)
        must send that assistant message starting with its thinking block."""
        if len(messages) < 2 or messages[-1]["role"] != "user":
            return
        last = messages[-1]["content"]
        if not isinstance(last, list) or not any(b["type"] == "tool_result" for b in last):
            return
        previous = messages[-2]
        blocks = previous["content"] if isinstance(previous["content"], list) else []
        first = blocks[0]["type"] if blocks else "nothing"
        if previous["role"] == "assistant" and first not in THINKING_BLOCKS:
            self.add(
                "thinking.final",
                f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a "
                "final `assistant` message must start with a thinking block (preceeding the "
                "lastmost set of `tool_use` and `tool_result` blocks).",
            )

    def totals(self) -> None:
        if self.images > MAX_IMAGES:
            self.add("image.count", f"messages: too many images: {self.images} > {MAX_IMAGES}")
        if len(self.cache_ttls) > MAX_CACHE_BREAKPOINTS:
            self.add(
                "cache_control.max",
                f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {len(self.cache_ttls)}.",
            )
        seen_short = None
        for where, ttl in self.cache_ttls:
            if ttl == "5m":
                seen_short = seen_short or where
            elif seen_short is not None:
                self.add(
                    "cache_control.ttl_order",
                    f"{where}: a cache_control with ttl='1h' cannot come after one with ttl='5m' ({seen_short})",
                )
                break


def request_violations(body: Any) -> list[Violation]:
    """Every reason the real API (or the bridge's own promise, for `strict` rules) rejects this body."""
    if not isinstance(body, dict):
        return [Violation("body.object", "request body must be a JSON object")]
    check = _Check(body)
    readable = check.top_level()
    tool_names = check.tools()
    check.system()
    thinking_on = check.thinking_config()
    if readable:
        check.conversation(body["messages"], tool_names, thinking_on)
    check.totals()
    return check.found


def request_errors(body: Any) -> list[str]:
    """Every reason the offline API answers 400 to this `/v1/messages` body (empty = valid)."""
    return [violation.message for violation in request_violations(body)]


def history_errors(messages: list[Json], *, tools: list[Json] | None = None) -> list[str]:
    """The violations of a history alone (a stand-in model, max_tokens and the tools its tool_use blocks name)."""
    if tools is None:
        blocks = [
            b for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list) for b in m["content"]
        ]
        names = sorted({str(b.get("name")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"})
        tools = [{"name": name, "input_schema": {"type": "object"}} for name in names]
    body: Json = {"model": "oracle", "max_tokens": 1024, "messages": messages}
    if tools:
        body["tools"] = tools
    return request_errors(body)
