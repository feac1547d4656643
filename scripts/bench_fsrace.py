"""Race-proof file operations (issue 21 item 1): what they cost, and the races at full size.

1. Cost, each against the by-name way measured in the same run (median and p95 of many runs):
   - Read: resolve + check + open by name + read (what the tools did) vs `safefs.open_exact` of the judged real
     path + read, on the kernel's openat2 and on the O_NOFOLLOW walk; and the whole Read tool call, against
     the Read tool as it was before (its module loaded from the commit this branch started from).
   - Write: the tools' `atomic_write` as it was (by name) vs `safefs.write_exact` (temp file and rename in the
     exactly opened directory), both with the file and directory fsyncs.
   - Grep and Glob over the Python standard library: the tools as they were before (same loading) and raw `rg`
     vs the tools now (Grep's exact second pass, Glob's per-result exact check).
2. The races: `--iterations` (default 1,000) calls per tool (Read, Write, Edit, NotebookEdit, Grep, Glob) while
   a separate process flips the name, on both back ends, through the real executor and engine; leaks and files
   changed outside must be 0. The by-name control must leak in the same race.

Usage: .venv/bin/python scripts/bench_fsrace.py [--iterations N] [--skip-races]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import types
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge import safefs
from bridge.abort import Abort
from bridge.tools.base import ToolContext
from bridge.tools.glob import GlobInput, GlobTool
from bridge.tools.grep import GrepInput, GrepTool
from bridge.tools.read import ReadInput, ReadTool
from bridge.tools.ripgrep import rg_binary
from tests.file_races import Arena, control, race

BASE = "77d449d03a0033d98805b3551cc179090b7758a0"  # where this branch started: the tools before the change


def old_module(relative: str) -> types.ModuleType | None:
    """The module at `relative` as it was at BASE (it imports today's helpers, which kept their names), or None
    when git cannot show it."""
    root = Path(__file__).resolve().parent.parent
    shown = subprocess.run(["git", "show", f"{BASE}:{relative}"], cwd=root, capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        return None
    name = "old_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(shown.stdout, f"{BASE[:8]}:{relative}", "exec"), module.__dict__)  # our own code, as it was
    return module


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def line(name: str, samples: list[float], base: list[float] | None = None, unit: float = 1e6, mark: str = "µs") -> str:
    text = (
        f"  {name:<50} median {statistics.median(samples) * unit:8.1f} {mark}   p95 {p95(samples) * unit:8.1f} {mark}"
    )
    if base is not None:
        text += (
            f"   x{statistics.median(samples) / statistics.median(base):.2f} median, "
            f"x{p95(samples) / p95(base):.2f} p95"
        )
    return text


def interleaved(fns: list[Callable[[], object]], runs: int) -> list[list[float]]:
    """Samples of each of `fns`, run in turn (one of each, `runs` times): a loaded machine's drift falls on all
    of them alike, not on whichever ran last."""
    for fn in fns:
        for _ in range(min(20, runs)):
            fn()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            out[i].append(time.perf_counter() - start)
    return out


async def interleaved_async(fns: list[Callable[[], Awaitable[object]]], runs: int) -> list[list[float]]:
    for fn in fns:
        for _ in range(min(5, runs)):
            await fn()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            await fn()
            out[i].append(time.perf_counter() - start)
    return out


def with_backend(walk: bool) -> None:
    if walk:
        os.environ[safefs.FORCE_ENV] = "walk"
    else:
        os.environ.pop(safefs.FORCE_ENV, None)


def bench_read_write(root: Path, runs: int) -> None:
    deep = root.joinpath("a", "b", "c", "d", "e", "f")  # a path as deep as a project's sources
    deep.mkdir(parents=True)
    target = deep / "module.py"
    target.write_text("x = 1\n" * 200)
    real = os.path.realpath(target)

    def by_name_read() -> bytes:
        if not os.path.realpath(target).startswith(str(root)):  # the check the engine made...
            raise AssertionError
        with open(target, "rb") as fh:  # ...then the open by name
            os.fstat(fh.fileno())
            return fh.read()

    def exact_read() -> bytes:
        fd = safefs.open_exact(real, safefs.READ_FLAGS)
        try:
            os.fstat(fd)
            return safefs.read_all(fd, 1 << 20, real)
        finally:
            os.close(fd)

    def walked_read() -> bytes:
        with_backend(True)
        try:
            return exact_read()
        finally:
            with_backend(False)

    print("Read of a 1.2 kB file 7 directories deep (check + open + read; run in turn):")
    base, kernel, walk = interleaved([by_name_read, exact_read, walked_read], runs)
    print(line("by name (realpath check, then open by name)", base))
    print(line("safefs.open_exact (openat2)", kernel, base))
    print(line("safefs.open_exact (O_NOFOLLOW walk)", walk, base))

    ctx = ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data")
    ctx.granted = {target: Path(real)}
    data = ReadInput(file_path=str(target))
    old = old_module("bridge/tools/read.py")
    if old is not None:
        before, now = asyncio.run(
            interleaved_async([lambda: old.ReadTool().call(data, ctx), lambda: ReadTool().call(data, ctx)], runs)
        )
        print(line("the Read tool call as it was (by name)", before))
        print(line("the Read tool call now (exact)", now, before))

    payload = b"y = 2\n" * 200
    old_io = old_module("bridge/tools/fileio.py")

    def exact_write() -> None:
        safefs.write_exact(real, payload)

    def walked_write() -> None:
        with_backend(True)
        try:
            exact_write()
        finally:
            with_backend(False)

    print("Write of the same file (temp file, fsync, rename, directory fsync; run in turn):")
    if old_io is not None:
        before, kernel, walk = interleaved(
            [lambda: old_io.atomic_write(target, payload), exact_write, walked_write], max(100, runs // 5)
        )
        print(line("the tools' atomic_write as it was (by name)", before))
        print(line("safefs.write_exact (openat2)", kernel, before))
        print(line("safefs.write_exact (O_NOFOLLOW walk)", walk, before))


def bench_search(runs: int) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    rg = rg_binary()
    ctx = ToolContext(cwd=stdlib, abort=Abort(), data_dir=Path(tempfile.mkdtemp()))
    ctx.granted = {stdlib: stdlib.resolve()}
    old_grep, old_glob = old_module("bridge/tools/grep.py"), old_module("bridge/tools/glob.py")
    if old_grep is None or old_glob is None:
        print("Search: the tools as they were cannot be loaded (no git history here); skipped")
        return
    cases = [
        (
            "files_with_matches 'def __init__' (6k files)",
            GrepInput(pattern="def __init__"),
            ["--files-with-matches", "--hidden", "--no-follow", "--regexp", "def __init__"],
        ),
        (
            "files_with_matches 'class HTTPServer' (few)",
            GrepInput(pattern="class HTTPServer"),
            ["--files-with-matches", "--hidden", "--no-follow", "--regexp", "class HTTPServer"],
        ),
        (
            "content 'class .*Error', head 250",
            GrepInput(pattern="class .*Error", output_mode="content"),
            ["--line-number", "--with-filename", "--no-heading", "--sort", "path", "--regexp", "class .*Error"],
        ),
        (
            "count 'import os'",
            GrepInput(pattern="import os", output_mode="count"),
            ["--count", "--with-filename", "--regexp", "import os"],
        ),
    ]
    print(f"Search over the Python standard library ({stdlib}; ms; run in turn):")

    def raw(args: list[str]) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            return await asyncio.to_thread(
                subprocess.run,
                [rg, "--no-config", "--null", *args],
                cwd=stdlib,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )

        return run

    for name, data, args in cases:
        print(f" Grep {name}")
        base, before, now = asyncio.run(
            interleaved_async(
                [
                    raw(args),
                    lambda d=data: old_grep.GrepTool().call(d, ctx),  # type: ignore[misc]
                    lambda d=data: GrepTool().call(d, ctx),  # type: ignore[misc]
                ],
                runs,
            )
        )
        print(line("raw rg", base, unit=1e3, mark="ms"))
        print(line("the Grep tool as it was", before, unit=1e3, mark="ms"))
        print(line("the Grep tool now (exact second pass)", now, before, unit=1e3, mark="ms"))
    glob = GlobInput(pattern="**/*.py")
    print(" Glob '**/*.py'")
    base, before, now = asyncio.run(
        interleaved_async(
            [
                raw(["--files", "--hidden", "--no-follow"]),
                lambda: old_glob.GlobTool().call(glob, ctx),
                lambda: GlobTool().call(glob, ctx),
            ],
            runs,
        )
    )
    print(line("raw rg --files", base, unit=1e3, mark="ms"))
    print(line("the Glob tool as it was", before, unit=1e3, mark="ms"))
    print(line("the Glob tool now (each match re-checked exactly)", now, before, unit=1e3, mark="ms"))


async def bench_races(iterations: int) -> bool:
    ok = True
    tools = ["Read", "ReadViaEditor", "Write", "Edit", "NotebookEdit", "Grep", "Glob"]
    print(f"Races: {iterations} calls per tool while a separate process flips the name (real executor + engine):")
    for walk in (False, True):
        with_backend(walk)
        for tool in tools:
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                tally = await race(Arena.build(Path(tmp)), tool, iterations)
                took = time.perf_counter() - started
            good = tally.leaks == 0 and not tally.outside_changed and tally.worked > 0 and tally.contested > 0
            ok &= good
            print(
                f"  {'walk' if walk else 'openat2':<7} {tool:<12} calls {tally.calls:5}  flips {tally.flips:7}  "
                f"reached by the race {tally.contested:4}  did its job {tally.worked:5}  leaks {tally.leaks}  "
                f"outside changed {int(tally.outside_changed)}  ({took:.1f} s)  {'ok' if good else 'FAIL'}"
            )
    with_backend(False)
    print("The by-name control in the same kind of race (tries until it leaked):")
    for tool in tools:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                tries = control(Arena.build(Path(tmp)), tool)
                print(f"  {tool:<12} leaked after {tries} tries")
            except AssertionError as error:
                ok = False
                print(f"  {tool:<12} FAIL: {error}")
    return ok


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # the races make the tools log each change they saw
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--search-runs", type=int, default=15)
    parser.add_argument("--skip-races", action="store_true")
    args = parser.parse_args()
    print(f"openat2 on this kernel: {safefs.openat2_available()}")
    with tempfile.TemporaryDirectory() as tmp:
        bench_read_write(Path(os.path.realpath(tmp)), args.runs)
    bench_search(args.search_runs)
    if not args.skip_races and not asyncio.run(bench_races(args.iterations)):
        print("FAIL")
        sys.exit(1)


if __name__ == "__main__":
    main()
