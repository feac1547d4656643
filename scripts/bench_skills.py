"""Skills' cost (issue 27): what they add to a new session's first request with 0, 20 and 200 skills installed
(the Skill tool's schema: names and descriptions within a fixed budget, never bodies), and a session's start
(everything read from its folder and settings) with 200 skills against none, in the same run.

    .venv/bin/python scripts/bench_skills.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bridge.config import BridgeConfig
from bridge.permissions.settings import SettingsStore
from bridge.session_setup import SessionSetup
from bridge.skills import LISTING_BUDGET, load_skills
from bridge.tools.skill import SkillTool


def install(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"skill-{i:03d}"
        (folder / "references").mkdir(parents=True)
        description = f"Helps with the {i}th kind of task, reading, writing and checking files of that kind."
        body = "Step one. " * 400  # a few kB of instructions that must not be read at start
        (folder / "SKILL.md").write_text(f"---\nname: skill-{i:03d}\ndescription: {description}\n---\n{body}\n")
        (folder / "references" / "guide.md").write_text("reference " * 1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"the Skill tool's listing budget: {LISTING_BUDGET:,} characters")
        sizes = {}
        for count in (0, 20, 200):
            home = base / f"home{count}"
            install(home / ".claude" / "skills", count)
            (base / f"ws{count}").mkdir()
            catalog = load_skills(base / f"ws{count}", user_config_dir=base / "cfg", claude_home=home / ".claude")
            sizes[count] = len(json.dumps(SkillTool(catalog).schema())) if catalog.for_model() else 0
            lines, more = catalog.listing()
            print(
                f"  {count:3d} skills: +{sizes[count]:6,} bytes in the first request ({len(lines)} listed, "
                f"{more} found by query){'  ok' if sizes[count] <= LISTING_BUDGET + 2_000 else '  FAIL'}"
            )
        config, _ = BridgeConfig.load({})
        for count in (0, 200):
            ws, home = base / f"ws{count}", base / f"home{count}" / ".claude"
            times = []
            for _ in range(args.runs):
                store = SettingsStore(ws, user_config_dir=base / "cfg", claude_home=home, trust="trusted")
                start = time.perf_counter()
                SessionSetup.compose(ws, config, store, interactive=False)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            print(
                f"  session start with {count:3d} skills: median {statistics.median(times):6.1f} ms, "
                f"p95 {times[int(len(times) * 0.95) - 1]:6.1f} ms"
            )


if __name__ == "__main__":
    main()
