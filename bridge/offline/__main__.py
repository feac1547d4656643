"""`python -m bridge.offline --scenario NAME_OR_FILE [--port 0]`: serve until killed.

Prints exactly one line on stdout, `listening on http://127.0.0.1:PORT`; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from bridge.offline import BUILTIN_NAMES, OfflineServer, ScenarioError, load_scenario


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bridge.offline", description=__doc__)
    parser.add_argument("--scenario", required=True, help=f"a built-in ({', '.join(BUILTIN_NAMES)}) or a .json file")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--verbose", "-v", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    with OfflineServer(scenario, host=args.host, port=args.port) as server:
        print(f"listening on {server.base_url}", flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
