"""The model's requests stay byte for byte what the anthropic SDK sent before the bridge learnt to send them
itself: whole flows (`run`, `serve`) through the default path and through the SDK (AGENT_BRIDGE_MODEL_TRANSPORT=sdk)
give the same request lines, headers (order and case) and bodies; and the heads are the ones recorded with the
SDK before (tests/fixtures/request_heads.json; only run-dependent values are placeholders)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.request_capture import capture

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "request_heads.json"


async def test_every_flow_sends_the_sdks_bytes(tmp_path: Path) -> None:
    ours = await capture(tmp_path / "default")
    sdk = await capture(tmp_path / "sdk", {"AGENT_BRIDGE_MODEL_TRANSPORT": "sdk"})
    assert list(ours) == list(sdk)
    for flow in ours:
        assert len(ours[flow]) == len(sdk[flow]), flow
        for n, (mine, theirs) in enumerate(zip(ours[flow], sdk[flow], strict=True)):
            assert mine["request_line"] == theirs["request_line"], (flow, n)
            assert mine["headers"] == theirs["headers"], (flow, n)
            assert mine["body"] == theirs["body"], (flow, n)
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    heads = {
        flow: [{"request_line": r["request_line"], "headers": r["headers"]} for r in requests]
        for flow, requests in ours.items()
    }
    assert heads == recorded
