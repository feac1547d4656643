"""`tour` (a playground command): a whole small task, step by step, reacting to each real tool result — a plan
(TodoWrite), a look at the project (Glob), a new file and an edit the user reviews as diffs (Write, Read, Edit:
each asks), a command that asks (Bash), the plan ticked off, and a summary. What the user rejects is said and
skipped, never retried. The demo's file is `tour_demo.py` in the session's folder."""

from __future__ import annotations

import os

from bridge.offline.builtins.common import Turn, text_response, working_directory
from bridge.offline.scenario import Json, RecordedRequest

FILE = "tour_demo.py"
FIRST = 'def greet(name):\n    return "Hello, " + name\n\n\nprint(greet("tour"))\n'
OLD, NEW = 'return "Hello, " + name', 'return f"Hello, {name}!"'
STEPS = ["Look at the project", f"Write {FILE}", "Improve the greeting (you review the diff)", "Run it", "Sum up"]


def _todos(done: int) -> Json:
    """The plan with the first `done` steps completed and the next in progress."""
    todos = []
    for n, step in enumerate(STEPS):
        status = "completed" if n < done else "in_progress" if n == done else "pending"
        todos.append({"content": step, "status": status, "activeForm": step})
    return {"type": "tool_use", "name": "TodoWrite", "input": {"todos": todos}}


def _step(text: str, *calls: Json) -> Json:
    return {"content": [{"type": "text", "text": text}, *calls], "stop_reason": "tool_use", "delay_ms": 15}


def tour(request: RecordedRequest, turn: Turn) -> Json:
    """The next step of the tour, from the calls made so far in this turn and what became of them."""
    cwd = working_directory(request.body) or "."
    path = os.path.join(cwd, FILE)
    calls = turn.calls
    if not calls:
        return _step(
            "This is the **offline demo model** showing a whole task on a small example: a plan, a look "
            "around, a new file and an edit you review as diffs, and a command that asks first. "
            "Nothing here costs anything or leaves your machine.",
            _todos(0),
        )
    last = calls[-1]
    refused = last.is_error and "denied" in (last.result or "").lower()
    names = [c.name for c in calls]
    if names == ["TodoWrite"]:
        return _step("First, what is in this folder:", {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}})
    if names[-1] == "Glob":
        return _step(
            f"Now a small script, `{FILE}` — you will see the new file as a diff before it is written:",
            _todos(1),
            {"type": "tool_use", "name": "Write", "input": {"file_path": path, "content": FIRST}},
        )
    if names[-1] == "Write":
        if last.is_error:
            return _summary(
                f"You did not let me write `{FILE}`, so the tour stops here."
                if refused
                else f"Writing `{FILE}` failed: {last.result}"
            )
        return _step(
            "Written. I read it back before I change it:",
            {"type": "tool_use", "name": "Read", "input": {"file_path": path}},
        )
    if names[-1] == "Read":
        return _step(
            "The greeting should use an f-string and end with `!`. Review the edit (you may change the "
            "proposed text before you accept it):",
            _todos(2),
            {"type": "tool_use", "name": "Edit", "input": {"file_path": path, "old_string": OLD, "new_string": NEW}},
        )
    if names[-1] == "Edit":
        said = "You rejected the edit; I keep the file as it was. " if last.is_error else "Edited. "
        return _step(
            said + "Now I run it — commands ask first:",
            _todos(3),
            {
                "type": "tool_use",
                "name": "Bash",
                "input": {"command": f"python3 {FILE}", "description": "Run the demo script"},
            },
        )
    if names[-1] == "Bash":
        output = (last.result or "").strip()
        ran = "You did not let the command run." if refused else f"It printed:\n\n```\n{output}\n```"
        return {"content": [{"type": "text", "text": ran}, _todos(5)], "stop_reason": "tool_use", "delay_ms": 15}
    return _summary(
        f"That was the tour: a plan, a look at the project, `{FILE}` written and edited with your "
        "review, and a command you allowed or refused. With an API key the same agent runs Claude "
        "on your real tasks: “Agent Bridge: Set API Key” in VS Code, ANTHROPIC_API_KEY in a "
        "terminal."
    )


def _summary(text: str) -> Json:
    return text_response(text, delay_ms=10)
