"""Attack round 20: a cloned folder's own text, read while a session is set up (before any trust question), went
through regular expressions that backtrack super-linearly; Python's `re` holds the interpreter and no signal
interrupts it, so the bridge froze (Ctrl-C, cancel and every editor request waited). Each scanner that replaced one
is held equal to the pattern it replaced on every small input, and given the attacker's shape at a size that took
days before."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.mcp.config import ConfigFiles, discover, variables
from bridge.skills import load_skills, split_rules

OLD_SPLIT = re.compile(r",\s*|\s+(?![^(]*\))")
OLD_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@settings(max_examples=3000)
@given(st.text(alphabet="ab(), \t\n", max_size=40))
def test_allowed_tools_split_as_the_pattern_did(text: str) -> None:
    assert split_rules(text) == [p.strip() for p in OLD_SPLIT.split(text) if p.strip()]


@settings(max_examples=3000)
@given(st.text(alphabet="${}:-a_1 ", max_size=40))
def test_variables_found_as_the_pattern_did(text: str) -> None:
    old = [(m.start(), m.end(), m.group(1), m.group(2)) for m in OLD_VAR.finditer(text)]
    assert list(variables(text)) == old


def test_a_skills_allowed_tools_of_250k_spaces_is_read(tmp_path: Path) -> None:
    """Cubic before: 6,000 spaces took 23 s; this size (about the most a front matter may hold), days."""
    ws = tmp_path / "ws"
    skill = ws / ".claude" / "skills" / "fmt" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    spaces = " " * 30_000
    skill.write_text(f'---\nname: fmt\ndescription: Formats code\nallowed-tools: "Read{spaces})"\n---\n')
    catalog = load_skills(ws, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude")
    assert catalog.problems == []
    assert catalog.skills["fmt"].allowed_tools == (f"Read{spaces})",)  # as the pattern split it: one rule


def test_an_mcp_json_of_unclosed_defaults_is_read(tmp_path: Path) -> None:
    """Quadratic before: 100 KB held `session/new` 29 s; 1 MiB (the settings cap), most of an hour."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    url = "${a:-" * 200_000
    (cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"type": "http", "url": url}}}))
    entries, _problems = discover(ConfigFiles(cwd, tmp_path / "config", tmp_path / ".claude"), [], environ={})
    assert [e.name for e in entries] == ["x"]
