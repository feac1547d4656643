"""The offline API's oracle (bridge/offline/validation.py): a table of requests the real Messages API accepts and
rejects, written from the API's rules — and a check that it shares no code with the repair it judges."""

from __future__ import annotations

import ast
import random
from pathlib import Path
from typing import Any

import pytest

from bridge.messages import repair_pairing
from bridge.offline import validation
from bridge.offline.rules import RULES
from bridge.offline.validation import history_errors, request_violations

Json = dict[str, Any]
TOOLS: list[Json] = [
    {"name": "Bash", "input_schema": {"type": "object"}},
    {"name": "Read", "input_schema": {"type": "object"}},
]
USE: Json = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
USE2: Json = {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/a"}}
RESULT: Json = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}
RESULT2: Json = {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "x"}]}
THINK: Json = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
PNG: Json = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
EPHEMERAL: Json = {"type": "ephemeral"}


def user(*blocks: Any) -> Json:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> Json:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str, **extra: Any) -> Json:
    return {"type": "text", "text": value, **extra}


def body(*messages: Json, **fields: Any) -> Json:
    request: Json = {"model": "claude-x", "max_tokens": 2048, "messages": list(messages), "tools": TOOLS}
    request.update(fields)
    return {k: v for k, v in request.items() if v is not None}


def image(media_type: str = "image/png", data: str = "iVBORw0KGgo=") -> Json:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


GO = user(text("go"))

