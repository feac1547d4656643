"""Each sandboxed command in its own resource limits: a command that exceeds one ends with a result naming the
limit and the setting to raise, the next command works, and the bridge goes on. Every backend this machine
has is tested (`AGENT_BRIDGE_LIMITS` forces one); the spill file of a huge output is bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.execution import limits
from bridge.execution.output import spill_path
from bridge.permissions.command_limits import DEFAULT_PROCESSES, LimitSettings, LimitsModel, parse_amount
from tests.execution.test_sandbox import AVAILABLE, Project, output

pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")


@pytest.fixture(params=list(limits.BACKENDS))
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name = str(request.param)
    if name != "rlimit" and not limits._available(name):  # type: ignore[arg-type]
        pytest.skip(f"{name} limits are not available on this machine")
    monkeypatch.setenv(limits.LIMITS_ENV, name)
    assert limits.backend() == name
    return name


def own_cgroups() -> list[Path]:
    """The per-command cgroups this bridge has made and not removed."""
    prefix = f"agent-bridge-{os.getpid()}-"
    found: list[Path] = []
    for controller in ("memory", "pids"):
        base = limits._own_cgroup1_dir(controller)
        if base is not None and base.is_dir():
            found += [p for p in base.iterdir() if p.name.startswith(prefix)]
    base2 = limits._own_cgroup2_dir()
    if base2 is not None and base2.is_dir():
        found += [p for p in base2.iterdir() if p.name.startswith(prefix)]
    return found


LIMITED = {"memory": "100MB", "processes": 40, "fileSize": "1MB", "cpuSeconds": 1}
BREACHES = [
    ("memory", "python3 -c \"b = b'x' * (600 * 1024 * 1024); print('allocated', len(b))\"", "allocated"),
    ("processes", "for i in $(seq 120); do sleep 30 & done; wait; echo all-waited", "all-waited"),
    ("fileSize", "head -c 5000000 /dev/zero > big.bin; ls -l big.bin", None),
    ("cpuSeconds", "python3 -c 'while True: pass'; echo spun", None),
]


@pytest.mark.parametrize(("name", "command", "never"), BREACHES, ids=[b[0] for b in BREACHES])
async def test_a_command_over_a_limit_ends_with_a_result_that_names_it(
    project: Project, backend: str, name: str, command: str, never: str | None
) -> None:
    # the cgroups an earlier test of this process left (one still busy with its last process): not this test's
    before = set(own_cgroups())
    project.settings({"sandbox": {"limits": LIMITED}})
    result = await project.run(command, timeout=60_000)
    text = output(result)
    assert result.is_error, text
    assert f'"sandbox": {{"limits": {{"{name}": ' in text  # the setting to raise
    assert never is None or never not in text  # it did not get through
    if name == "fileSize":
        assert (project.ws / "big.bin").stat().st_size <= 1_000_000
    assert await project.supervisor.wait_all_gone(5)
    after = await project.run("echo next")  # the session goes on
    assert output(after) == "next"
    assert await project.supervisor.wait_all_gone(5)
    idle = [c for c in own_cgroups() if c not in before]  # kept for the next command (a fresh memory cgroup
    assert len(idle) <= 2 * limits.CgroupPool.SIZE  # slows a command's start): empty
    assert all(not (c / "cgroup.procs").read_text().strip() for c in idle)
    limits.POOL.drain()
    assert [c for c in own_cgroups() if c not in before] == []  # and removed at exit


async def test_within_the_limits_nothing_is_said(project: Project, backend: str) -> None:
    project.settings({"sandbox": {"limits": LIMITED}})
    result = await project.run(
        "python3 -c \"b = b'x' * (10 * 1024 * 1024); print('ok')\" && "
        "for i in 1 2 3; do sleep 0.01 & done; wait; head -c 1000 /dev/zero > small.bin"
    )
    assert output(result) == "ok"


async def test_unlimited_lifts_a_limit(project: Project, backend: str) -> None:
    project.settings({"sandbox": {"limits": {"fileSize": "unlimited", "processes": 40}}})
    result = await project.run("head -c 3000000 /dev/zero > big.bin && echo written")
    assert output(result) == "written"


def test_settings_parse_sizes_shares_and_unlimited() -> None:
    ram = 16 * 1024**3
    assert parse_amount("8GB", name="m") == 8 * 1000**3
    assert parse_amount("512MiB", name="m") == 512 * 1024**2
    assert parse_amount("25%", name="m", ram=ram) == 4 * 1024**3
    assert parse_amount("unlimited", name="m") is None and parse_amount(0, name="m") is None
    problems: list[str] = []
    settings = LimitSettings.of(LimitsModel(memory="lots", processes=-1), problems, "s.json", ram=ram)
    assert len(problems) == 2 and "memory" in problems[0]
    bounds = settings.resolve(timeout_s=120, default_memory=ram // 2, cpus=2)
    assert bounds.memory == ram // 2 and bounds.processes == DEFAULT_PROCESSES  # the defaults stand in
    assert bounds.cpu_seconds is not None and bounds.cpu_seconds >= 240  # the timeout on every CPU
    assert settings.resolve(timeout_s=None, default_memory=1, cpus=2).cpu_seconds is None  # background


async def test_an_invalid_limit_is_a_problem_and_the_default_applies(project: Project) -> None:
    project.settings({"sandbox": {"limits": {"memory": "plenty"}}})
    assert any("sandbox.limits.memory" in p for p in project.sandbox.problems())
    assert output(await project.run("echo fine")) == "fine"


# -- the spill file -----------------------------------------------------------------------------------------


async def test_a_flood_of_output_keeps_a_bounded_spill_file(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridge.execution import output as output_module

    monkeypatch.setattr(output_module, "SPILL_HEAD_CHARS", 200_000)
    monkeypatch.setattr(output_module, "SPILL_TAIL_CHARS", 100_000)
    result = await project.run("seq 1 2000000")  # ~14.9 MB
    spilled = Path(str((result.raw_output or {})["output_file"]))
    text = spilled.read_text()
    assert len(text) < 400_000
    assert text.startswith("1\n2\n") and text.endswith("1999999\n2000000\n")
    assert "characters dropped here" in text
    assert "last 100000 characters are in" in output(result) or "its first" in output(result)


def test_a_tool_use_id_that_is_not_a_plain_name_does_not_name_the_spill_file(tmp_path: Path) -> None:
    for hostile in ("../../escape", "a/b", "x" * 300, ""):
        path = spill_path(tmp_path / "data", hostile)
        assert path.parent == tmp_path / "data" / "bash-output"
        assert not hostile or hostile not in path.name
    assert spill_path(tmp_path / "data", "toolu_01AbC-d_9").name == "toolu_01AbC-d_9.log"


async def test_a_backend_forced_where_it_is_missing_falls_back_to_rlimits(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = next((b for b in ("cgroup2", "systemd", "cgroup1") if not limits._available(b)), None)
    if missing is None:
        pytest.skip("every backend is available here")
    monkeypatch.setenv(limits.LIMITS_ENV, missing)
    assert limits.backend() == "rlimit"
    project.settings({"sandbox": {"limits": {"fileSize": "1MB"}}})
    result = await project.run("head -c 3000000 /dev/zero > big.bin")
    assert result.is_error and (project.ws / "big.bin").stat().st_size <= 1_000_000
    assert '"fileSize": ' in output(result)
