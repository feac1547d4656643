"""Whether a command that reads whole trees (`grep -r`, `rg`, `grep -R`, `rg -L`) would read one of the bridge's own
secrets (own_secrets.py) that no one else stops: the engine denies it in every mode (engine step 1), as it denies
naming one — a question would be skipped by bypassPermissions and `--dangerously-approve-all`.

- Without the OS sandbox (which masks the secrets' paths): a tree whose root holds a secret; a tree walked following
  links (`grep -R`) with a link in it to a secret or to a directory holding one (a walk cut short by the budget
  asks, whatever the mode: engine step 5).
- With or without it (it masks paths, not files): a file in the tree that is another name of a secret (a hard
  link), looked for only while a secret has a second name somewhere (`SecretInodes.any_linked`).
- A program the checker does not vouch for (`tar`, `cp -rL`, `find -L`, an unknown one) is taken to walk every
  folder it names, following links; its walk cut short is let through (such a command asks, but in bypass).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path

from bridge.permissions.bash_facts import BashFacts, Tree
from bridge.permissions.own_secrets import OwnSecrets
from bridge.permissions.shell_paths import Budget
from bridge.permissions.types import Decision

NO_SANDBOX = "and no OS sandbox hides it from commands here"


def tree_secret(secrets: OwnSecrets, facts: BashFacts, *, sandboxed: bool) -> Decision | None:
    """A deny when the command would read a secret through a tree it reads; an ask, whatever the mode, when a walk
    that had to be made was cut short (it can't be told)."""
    inodes = functools.cache(secrets.inodes.any_linked)  # asked once, and only of a tree
    for part in facts.parts:
        for tree in part.trees:
            why = _tree(secrets, facts.budget, tree, part.part.text, sandboxed, inodes)
            if why is not None:
                return why
        if part.part.read_only:
            continue
        # a program the checker does not vouch for (`tar`, `cp -rL`, `find -L`) may walk any folder it is given,
        # through links: taken as `grep -R`, but a walk cut short is let through (it asks, but for bypass)
        for access in [*part.reads, *part.maybe_reads]:
            if os.path.isdir(access.real):
                tree = Tree(access, follow=True)
                why = _tree(secrets, facts.budget, tree, part.part.text, sandboxed, inodes, unsure=False)
                if why is not None:
                    return why
    return None


def _tree(
    secrets: OwnSecrets,
    budget: Budget,
    tree: Tree,
    text: str,
    sandboxed: bool,
    linked_somewhere: Callable[[], bool],
    *,
    unsure: bool = True,
) -> Decision | None:
    """Why reading `tree` reads a secret; past the budget, why it can't be told (`unsure`) or None."""
    if not sandboxed and (held := secrets.held_in([tree.root])) is not None:
        root, which = held
        return _deny(
            f"The command reads all of {root.real}, which holds the bridge's own secret ({which.what}), {NO_SANDBOX}"
        )
    links = tree.follow and not sandboxed
    inodes = linked_somewhere()
    if not links and not inodes:
        return None
    # the walk is the program's: into `.git` too, through links only when it follows them
    stack, seen = [str(tree.root.real)], set[tuple[int, int]]()
    while stack:
        path = stack.pop()
        try:
            st = os.stat(path)
        except OSError:
            continue
        if links and os.path.islink(path):
            real = Path(os.path.realpath(path))
            secret = secrets.reached_by(real)
            if secret is not None:
                return _deny(
                    f"`{text}` follows the link {path} to {real}, which is or holds the bridge's own secret "
                    f"({secret.what}), {NO_SANDBOX}"
                )
        if stat.S_ISREG(st.st_mode):
            what = secrets.linked(Path(os.path.realpath(path))) if inodes and st.st_nlink > 1 else None
            if what is not None:
                return _deny(f"`{text}` reads {path}, another name (a hard link) of the bridge's own secret ({what})")
            continue
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            with os.scandir(path) as found:
                entries = list(found)
        except OSError:
            continue
        if not budget.spend(len(entries)):
            if not unsure:
                return None
            why = "it follows links and no OS sandbox hides them" if links else "one of them has a hard link"
            return Decision(
                "ask",
                f"`{text}` reads below {tree.root.written}: too many files to check for the bridge's own secrets "
                f"({why})",
            )
        stack += [e.path for e in entries if tree.follow or not e.is_symlink()]
    return None


def _deny(why: str) -> Decision:
    return Decision("deny", f"{why}; no tool may read it")