# name -> (request body, the rules it breaks; empty = the real API accepts it)
TABLE: dict[str, tuple[Any, set[str]]] = {
    # accepted
    "one user message": (body(GO), set()),
    "string content": (body({"role": "user", "content": "hello"}), set()),
    "a tool round trip": (body(GO, assistant(text("running"), USE), user(RESULT, text("and then?"))), set()),
    "parallel tools, results in any order": (body(GO, assistant(USE, USE2), user(RESULT2, RESULT)), set()),
    "tool_result with an image": (body(GO, assistant(USE), user({**RESULT, "content": [PNG]})), set()),
    "prefill": (body(GO, assistant(text("Sure"))), set()),
    "empty final assistant message": (body(GO, assistant()), set()),
    "images of the four types": (
        body(
            user(
                image("image/jpeg"),
                image("image/png"),
                image("image/gif"),
                image("image/webp"),
                text("what are these?"),
            )
        ),
        set(),
    ),
    "thinking with a signature": (
        body(GO, assistant(THINK, text("ok")), user(text("more")), thinking={"type": "enabled", "budget_tokens": 1024}),
        set(),
    ),
    "thinking continues a tool loop": (
        body(GO, assistant(THINK, USE), user(RESULT), thinking={"type": "enabled", "budget_tokens": 1024}),
        set(),
    ),
    "redacted thinking first": (
        body(
            GO,
            assistant({"type": "redacted_thinking", "data": "x"}, USE),
            user(RESULT),
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        set(),
    ),
    "four cache breakpoints": (
        body(
            user(text("a", cache_control=EPHEMERAL)),
            assistant(text("b", cache_control=EPHEMERAL)),
            user(text("c", cache_control={"type": "ephemeral", "ttl": "5m"})),
            system=[text("sys", cache_control=EPHEMERAL)],
        ),
        set(),
    ),
    "1h before 5m": (
        body(
            user(text("a", cache_control=EPHEMERAL)),
            system=[text("sys", cache_control={"type": "ephemeral", "ttl": "1h"})],
        ),
        set(),
    ),
    "no tools when none are used": (body(GO, tools=None), set()),
    "server tool type": (body(GO, tools=[*TOOLS, {"type": "web_search_20250305", "name": "web_search"}]), set()),
    "a document": (
        body(
            user(
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
                text("summarize"),
            )
        ),
        set(),
    ),
    # rejected by the real API
    "not an object": ([], {"body.object"}),
    "no model": (body(GO, model=None), {"model.required"}),
    "no max_tokens": (body(GO, max_tokens=None), {"max_tokens.required"}),
    "negative max_tokens": (body(GO, max_tokens=-1), {"max_tokens.required"}),
    "no messages": (body(messages=None) | {"messages": None}, {"messages.required"}),
    "zero messages": (body(), {"messages.nonempty"}),
    "100,002 messages": (body(*[user(text("a")), assistant(text("b"))] * 50_001), {"messages.max"}),
    "a message is not an object": (body("hi"), {"message.shape"}),  # type: ignore[arg-type]
    "content is a number": (body({"role": "user", "content": 3}), {"message.shape"}),
    "a block without a type": (body(user({"text": "x"})), {"message.shape"}),
    "unknown role": (body({"role": "system", "content": "x"}), {"message.role"}),
    "first message from the assistant": (body(assistant(text("hi")), user(text("a"))), {"messages.first_user"}),
    "empty user content": (body(user()), {"message.nonempty"}),
    "empty string content": (body({"role": "user", "content": ""}), {"message.nonempty"}),
    "empty assistant content mid-history": (body(GO, assistant(), user(text("a"))), {"message.nonempty"}),
    "unknown block type": (body(user({"type": "audio", "data": "x"})), {"block.type"}),
    "tool_result in an assistant message": (body(GO, assistant(RESULT)), {"block.role"}),
    "tool_use in a user message": (body(user(text("a"), USE)), {"block.role"}),
    "text without text": (body(user({"type": "text"})), {"text.shape"}),
    "empty text block": (body(user(text(""))), {"text.nonempty"}),
    "whitespace-only text": (body(user(text("  \n"))), {"text.whitespace"}),
    "whitespace string content": (body({"role": "user", "content": "  "}), {"text.whitespace"}),
    "svg image": (body(user(image("image/svg+xml"), text("see"))), {"image.source"}),
    "image without a media type": (body(user(image(None), text("see"))), {"image.source"}),  # type: ignore[arg-type]
    "image without data": (
        body(user({"type": "image", "source": {"type": "base64", "media_type": "image/png"}})),
        {"image.source"},
    ),
    "image over 5 MB": (body(user(image(data="A" * (5 * 1024 * 1024 + 4)))), {"image.size"}),
    "101 images": (body(user(*[image() for _ in range(101)])), {"image.count"}),
    "document of an unknown source": (
        body(user({"type": "document", "source": {"type": "zip", "data": "x"}})),
        {"document.source"},
    ),
    "pdf with the wrong media type": (
        body(user({"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": "x"}})),
        {"document.source"},
    ),
    "tool_use without input": (
        body(GO, assistant({"type": "tool_use", "id": "toolu_1", "name": "Bash"}), user(RESULT)),
        {"tool_use.shape"},
    ),
    "tool_use id with a dot": (
        body(GO, assistant({**USE, "id": "call.1"}), user({**RESULT, "tool_use_id": "call.1"})),
        {"tool_use.id"},
    ),
    "tool_use name with a slash": (
        body(
            GO,
            assistant({**USE, "name": "a/b"}),
            user(RESULT),
            tools=[*TOOLS, {"name": "a/b", "input_schema": {"type": "object"}}],
        ),
        {"tool_use.name", "tools.name"},
    ),
    "duplicate tool_use ids": (body(GO, assistant(USE, USE), user(RESULT)), {"tool_use.unique"}),
    "a tool_use id used twice": (
        body(GO, assistant(USE), user(RESULT), assistant(USE), user(RESULT)),
        {"tool_use.unique", "pairing.unexpected"},
    ),
    "tool_result without a tool_use_id": (
        body(GO, assistant(USE), user({"type": "tool_result", "content": "x"})),
        {"tool_result.shape", "pairing.unexpected", "pairing.missing"},
    ),
    "tool_result content of a tool_use block": (
        body(GO, assistant(USE), user({**RESULT, "content": [USE2]})),
        {"tool_result.shape"},
    ),
    "is_error as a string": (body(GO, assistant(USE), user({**RESULT, "is_error": "yes"})), {"tool_result.shape"}),
    "empty text in a tool_result": (
        body(GO, assistant(USE), user({**RESULT, "content": [text("")]})),
        {"text.nonempty"},
    ),
    "tool_use without result": (body(GO, assistant(USE), user(text("next"))), {"pairing.missing"}),
    "tool_use at the end": (body(GO, assistant(USE)), {"pairing.missing"}),
    "one of two results missing": (body(GO, assistant(USE, USE2), user(RESULT)), {"pairing.missing"}),
    "tool_result without tool_use": (body(GO, assistant(text("ok")), user(RESULT)), {"pairing.unexpected"}),
    "a result for an older message": (
        body(GO, assistant(USE), user(RESULT), assistant(text("ok")), user(RESULT)),
        {"pairing.unexpected"},
    ),
    "two results for one tool_use": (body(GO, assistant(USE), user(RESULT, RESULT)), {"pairing.duplicate"}),
    "text before the tool_result": (body(GO, assistant(USE), user(text("note"), RESULT)), {"pairing.first"}),
    "tool_use without tools": (body(GO, assistant(USE), user(RESULT), tools=None), {"tools.required"}),
    "tools is an object": (body(GO, tools={"name": "Bash"}), {"tools.shape"}),
    "tool without input_schema": (body(GO, tools=[{"name": "Bash"}]), {"tools.shape"}),
    "tool schema not an object type": (
        body(GO, tools=[{"name": "Bash", "input_schema": {"type": "array"}}]),
        {"tools.shape"},
    ),
    "tool name with a space": (
        body(GO, tools=[{"name": "my tool", "input_schema": {"type": "object"}}]),
        {"tools.name"},
    ),
    "tool name of 65 characters": (
        body(GO, tools=[{"name": "t" * 65, "input_schema": {"type": "object"}}]),
        {"tools.name"},
    ),
    "duplicate tool names": (body(GO, tools=[*TOOLS, TOOLS[0]]), {"tools.unique"}),
    "thinking budget under 1024": (body(GO, thinking={"type": "enabled", "budget_tokens": 512}), {"thinking.config"}),
    "thinking budget over max_tokens": (
        body(GO, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 4000}),
        {"thinking.config"},
    ),
    "unknown thinking type": (body(GO, thinking={"type": "always"}), {"thinking.config"}),
    "thinking without signature": (
        body(
            GO,
            assistant({"type": "thinking", "thinking": "hmm"}, text("a")),
            user(text("b")),
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        {"thinking.signature"},
    ),
    "redacted thinking without data": (
        body(
            GO,
            assistant({"type": "redacted_thinking"}, text("a")),
            user(text("b")),
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        {"thinking.signature"},
    ),
    "text before thinking": (
        body(GO, assistant(text("a"), THINK), user(text("b")), thinking={"type": "enabled", "budget_tokens": 1024}),
        {"thinking.first"},
    ),
    "thinking on, tool loop without thinking": (
        body(GO, assistant(USE), user(RESULT), thinking={"type": "enabled", "budget_tokens": 1024}),
        {"thinking.final"},
    ),
    "thinking off, final assistant thinks": (body(GO, assistant(THINK, text("a"))), {"thinking.disabled_final"}),
    "cache_control of another type": (
        body(user(text("a", cache_control={"type": "persistent"}))),
        {"cache_control.shape"},
    ),
    "cache_control ttl of 10m": (
        body(user(text("a", cache_control={"type": "ephemeral", "ttl": "10m"}))),
        {"cache_control.shape"},
    ),
    "five cache breakpoints": (
        body(
            user(text("a", cache_control=EPHEMERAL), text("b", cache_control=EPHEMERAL)),
            assistant(text("c", cache_control=EPHEMERAL)),
            user(text("d", cache_control=EPHEMERAL)),
            system=[text("sys", cache_control=EPHEMERAL)],
        ),
        {"cache_control.max"},
    ),
    "1h after 5m": (
        body(
            user(text("a", cache_control={"type": "ephemeral", "ttl": "1h"})),
            system=[text("sys", cache_control=EPHEMERAL)],
        ),
        {"cache_control.ttl_order"},
    ),
    "cache_control on thinking": (
        body(
            GO,
            assistant({**THINK, "cache_control": EPHEMERAL}, text("a")),
            user(text("b")),
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        {"cache_control.thinking"},
    ),
    "prefill ending in a space": (body(GO, assistant(text("Sure "))), {"final.trailing_whitespace"}),
    "system of a number": (body(GO, system=3), {"system.shape"}),
    "system with an empty text block": (body(GO, system=[text("")]), {"system.shape"}),
    "system with an image": (body(GO, system=[PNG]), {"system.shape"}),
    "temperature 1.5": (body(GO, temperature=1.5), {"sampling.range"}),
    "top_k negative": (body(GO, top_k=-1), {"sampling.range"}),
    "stream as a string": (body(GO, stream="yes"), {"stream.bool"}),
    # rejected because the bridge promises never to send it (the real API accepts it)
    "max_tokens 0 (cache pre-warm)": (body(GO, max_tokens=0), {"max_tokens.zero"}),
    "two user messages": (body(user(text("a")), user(text("b"))), {"messages.alternate"}),
    "tool_use of a tool not offered": (
        body(GO, assistant(USE), user(RESULT), tools=[{"name": "Read", "input_schema": {"type": "object"}}]),
        {"tool_use.known"},
    ),
}


@pytest.mark.parametrize("case", list(TABLE))
def test_the_table(case: str) -> None:
    request, expected = TABLE[case]
    found = {v.rule for v in request_violations(request)}
    assert found == expected, [v.message for v in request_violations(request)]


def test_every_rule_has_a_rejected_case() -> None:
    covered = {rule for _, rules in TABLE.values() for rule in rules}
    assert covered == {rule.id for rule in RULES}


def test_messages_quote_the_api_where_it_is_known() -> None:
    def messages(request: Json) -> str:
        return " | ".join(v.message for v in request_violations(request))

    assert messages(TABLE["tool_use without result"][0]) == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )
    assert messages(TABLE["tool_result without tool_use"][0]) == (
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each "
        "`tool_result` block must have a corresponding `tool_use` block in the previous message."
    )
    assert messages(TABLE["five cache breakpoints"][0]) == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )
    assert "image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes" in messages(TABLE["image over 5 MB"][0])
    assert messages(TABLE["tool_use without tools"][0]) == (
        "Requests which include `tool_use` or `tool_result` blocks must define tools."
    )


