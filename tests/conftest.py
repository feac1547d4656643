"""Every test runs as a user who trusts the folders the tests make (`AGENT_BRIDGE_TRUST_FOLDER=1`, which the
bridges the tests start inherit): the behaviour each test pins is the trusted folder's. The folder-trust
tests (tests/test_trust*.py, tests/e2e/test_trust.py) take it away where they test an untrusted folder."""

import os

os.environ["AGENT_BRIDGE_TRUST_FOLDER"] = "1"
