"""What a permission question shows besides its title, so that what the user is asked is exactly what runs:
the command as it runs, the parts of it that made the check ask, and every path whose resolution differs from
its name (a symlink, `..`, `~`).
"""

from __future__ import annotations

from bridge.permissions.bash_decision import marks
from bridge.permissions.judged import Judged
from bridge.permissions.types import Decision, Mark, NamedPath, Shown
from bridge.visible import has_hidden


def shown(call: Judged, decision: Decision, *, memory_too: bool) -> Shown:
    """The parts marked are those the deciding step marked; for a protected write, the part writing; for a
    command that can't be read, its hidden characters (else the whole of it)."""
    bash, shell = call.bash, call.facts.shell
    if bash is None or shell is None:
        named = {a.named: NamedPath(a.named, str(a.real)) for a in call.reads + call.writes if a.differs()}
        return Shown(None, (), tuple(named.values()))
    found = decision.shown.marks
    if not found and not bash.verdict.ok:
        found = _unreadable_marks(shell.text, bash.verdict.error or "")
    elif not found:
        protected = bash.protected_part(memory_too=memory_too)
        if protected is not None and protected[0] == decision.reason and protected[1] is not None:
            found = marks([(protected[1], protected[0])])
    return Shown(shell.text, found, bash.named_paths())


def _unreadable_marks(command: str, why: str) -> tuple[Mark, ...]:
    hidden = [
        Mark(i, i + 1, "a character that is not shown as itself")
        for i, c in enumerate(command[:10_000])
        if has_hidden(c)
    ]
    return tuple(hidden[:100]) or (Mark(0, len(command), f"the command {why}"),)
