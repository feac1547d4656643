"""Reading a request the way a reactive scenario needs: the user's prompt, this turn's tool calls and results."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bridge.offline.scenario import Json

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_CWD = re.compile(r"^\s*(?:[-*]\s*)?Working directory:\s*(\S.*?)\s*$", re.MULTILINE)


def _blocks(message: Any) -> list[Json]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def result_text(block: Json) -> str:
    """The text of a tool_result's content (a string or a list of blocks)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


NOTIFICATION = "<task-notification>"


def _is_marker(block: Json) -> bool:
    """Text the bridge adds to a user message (markers, hook notes, a background agent's news): not typed."""
    text = str(block.get("text", "")).strip()
    return text.startswith("[Request interrupted by user") or text.startswith(("[hook", "[Stop hook]", NOTIFICATION))


def notifications(body: Json) -> list[str]:
    """The `<task-notification>` texts of the latest user message (background agents that ended)."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if not messages or messages[-1].get("role") != "user":
        return []
    return [
        str(b["text"])
        for b in _blocks(messages[-1])
        if b.get("type") == "text" and str(b.get("text", "")).startswith(NOTIFICATION)
    ]


def tag(text: str, name: str) -> str:
    """The text inside `<name>...</name>` of a notification ("" when absent)."""
    match = re.search(rf"<{name}>(.*?)</{name}>", text, re.DOTALL)
    return match.group(1).strip() if match else ""


def user_text(message: Json) -> str:
    """The user's own words in a message: text blocks, without `<system-reminder>` additions."""
    texts = [_REMINDER.sub("", str(b.get("text", ""))) for b in _blocks(message) if b.get("type") == "text"]
    return "\n".join(t.strip() for t in texts if t.strip())


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: Json
    result: str | None  # None = not answered yet
    is_error: bool


@dataclass(frozen=True)
class Turn:
    prompt: str  # the last thing the user typed ("" if none)
    calls: list[ToolCall]  # tool calls made since that prompt, in order

    def of(self, name: str) -> list[ToolCall]:
        return [c for c in self.calls if c.name == name]


def current_turn(body: Json) -> Turn:
    """The last user prompt (a user message with text and no tool_result) and the tool calls after it."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    start = 0
    prompt = ""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        blocks = _blocks(message)
        if message.get("role") == "user":
            # The last thing typed: after a cancel the bridge merges the marker (and any synthesized
            # tool_results) with the next prompt into one user message, so take its last own text block.
            typed = [b for b in blocks if b.get("type") == "text" and not _is_marker(b)]
            text = user_text({"content": typed[-1:]}) if typed else ""
            if text:
                start, prompt = index, text
                break
    results: dict[str, Json] = {}
    for message in messages[start:]:
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = block
    calls: list[ToolCall] = []
    for message in messages[start:]:
        if message.get("role") != "assistant":
            continue
        for block in _blocks(message):
            if block.get("type") == "tool_use":
                result = results.get(str(block.get("id")))
                calls.append(
                    ToolCall(
                        id=str(block.get("id")),
                        name=str(block.get("name")),
                        input=dict(block.get("input") or {}),
                        result=None if result is None else result_text(result),
                        is_error=bool(result and result.get("is_error")),
                    )
                )
    return Turn(prompt=prompt, calls=calls)


def system_text(body: Json) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


def working_directory(body: Json) -> str | None:
    """The session cwd from a `Working directory: /abs/path` line (system prompt first, then messages)."""
    texts = [system_text(body)] + [user_text(m) for m in body.get("messages", []) if isinstance(m, dict)]
    for text in texts:
        match = _CWD.search(text)
        if match:
            return match.group(1).strip("`'\"")
    return None


def tool_names(body: Json) -> set[str]:
    return {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}


def words(text: str, per_delta: int = 2) -> list[str]:
    """Split text into small deltas of a few words each, keeping every character (so they join back)."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    return ["".join(tokens[i : i + per_delta]) for i in range(0, len(tokens), per_delta)] or [text]


def text_response(text: str, *, delay_ms: int = 0, per_delta: int = 2) -> Json:
    return {
        "content": [{"type": "text", "deltas": words(text, per_delta)}],
        "stop_reason": "end_turn",
        "delay_ms": delay_ms,
    }


COMPACTION_MARK = "[compaction]"


def compaction_summary(body: Json) -> Json | None:
    """The answer to the bridge's summary request (its last text starts with `[compaction]`): a summary
    built from the real history — the user's prompts and the tool calls made — or None for other requests."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if not messages:
        return None
    texts = [b for b in _blocks(messages[-1]) if b.get("type") == "text"]
    if not texts or not str(texts[-1].get("text", "")).startswith(COMPACTION_MARK):
        return None
    prompts, calls = [], []
    for message in messages[:-1]:
        for block in _blocks(message):
            if message.get("role") == "user" and block.get("type") == "text":
                prompts.append(str(block.get("text", "")).strip().splitlines()[0][:120])
            elif block.get("type") == "tool_use":
                calls.append(f"{block.get('name')} {str(block.get('input'))[:100]}")
    lines = ["Task so far (offline summary):", *[f"- user: {p}" for p in prompts if p]]
    lines += [f"- tool: {c}" for c in calls] or ["- no tools used"]
    return text_response("\n".join(lines))
