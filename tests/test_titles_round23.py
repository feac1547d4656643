"""A tool call's title on the wire (attack round 23): the call's own text (a URL, a path the model chose) on one line
with every hidden character made visible — a bidi override reordered a fetched URL on the panel's card — and a
command's title is its tool's code span, whose fence no backtick in the text can end."""

from __future__ import annotations

from bridge.loop.events import ToolCallStarted
from bridge.server.wire import tool_call
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.tasks import TaskStopInput, TaskStopTool


def _title(title: str, kind: str = "fetch") -> str:
    return str(tool_call(ToolCallStarted("toolu_1", "WebFetch", title, kind, {}))["title"])  # type: ignore[arg-type]


def test_a_titles_hidden_characters_are_made_visible_on_the_wire() -> None:
    url = "https://example.com/invoice\u202egpj.exe?token=SECRET"
    shown = _title(f"Fetch {url}")
    assert "\u202e" not in shown and "SECRET" in shown and shown.startswith("Fetch https://example.com/invoice")
    assert "\n" not in _title("Read a\nb.txt", "read") and "\r" not in _title("Read a\rb.txt", "read")
    assert _title("Read /w/src/a.py", "read") == "Read /w/src/a.py"  # a plain title is left as it is


def test_a_commands_title_is_its_code_span_and_a_task_id_cannot_end_one() -> None:
    bash = BashTool().user_facing_title(BashInput(command="echo `date`"))
    assert _title(bash, "execute") == bash == "`` echo `date` ``"
    stop = TaskStopTool().user_facing_title(TaskStopInput(task_id="x` **y** `z"))
    assert stop == "Stop ``x` **y** `z``"
