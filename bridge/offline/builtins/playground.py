"""`playground` and `echo`: reactive scenarios keyed by what the user last typed."""

from __future__ import annotations

import os

from bridge.offline.builtins.common import (
    compaction_summary,
    current_turn,
    notifications,
    tag,
    text_response,
    tool_names,
    working_directory,
)
from bridge.offline.builtins.tour import tour
from bridge.offline.scenario import Json, RecordedRequest

OUTPUT_LINES = 20
ECHO_DELTAS = 20
HELP = """Commands this offline model understands:

- `tour` shows a whole small task: a plan, a look around, a file written and edited as diffs you review, \
and a command that asks first
- `run: <command>` runs a shell command with Bash
- `read: <path>` reads a file (a relative path from the session's folder)
- `think: <text>` thinks first, then answers
- `long` streams a long answer (for cancel tests); `long: <parts>` one of that many parts (20 ms each)
- `agent: <prompt>` hands `<prompt>` (any of these commands) to a general-purpose sub-agent
- `agents: <prompt> ;; <prompt> ...` starts several sub-agents in parallel
- `explore: <prompt>` hands it to a read-only Explore agent; `background: <prompt>` to a background agent
- anything else is echoed back"""
AGENT_COMMANDS = {
    "agent": ("general-purpose", False),
    "agents": ("general-purpose", False),
    "explore": ("Explore", False),
    "background": ("general-purpose", True),
}


def echo(request: RecordedRequest, *, delay_ms: int = 0) -> Json:
    if (summary := compaction_summary(request.body)) is not None:
        return summary
    return text_response(f"You said: {current_turn(request.body).prompt}", delay_ms=delay_ms)


def _first_lines(text: str, *, in_fence: bool = True) -> str:
    """The text's first lines; `in_fence`: to be shown inside a code fence, which a fence of its own would end."""
    lines = text.splitlines()
    shown = "\n".join(lines[:OUTPUT_LINES])
    if len(lines) > OUTPUT_LINES:
        shown += f"\n… ({len(lines) - OUTPUT_LINES} more lines)"
    return (shown.replace("```", "ˋˋˋ") if in_fence else shown) or "(no output)"


def _after_tool(name: str, subject: str, result: str, is_error: bool) -> Json:
    if name == "Agent":
        head = "The agent was stopped or failed" if is_error else "The agent reported"
        # the agent's answer is markdown: quoted as it is (a code block in a quote is still one)
        quoted = _first_lines(result, in_fence=False).replace("\n", "\n> ")
        return text_response(f"{head} (`{subject}`):\n\n> {quoted}", delay_ms=10)
    if is_error:
        text = f"`{name}` failed for `{subject}`:\n\n```\n{_first_lines(result)}\n```"
    elif name == "Bash":
        text = f"Output of `{subject}`:\n\n```\n{_first_lines(result)}\n```"
    else:
        text = f"The first lines of `{subject}`:\n\n```\n{_first_lines(result)}\n```"
    return text_response(text, delay_ms=10)


def _long_answer(parts: int = 500) -> Json:
    deltas = [f"Part {i + 1} of a long answer. " + ("\n\n" if i % 10 == 9 else "") for i in range(parts)]
    return {"content": [{"type": "text", "deltas": deltas}], "stop_reason": "end_turn", "delay_ms": 20}