def test_the_oracle_imports_nothing_from_the_bridge() -> None:
    """It judges `bridge/messages.py`'s repair, so it must not share code with it (or with anything above
    bridge/offline)."""
    tree = ast.parse(Path(validation.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name.split(".")[0] == "bridge"}, imported


# ---- the oracle judging the repair: random damaged histories, repaired, must be what the API accepts --------


def _random_history(rng: random.Random) -> list[Json]:
    history: list[Json] = []
    next_id = 0
    open_ids: list[str] = []
    for _ in range(rng.randint(1, 12)):
        role = rng.choice(["user", "assistant", "user"])
        blocks: list[Json] = []
        for _ in range(rng.randint(0, 4)):
            roll = rng.random()
            if role == "assistant" and roll < 0.35:
                next_id += 1
                open_ids.append(f"toolu_{next_id}")
                blocks.append(
                    {"type": "tool_use", "id": open_ids[-1], "name": rng.choice(["Bash", "Read"]), "input": {}}
                )
            elif role == "user" and roll < 0.4 and (open_ids or rng.random() < 0.3):
                use_id = rng.choice(open_ids) if open_ids and rng.random() < 0.8 else f"toolu_stray{next_id}"
                blocks.append({"type": "tool_result", "tool_use_id": use_id, "content": "out"})
            elif roll < 0.5:
                blocks.append(text(rng.choice(["", "  ", "\n"])))
            else:
                blocks.append(text(rng.choice(["hello", "a b", "done.", "x"])))
        history.append({"role": role, "content": blocks})
    return history


STRAY: Json = {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "out"}


def test_repair_of_a_transcript_whose_first_prompt_line_was_lost() -> None:
    """A transcript whose first user line is corrupt (skipped on load): assistant(tool_use), user(result), ...
    The leading assistant message is dropped, its result then answers nothing and is dropped too."""
    loaded = [assistant(USE), user(RESULT), assistant(text("Here it is.")), user(text("thanks"))]
    assert history_errors(repair_pairing(loaded), tools=TOOLS) == []


def test_repair_of_a_stray_result_between_two_answers() -> None:
    history = [GO, assistant(text("a")), user(STRAY), assistant(text("b")), user(text("c"))]
    assert history_errors(repair_pairing(history), tools=TOOLS) == []


def test_repaired_histories_pass_the_oracle() -> None:
    rng = random.Random(20261203)
    failures: list[tuple[list[Json], list[str]]] = []
    for _ in range(3000):
        history = _random_history(rng)
        repaired = repair_pairing(history)
        if not repaired:
            continue
        if repaired[-1]["role"] == "assistant":
            repaired.append(user(text("next")))
        errors = history_errors(repaired, tools=TOOLS)
        if errors:
            failures.append((history, errors))
    assert not failures, failures[:3]
