"""`agent-bridge demo [DIR]`: the seed's example — "find all TODO/FIXME comments in this project" —
on DIR (or a small sample project it creates), with the embedded offline model: no key, no network."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from bridge.cli.main import start_offline
from bridge.cli.terminal import run_prompt
from bridge.visible import visible

PROMPT = "Find all TODO and FIXME comments in this project and summarize them."

SAMPLE = {
    "app/server.py": (
        "import json\n\n\ndef handle(request):\n    # TODO: validate the request body\n"
        "    data = json.loads(request)\n    # FIXME: this crashes on empty input\n    return data['id']\n"
    ),
    "app/cache.py": "class Cache:\n    # TODO: evict old entries\n    def __init__(self):\n        self.items = {}\n",
    "web/index.js": "// TODO: debounce the search box\nexport function search(q) {\n  return fetch('/s?q=' + q)\n}\n",
    "README.md": "# Sample\nA tiny project for the agent-bridge demo.\n",
}


def sample_project() -> Path:
    root = Path(tempfile.mkdtemp(prefix="agent-bridge-demo-"))
    for name, text in SAMPLE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run_demo(directory: Path | None, *, approve: bool = False) -> int:
    """The demo on `directory`, or on a sample project made for it and removed after it. `approve` (`demo --yes`):
    answer the demo's question yes without asking — only in that sample project; on a folder of the user's the
    question is asked (or denied with no terminal)."""
    sample = None if directory is not None else sample_project()
    root = (directory or sample or Path()).resolve()
    print(f"agent-bridge demo — offline model, project: {visible(str(root))}")
    print(f"> {PROMPT}\n")
    if approve and directory is not None:
        print("(--yes approves only in the demo's own sample project; here every question is asked)\n")
    try:
        return run_prompt(
            PROMPT,
            cwd=root,
            overrides=start_offline("todo-demo"),
            approve_all=approve and sample is not None,
            offline="todo-demo",
        )
    finally:
        if sample is not None:
            shutil.rmtree(sample, ignore_errors=True)