def _images(body: Json) -> list[str]:
    """The media types of the images the last user message carries (a pasted screenshot)."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    content = messages[-1].get("content") if messages else None
    blocks = content if isinstance(content, list) else []
    images = [b for b in blocks if isinstance(b, dict) and b.get("type") == "image"]
    return [str((b.get("source") or {}).get("media_type")) for b in images]


def _echo_markdown(prompt: str, images: list[str] | None = None) -> Json:
    plural = "s" if images and len(images) > 1 else ""
    seen = f"I see {len(images)} image{plural} ({', '.join(images)}) with it.\n\n" if images else ""
    text = (
        f"## You said\n\n{prompt}\n\n{seen}This is the **offline playground** model. It can:\n\n"
        "- `run: <command>` — run a command\n- `read: <path>` — read a file\n"
        "- `think: <text>` — think, then answer\n- `long` — stream a long answer\n"
        "- `tour` — a whole small task: a plan, an edit you review, a command that asks\n\n"
        f"```text\n{prompt[:200]}\n```"
    )
    return {
        "content": [{"type": "text", "text": text, "chunks": ECHO_DELTAS}],
        "stop_reason": "end_turn",
        "delay_ms": 10,
    }


def playground(request: RecordedRequest) -> Json:
    if (summary := compaction_summary(request.body)) is not None:
        return summary
    turn = current_turn(request.body)
    prompt = turn.prompt.strip()
    command, _, argument = prompt.partition(":")
    command, argument = command.strip().lower(), argument.strip()
    if prompt.lower() == "tour":
        return tour(request, turn)
    if turn.calls:
        agents = [c for c in turn.calls if c.name == "Agent"]
        if len(agents) > 1 and agents[-1] is turn.calls[-1]:  # parallel agents: one report for all of them
            reports = [f"- `{c.input.get('description')}`: {_gist(c.result or '')}" for c in agents]
            return text_response("The agents reported:\n\n" + "\n".join(reports), delay_ms=10)
        call = turn.calls[-1]
        subject = str(
            call.input.get("command") or call.input.get("file_path") or call.input.get("description") or call.name
        )
        return _after_tool(call.name, subject, call.result or "", call.is_error)
    wanted_tools = {"run": "Bash", "read": "Read", **{name: "Agent" for name in AGENT_COMMANDS}}
    if command in wanted_tools and argument and wanted_tools[command] not in tool_names(request.body):
        return text_response(f"I can't do that here: the {wanted_tools[command]} tool is not available.")
    if command in AGENT_COMMANDS and argument:
        return _agents(command, argument)
    if command == "run" and argument:
        return {
            "content": [
                {"type": "text", "text": f"Running `{argument}`."},
                {
                    "type": "tool_use",
                    "name": "Bash",
                    "input": {"command": argument, "description": "Run a command from the playground"},
                },
            ],
            "stop_reason": "tool_use",
        }
    if command == "read" and argument:
        # a path as the person typed it, made absolute against the session's folder, as a model would
        cwd = working_directory(request.body)
        path = os.path.join(cwd, argument) if cwd and not os.path.isabs(os.path.expanduser(argument)) else argument
        return {
            "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": path}}],
            "stop_reason": "tool_use",
        }
    if command == "think" and argument:
        return {
            "content": [
                {
                    "type": "thinking",
                    "deltas": ["The user wants me to think about ", f"{argument!r}. ", "Let me consider it briefly."],
                    "signature": "offline-signature",
                },
                {"type": "text", "deltas": ["After thinking about ", f"*{argument}*", ": it is worth thinking about."]},
            ],
            "stop_reason": "end_turn",
            "delay_ms": 10,
        }
    if prompt.lower() == "long":
        return _long_answer()
    if command == "long" and argument.isdigit():  # `long: 150`: a shorter one (150 parts, 3 s)
        return _long_answer(max(1, min(int(argument), 5000)))
    if prompt.lower() in ("help", "?", ""):
        return text_response(HELP, delay_ms=10)
    news = notifications(request.body)
    if news:  # a background agent ended since the last request
        lines = [
            f"- `{tag(n, 'task-id')}` {tag(n, 'status')}: {_first_lines(tag(n, 'result')).splitlines()[0]}"
            for n in news
        ]
        return text_response(
            "News from the background:\n\n" + "\n".join(lines) + f"\n\nYou said: {prompt}", delay_ms=10
        )
    return _echo_markdown(prompt, _images(request.body))


def _agents(command: str, argument: str) -> Json:
    """One Agent call per prompt (`agents:` splits at ` ;; `): each prompt is the sub-agent's first message,
    which this same playground then plays as the sub-agent's own turn."""
    agent_type, background = AGENT_COMMANDS[command]
    prompts = [p.strip() for p in argument.split(";;")] if command == "agents" else [argument]
    calls: list[Json] = []
    for prompt in (p for p in prompts if p):
        data: Json = {"description": _describe(prompt), "prompt": prompt, "subagent_type": agent_type}
        if background:
            data["run_in_background"] = True
        calls.append({"type": "tool_use", "name": "Agent", "input": data})
    kind = "a background" if background else ("an " if agent_type[0] in "AEIOU" else "a ") + agent_type
    said = (
        f"Handing this to {len(calls)} sub-agents in parallel." if len(calls) > 1 else f"Handing this to {kind} agent."
    )
    return {"content": [{"type": "text", "text": said}, *calls], "stop_reason": "tool_use"}


def _gist(text: str) -> str:
    """A report's first lines, without code fences, on one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("```")]
    return " — ".join(lines[:2]) or "(nothing)"


def _describe(prompt: str) -> str:
    """3-5 words for the card."""
    words = prompt.replace(":", "").split()
    return " ".join(words[:4]) or "sub-task"
