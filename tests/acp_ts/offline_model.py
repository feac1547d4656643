"""The offline Messages API for the TypeScript conformance tests: `python offline_model.py SCENARIO.json
REQUESTS.jsonl` serves the scenario, prints `listening on URL`, and appends each request body the bridge sent to
REQUESTS.jsonl (what the model was asked: the model, the thinking budget, the messages). Ends when stdin closes."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from bridge.offline import OfflineServer, load_scenario


def main() -> int:
    scenario, out = sys.argv[1], Path(sys.argv[2])
    done = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    with OfflineServer(load_scenario(scenario)) as server, out.open("a", encoding="utf-8") as file:
        print(f"listening on {server.base_url}", flush=True)
        written = 0
        while not done.wait(0.02):
            requests = server.requests
            for request in requests[written:]:
                file.write(json.dumps({"status": request.status, "body": request.body}) + "\n")
                file.flush()
            written = len(requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
