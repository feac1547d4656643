"""The oracle's table: every rule a request can break, with where it comes from, and the API's limits.

Like `validation.py`, it imports nothing from the bridge (it judges the bridge's own repair).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Json = dict[str, Any]
Source = Literal["api", "strict"]


@dataclass(frozen=True)
class Rule:
    id: str
    source: Source
    summary: str


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str


# One rule per line, as the table is read.
# fmt: off
RULES: tuple[Rule, ...] = (
    Rule("body.object", "api", "the request body is a JSON object"),
    Rule("model.required", "api", "`model` is a non-empty string"),
    Rule("max_tokens.required", "api", "`max_tokens` is a non-negative integer"),
    Rule("max_tokens.zero", "strict",
         "`max_tokens: 0` only pre-warms the prompt cache (no answer); the bridge always wants an answer"),
    Rule("messages.required", "api", "`messages` is a list"),
    Rule("messages.nonempty", "api", "at least one message"),
    Rule("messages.max", "api", "at most 100,000 messages"),
    Rule("message.shape", "api", "each message is an object with `role` and `content` (a string or a list of "
                                 "content blocks, each an object with a `type`)"),
    Rule("message.role", "api", "`role` is `user` or `assistant`"),
    Rule("messages.first_user", "api", "the first message uses the user role"),
    Rule("messages.alternate", "strict",
         "roles alternate (the API merges consecutive turns of one role; the bridge's history never has them)"),
    Rule("message.nonempty", "api", "every message has content, except an optional final assistant message"),
    Rule("block.type", "api", "every content block has a type the API knows"),
    Rule("block.role", "api", "tool_result blocks only in user messages; tool_use, thinking and "
                              "redacted_thinking only in assistant messages"),
    Rule("text.shape", "api", "a text block has a string `text`"),
    Rule("text.nonempty", "api", "text blocks are non-empty"),
    Rule("text.whitespace", "api", "text blocks contain non-whitespace text"),
    Rule("image.source", "api", "an image is base64 (media type image/jpeg, image/png, image/gif or "
                                "image/webp, string data), a url or a file id"),
    Rule("image.size", "api", "a base64 image is at most 5 MB (5,242,880 bytes of data)"),
    Rule("image.count", "api", "at most 100 images in a request"),
    Rule("document.source", "api", "a document's source is a base64 PDF, plain text, content blocks, a url or a "
                                   "file id"),
    Rule("tool_use.shape", "api", "a tool_use has a string `id`, a string `name` and an object `input`"),
    Rule("tool_use.id", "api", "a tool_use id matches ^[a-zA-Z0-9_-]+$"),
    Rule("tool_use.name", "api", "a tool_use name matches ^[a-zA-Z0-9_-]{1,64}$"),
    Rule("tool_use.unique", "api", "tool_use ids are unique in the request"),
    Rule("tool_use.known", "strict",
         "a tool_use names a tool of the request's `tools` (the API is not known to check this; a model that "
         "sees a call it can never make again is the bug issue 11 item 4 describes)"),
    Rule("tool_result.shape", "api", "a tool_result has a string `tool_use_id`, content that is a string or a "
                                     "list of text/image/document/search_result/tool_reference blocks, and a "
                                     "boolean `is_error` if any"),
    Rule("pairing.missing", "api", "every tool_use has its tool_result in the next message"),
    Rule("pairing.unexpected", "api", "every tool_result answers a tool_use of the previous message"),
    Rule("pairing.duplicate", "api", "a tool_use has a single tool_result"),
    Rule("pairing.first", "api", "a message following tool_use blocks begins with its tool_result blocks"),
    Rule("tools.required", "api", "a request with tool_use or tool_result blocks defines tools"),
    Rule("tools.shape", "api", "`tools` is a list of objects; a custom tool has a name and an object "
                               "`input_schema` of type object"),
    Rule("tools.name", "api", "a custom tool name matches ^[a-zA-Z0-9_-]{1,64}$"),
    Rule("tools.unique", "api", "tool names are unique"),
    Rule("thinking.config", "api", "`thinking` is enabled (budget_tokens >= 1024 and < max_tokens), disabled "
                                   "or adaptive"),
    Rule("thinking.signature", "api", "a thinking block has string `thinking` and `signature`; a "
                                      "redacted_thinking block has string `data`"),
    Rule("thinking.first", "api", "an assistant message with thinking blocks starts with one"),
    Rule("thinking.final", "api", "with thinking enabled, the assistant message of the tool loop being "
                                  "continued starts with a thinking block"),
    Rule("thinking.disabled_final", "api",
         "with thinking disabled, an assistant message in the final position has no thinking"),
    Rule("cache_control.shape", "api", "cache_control is {type: ephemeral, ttl?: 5m | 1h}"),
    Rule("cache_control.max", "api", "at most 4 blocks with cache_control"),
    Rule("cache_control.ttl_order", "api", "a 1h breakpoint never comes after a 5m one (tools, system, messages)"),
    Rule("cache_control.thinking", "api", "thinking blocks cannot carry cache_control"),
    Rule("final.trailing_whitespace", "api", "final assistant content does not end with whitespace"),
    Rule("system.shape", "api", "`system` is a string or a list of non-empty text blocks"),
    Rule("sampling.range", "api", "temperature and top_p are numbers in [0, 1]; top_k a non-negative integer"),
    Rule("stream.bool", "api", "`stream` is a boolean"),
)
# fmt: on
RULE_IDS = frozenset(rule.id for rule in RULES)

MAX_MESSAGES = 100_000
MAX_IMAGES = 100
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
MAX_CACHE_BREAKPOINTS = 4
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
USER_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_result", "container_upload"})
ASSISTANT_BLOCKS = frozenset(
    {
        "text",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "container_upload",
    }
)
BLOCK_TYPES = USER_BLOCKS | ASSISTANT_BLOCKS | {"tool_use"}
RESULT_CONTENT_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_reference"})
THINKING_BLOCKS = ("thinking", "redacted_thinking")
