"""agent-bridge: a coding agent for your terminal and your editor (VS Code, Zed and other ACP clients)."""

from __future__ import annotations

# First, before anything else loads: the process closes itself to its user's other processes and wipes the
# credentials from the environment block it started with (bridge/private_process.py). Until then a process of the
# same user — a hook's leftover child, another session's MCP server — reads the key from /proc/<pid>/environ
# (attack round 24: 3 of 3 starts, the close 0.1–0.17 s after exec, once this module's imports had loaded).
from bridge.private_process import close_early

close_early()

import argparse  # (each import below comes after the close, on purpose: E402 is off for this file)
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from bridge import codecache, gcpause

# `import httpx` imports its own command-line tool (httpx._main), which imports rich and pygments whenever they
# are installed — and rich is, for `run`'s markdown: a tenth of a second at every start, serve's too, for a
# tool this process never runs. Marked missing, httpx skips it (its fallback for when they are not installed).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

# The methods `@dataclass` generates, the regular expressions' programs and typing's forward references, compiled
# once and kept (bridge/codecache.py): before any dataclass is made, pattern compiled or annotation read.
codecache.install_dataclasses()
codecache.install_regex()
codecache.install_typing()

TRUST_HELP = (
    "trust this folder's own settings (hooks, env, allow rules...) without asking, as in CI; "
    "the same as AGENT_BRIDGE_TRUST_FOLDER=1"
)


SCENARIOS = ("todo-demo", "playground", "echo")  # bridge.offline.builtins.BUILTIN_NAMES (a test holds them equal)
OFFLINE_HELP = (
    f"use the embedded offline model instead of the API (no key, no network): {', '.join(SCENARIOS)}, "
    "or a .json scenario file"
)
EPILOG = (
    f"Offline scenarios: {', '.join(SCENARIOS)} (`playground` understands `run: CMD`, `read: PATH`, "
    "`agent: PROMPT`, `long`...). Without --offline, set ANTHROPIC_API_KEY. Logs go to stderr; "
    "AGENT_BRIDGE_LOG=INFO shows more."
)


class VisibleFormatter(logging.Formatter):
    """Log lines with no control character in them: stderr is `run`'s terminal, and what is logged quotes the
    model, an API error, an MCP server or a folder's file names (attack round 17: an escape sequence there
    writes the clipboard or the window title). Line breaks and tabs stay (tracebacks)."""

    def format(self, record: logging.LogRecord) -> str:
        from bridge.visible import visible

        return visible(super().format(record), keep_newlines=True, keep_tabs=True)


class VisibleParser(argparse.ArgumentParser):
    """argparse, whose messages quote the arguments (`unrecognized arguments: …`) with no control character left in
    them (attack round 18: an argument pasted with an escape sequence set the clipboard and the window title)."""

    def _print_message(self, message: str, file: Any = None) -> None:
        from bridge.visible import visible

        super()._print_message(visible(message, keep_newlines=True, keep_tabs=True) if message else message, file)


class CliError(Exception):
    """A mistake on the command line: one line for the user, exit code 2, no traceback."""


