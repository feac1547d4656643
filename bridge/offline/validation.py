"""What the real Messages API rejects with 400 `invalid_request_error`, checked before anything is played."""

from __future__ import annotations

from typing import Any

from bridge.messages import pairing_errors
from bridge.offline.scenario import Json


def _tool_names(tools: Any, errors: list[str]) -> set[str]:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        errors.append("tools: Input should be a valid list")
        return set()
    names: list[str] = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            errors.append(f"tools.{index}.name: Field required")
            continue
        names.append(tool["name"])
        is_custom = tool.get("type") in (None, "custom")
        if is_custom and not isinstance(tool.get("input_schema"), dict):
            errors.append(f"tools.{index}.input_schema: Field required")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        errors.append(f"tools: Tool names must be unique: {', '.join(duplicates)}")
    return set(names)


def _blocks(message: Json) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def request_errors(body: Any) -> list[str]:
    """Every reason the real API would answer 400 to this `/v1/messages` body (empty = valid)."""
    if not isinstance(body, dict):
        return ["request body must be a JSON object"]
    errors: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        errors.append("model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        errors.append("max_tokens: Field required (a positive integer)")
    messages = body.get("messages")
    if not isinstance(messages, list):
        errors.append("messages: Field required")
        return errors
    if not all(isinstance(m, dict) for m in messages):
        errors.append("messages: each message must be an object with role and content")
        return errors
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, (str, list)):
            errors.append(f"messages.{index}.content: Input should be a valid string or list of content blocks")
        elif isinstance(content, list) and not all(isinstance(b, dict) and isinstance(b.get("type"), str)
                                                   for b in content):
            errors.append(f"messages.{index}.content: each content block must be an object with a type")
    if errors:
        return errors
    errors.extend(pairing_errors(messages))
    names = _tool_names(body.get("tools"), errors)
    uses_tools = False
    for index, message in enumerate(messages):
        for block in _blocks(message):
            if block["type"] in ("tool_use", "tool_result"):
                uses_tools = True
            if block["type"] == "tool_use" and block.get("name") not in names:
                errors.append(f"messages.{index}: tool_use names tool {block.get('name')!r}, "
                              "which is not among the request's tools")
    if uses_tools and not names:
        errors.append("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            errors.append("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        elif isinstance(max_tokens, int) and budget >= max_tokens:
            errors.append("`max_tokens` must be greater than `thinking.budget_tokens`")
    return errors
