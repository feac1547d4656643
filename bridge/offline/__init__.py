"""The embedded offline Anthropic Messages API: a real HTTP server on loopback that streams scenario answers.

with OfflineServer(builtin_scenario("echo")) as server:
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="test")
"""

from bridge.offline.builtins import BUILTIN_NAMES, builtin_scenario
from bridge.offline.scenario import RecordedRequest, Responder, Scenario, ScenarioError, load_scenario
from bridge.offline.server import OfflineServer

__all__ = [
    "BUILTIN_NAMES",
    "OfflineServer",
    "RecordedRequest",
    "Responder",
    "Scenario",
    "ScenarioError",
    "builtin_scenario",
    "load_scenario",
]