def main(argv: list[str] | None = None) -> int:
    gcpause.pause()  # until the bridge is loaded: `run_command`, the server's start, or `demo` below
    from bridge import __version__
    from bridge.environment import credential_values, register_secret

    parser = VisibleParser(prog="agent-bridge", description=__doc__, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"agent-bridge {__version__}")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("AGENT_BRIDGE_LOG", "WARNING"),
        help="how much to log on stderr: DEBUG, INFO, WARNING (default), ERROR",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="serve an editor on stdio: JSON-RPC with LSP framing (VS Code)",
        description="Serve an editor on stdin/stdout (JSON-RPC with LSP framing), as the "
        "VS Code extension starts it. Many sessions per process.",
        epilog=EPILOG,
    )
    serve.add_argument("--offline", metavar="SCENARIO", help=OFFLINE_HELP)
    serve.add_argument("--model", help="model name (default: AGENT_BRIDGE_MODEL or claude-sonnet-4-5)")
    serve.add_argument("--stdio", action="store_true", help="accepted for LSP clients; stdio is the default")
    serve.add_argument("--trust-folder", action="store_true", help=TRUST_HELP)

    acp = commands.add_parser(
        "acp",
        help="serve ACP editors (Zed, Neovim, JetBrains...) on stdio",
        description="Serve an Agent Client Protocol editor on stdin/stdout: one JSON-RPC "
        "message per line (Zed, codecompanion.nvim, acpx...).",
        epilog=EPILOG,
    )
    acp.add_argument("--offline", metavar="SCENARIO", help=OFFLINE_HELP)
    acp.add_argument("--model", help="model name (default: AGENT_BRIDGE_MODEL or claude-sonnet-4-5)")
    acp.add_argument("--trust-folder", action="store_true", help=TRUST_HELP)

    run = commands.add_parser(
        "run",
        help="answer one prompt in this terminal, then exit",
        description="Run one prompt in this terminal: the answer streams, tool calls show "
        "with their results, permission questions are asked here (denied when "
        "stdin is not a terminal). Ctrl-C cancels; twice forces.",
        epilog=EPILOG,
    )
    run.add_argument("prompt", help="what to ask (a slash command works too: /compact, /skills...)")
    run.add_argument("--cwd", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    run.add_argument("--offline", metavar="SCENARIO", help=OFFLINE_HELP)
    run.add_argument("--model", help="model name (default: AGENT_BRIDGE_MODEL or claude-sonnet-4-5)")
    run.add_argument("--non-interactive", action="store_true", help="no one answers: permission asks are denied")
    going_on = run.add_mutually_exclusive_group()
    going_on.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="go on with the latest session of --cwd (then /rewind, /changes work on it)",
    )
    going_on.add_argument("--resume", metavar="SESSION", help="go on with that stored session")
    run.add_argument("--trust-folder", action="store_true", help=TRUST_HELP)
    run.add_argument(
        "--show-thinking",
        action="store_true",
        help="show the model's thinking in full (otherwise one line says how long it thought)",
    )
    run.add_argument(
        "--dangerously-approve-all",
        action="store_true",
        help="answer yes to every permission question without asking (otherwise questions are asked "
        "at the terminal, and denied when standard input is not one)",
    )
    for flag in ("allow", "ask", "deny"):
        run.add_argument(
            f"--{flag}",
            action="append",
            default=[],
            metavar="RULE",
            help=f"a session {flag} rule, e.g. 'Bash(npm test *)' (repeatable)",
        )

    demo = commands.add_parser(
        "demo",
        help="the TODO/FIXME demo on DIR with the offline model (no key needed)",
        description="Find the TODO and FIXME comments of DIR (or of a sample project made "
        "for the demo and removed after it) with the offline model.",
    )
    demo.add_argument("dir", nargs="?", type=Path, help="a project folder (default: a sample project)")
    demo.add_argument(
        "--yes",
        action="store_true",
        help="approve the permission prompt without asking (only in the demo's own sample project)",
    )

    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setFormatter(VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
    from bridge import log_redaction

    credentials = credential_values(os.environ)
    log_redaction.install(credentials)  # what is logged never carries the key (pygls logs it at DEBUG)
    for value in credentials:  # nor does a command get one, under any name (a custom header's value on its own)
        register_secret(value)
    if logging.getLogger().level > logging.DEBUG:  # pygls logs every message body at INFO
        logging.getLogger("pygls").setLevel(logging.WARNING)

    if args.command in ("serve", "acp"):
        from bridge.server.fast_initialize import catch_signals, read_first

        catch_signals()  # SIGINT/SIGTERM end the bridge at once until the server loads (then: stdio.serve)

        overrides: dict[str, Any] = {}
        if args.model:
            overrides["model"] = args.model
        if args.trust_folder:
            overrides["folderTrust"] = "trusted"
        # `initialize` is answered from here when its answer is known (before the server is even imported), and
        # a new session's `session/new` too when its answer is sure (not with an offline model: not started yet)
        first = read_first(
            sys.stdin.fileno(),
            sys.stdout.buffer,
            acp=args.command == "acp",
            overrides=None if args.offline else overrides,
        )
        from bridge.server.stdio import serve as serve_stdio

        if args.offline:
            overrides |= start_offline(args.offline)
        return serve_stdio(overrides, acp=args.command == "acp", first=first)
    if args.command == "run":
        if not args.offline and not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            raise CliError(NO_KEY)
        overrides = {"model": args.model} if args.model else {}
        overrides |= {"allow": args.allow, "ask": args.ask, "deny": args.deny}
        if args.trust_folder:
            overrides["folderTrust"] = "trusted"
        if args.offline:
            overrides |= start_offline(args.offline)
        interactive = not args.non_interactive
        import asyncio

        resume = args.resume or ("latest" if args.continue_ else None)
        return asyncio.run(
            run_command(
                args.prompt,
                args.cwd.resolve(),
                overrides,
                interactive=interactive,
                approve_all=args.dangerously_approve_all,
                offline=args.offline,
                show_thinking=args.show_thinking,
                resume=resume,
            )
        )
    if args.command == "demo":
        gcpause.resume()
        from bridge.cli.demo import run_demo

        codecache.loaded()
        return run_demo(args.dir, approve=args.yes)
    return 2


async def run_command(
    text: str,
    cwd: Path,
    overrides: dict[str, Any],
    *,
    interactive: bool,
    approve_all: bool = False,
    offline: str | None = None,
    show_thinking: bool = False,
    resume: str | None = None,
) -> int:
    """`run`: the first model request goes out first (when it can be told ahead: a new session's), then the rest
    of the bridge loads, then the turn runs. `resume`: a stored session's id, or `latest` (of `cwd`)."""
    import asyncio
    import importlib

    from bridge.first_request import send_ahead

    early = send_ahead(text, cwd, overrides) if resume is None else None
    if early is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(early[1].wait(), 1.0)  # written: nothing more to do for it before the load
    # The checks the first command makes once per process (cgroups, a trial bwrap) mostly wait on the kernel: on a
    # worker thread they overlap the load below instead of following it. Their modules load first, here.
    importlib.import_module("bridge.pydantic_setup").no_plugins()
    sandbox = importlib.import_module("bridge.execution.sandbox")
    warming = asyncio.get_running_loop().run_in_executor(None, sandbox.warm_up)
    # Loaded here, the event loop waiting: the request is written, its answer waits in the socket. (Not in a
    # thread while the loop reads the answer: two threads importing the same modules can deadlock.)
    terminal = importlib.import_module("bridge.cli.terminal")
    gcpause.resume()
    codecache.loaded()
    code: int = await terminal.run_prompt_async(
        text,
        cwd=cwd,
        overrides=overrides,
        interactive=interactive,
        approve_all=approve_all,
        ahead=early[0] if early else None,
        offline=Path(offline).stem if offline else None,
        show_thinking=show_thinking,
        resume=resume,
    )
    await warming
    return code


def start_offline(scenario: str) -> dict[str, Any]:
    """Start the embedded offline Messages API in this process; the settings that point the SDK at it."""
    from bridge.offline import OfflineServer, load_scenario
    from bridge.offline.scenario import ScenarioError

    try:
        loaded = load_scenario(scenario)
    except ScenarioError as error:
        raise CliError(f"--offline: {error}") from None
    server = OfflineServer(loaded)
    url = server.start()
    logging.getLogger(__name__).info("offline model %s at %s", scenario, url)
    return {"base_url": url, "api_key": "offline"}


def exit_now(code: int) -> NoReturn:
    """End the process at once: flush what is buffered, then `os._exit` — no interpreter teardown, which would
    spend most of a second unloading modules. By then everything that must outlive the process is done
    (transcripts synced, children reaped: `Agent.shutdown`)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    with contextlib.suppress(Exception):  # nothing it could meet may keep the process from ending
        codecache.save()
    os._exit(code)


NO_KEY = (
    "No API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) — or try the offline model, no key needed: "
    'agent-bridge run --offline playground "run: ls"'
)


def entry() -> NoReturn:
    """The `agent-bridge` command: a mistake is one line and exit code 2; Ctrl-C before anything runs, 130."""
    try:
        code = main()
    except CliError as error:
        from bridge.visible import visible

        print(f"agent-bridge: {visible(str(error))}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    exit_now(code)


if __name__ == "__main__":
    entry()
