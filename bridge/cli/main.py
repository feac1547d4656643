"""`agent-bridge`: serve (editors, stdio JSON-RPC), run (the loop in a terminal), demo (offline)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-bridge", description=__doc__)
    parser.add_argument("--log-level", default=os.environ.get("AGENT_BRIDGE_LOG", "WARNING"))
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve editors over stdio (JSON-RPC, LSP framing)")
    serve.add_argument("--offline", metavar="SCENARIO", help="use the embedded offline model (e.g. playground)")
    serve.add_argument("--model", help="model name (default: AGENT_BRIDGE_MODEL or claude-sonnet-4-5)")
    serve.add_argument("--stdio", action="store_true", help="accepted for LSP clients; stdio is the default")

    acp = commands.add_parser("acp", help="serve ACP editors (Zed, ...) over stdio: one JSON-RPC message per line")
    acp.add_argument("--offline", metavar="SCENARIO", help="use the embedded offline model")
    acp.add_argument("--model")

    run = commands.add_parser("run", help="run one prompt in this terminal")
    run.add_argument("prompt")
    run.add_argument("--cwd", type=Path, default=Path.cwd())
    run.add_argument("--offline", metavar="SCENARIO", help="use the embedded offline model")
    run.add_argument("--model")
    run.add_argument("--non-interactive", action="store_true", help="no one answers: permission asks are denied")
    for flag in ("allow", "ask", "deny"):
        run.add_argument(f"--{flag}", action="append", default=[], metavar="RULE",
                         help=f"a session {flag} rule, e.g. 'Bash(npm test *)' (repeatable)")

    demo = commands.add_parser("demo", help="the TODO/FIXME demo on DIR with the offline model (no key needed)")
    demo.add_argument("dir", nargs="?", type=Path)
    demo.add_argument("--yes", action="store_true", help="approve the permission prompt without asking")

    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if logging.getLogger().level > logging.DEBUG:  # pygls logs every message body at INFO
        logging.getLogger("pygls").setLevel(logging.WARNING)

    if args.command in ("serve", "acp"):
        from bridge.server.app import serve as serve_stdio

        overrides: dict[str, Any] = {}
        if args.model:
            overrides["model"] = args.model
        if args.offline:
            overrides |= start_offline(args.offline)
        serve_stdio(overrides, acp=args.command == "acp")
        _exit_now()
    if args.command == "run":
        from bridge.cli.terminal import run_prompt

        overrides = {"model": args.model} if args.model else {}
        overrides |= {"allow": args.allow, "ask": args.ask, "deny": args.deny}
        if args.offline:
            overrides |= start_offline(args.offline)
        interactive = not args.non_interactive
        return run_prompt(args.prompt, cwd=args.cwd.resolve(), overrides=overrides, interactive=interactive)
    if args.command == "demo":
        from bridge.cli.demo import run_demo

        return run_demo(args.dir, auto_approve=args.yes)
    return 2


def _exit_now() -> NoReturn:
    """Everything we started is cleaned up when `serve` returns; skip the interpreter's teardown of thousands
    of modules' objects (seconds on a loaded machine), which an editor would otherwise wait for, then kill."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def start_offline(scenario: str) -> dict[str, Any]:
    """Start the embedded offline Messages API in this process; the settings that point the SDK at it."""
    from bridge.offline import OfflineServer, load_scenario

    server = OfflineServer(load_scenario(scenario))
    url = server.start()
    logging.getLogger(__name__).info("offline model %s at %s", scenario, url)
    return {"base_url": url, "api_key": "offline"}


if __name__ == "__main__":
    sys.exit(main())
