"""Opening files so that what was checked is what is used: no check-then-open-by-name race.

The file tools run in the bridge, outside the sandbox, while a sandboxed command may rename files and flip
names between a file and a symlink as fast as it likes. Resolving a path, checking it, then opening it by
name lets such a flip send the open somewhere else (a workspace name that is a link to `~/.ssh/id_rsa` by
the time it is opened). So every open here is *exact*:

- `open_exact(real)` opens an absolute path that has no symlink and no `..` in it, following no symlink on
  the way (Linux `openat2` with `RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`; elsewhere, or when the kernel
  lacks it, a walk from `/` one component at a time with `O_NOFOLLOW`). A link that appeared since the path
  was checked makes it fail (`Changed`), never follow. Descending by plain names from `/` cannot leave the
  path named, so what is opened is what lives at `real` now.
- `Beneath(real_dir)` is an opened directory; `.open(relative)` opens link-free paths under it
  (`openat2(dirfd, …, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or the same walk from the dir fd): many opens
  under one checked root (search results).
- `resolve(path, roots)` finds the real path of a path that may contain symlinks, in user space, one
  component at a time with `O_NOFOLLOW` opens relative to directory fds: a symlink is followed only while its
  target stays inside `roots`, and a target outside them is refused before anything out there is touched
  (`LinkOut`); `ANYWHERE` as the roots allows every place on every drive (Windows' `/` is one drive's root).
  `open_beneath` is `resolve` then `open_exact` of the result, re-resolved if the tree changed
  in between (a bounded number of times).
- `read_regular(root, path, max_bytes)` is the one-call form for small files a feature reads from the project
  (memory files): a regular file inside `root`, opened without following a link out, at most `max_bytes`.
- `Held(real_dir)` is an exactly opened directory for steps on the names in it (read, create, link, rename,
  unlink, rmdir): a restore's. The portable back end holds it in place meanwhile (portable.py).
- `write_exact(real, data)` replaces (or creates) the file at `real` through a temp file created in the
  exactly opened parent directory and renamed there (`renameat` with both dir fds): the rename replaces the
  name in that directory, whatever it is at that moment, so a flip to a symlink cannot redirect the write.
  The mode (and, where allowed, the owner) of the file replaced is kept.

Nothing here follows a path by name after checking it — where the OS has `dir_fd`. Where it has not (Windows),
the same interface runs on the check-after-open back end (portable.py): open by name, then prove that the
handle is the file judged (its identity against the name's, the directories on the way unchanged and not
links, before and after), refusing with the same errors; weaker by a window its docstring names.
`backend()` says which runs: chosen by capability; `AGENT_BRIDGE_SAFEFS=walk` forces the component walk and
`AGENT_BRIDGE_SAFEFS=portable` (or the bridge-wide `AGENT_BRIDGE_PORTABLE=1`) the portable back end (tests
cover all three). Errors are `OSError`s (the kernel's, or the subclasses of `UnsafePath`, errors.py, with a
message a person can act on). Only the standard library is used: this is the ground layer.
"""

from __future__ import annotations

from bridge.safefs.errors import (
    Changed,
    LinkOut,
    NotRegular,
    Outside,
    TooBig,
    UnsafePath,
    Unverifiable,
    WrittenElsewhere,
    describe_mode,
)
from bridge.safefs.held import Held
from bridge.safefs.opens import (
    FORCE_ENV,
    O_PATH,
    READ_FLAGS,
    Beneath,
    backend,
    open_exact,
    openat2_available,
    read_all,
    stat_exact,
)
from bridge.safefs.resolution import ANYWHERE, Opened, inside, open_beneath, read_regular, real_roots, resolve
from bridge.safefs.watch import NameWatch
from bridge.safefs.writes import Written, make_dirs_exact, write_exact

__all__ = [
    "ANYWHERE",
    "FORCE_ENV",
    "O_PATH",
    "READ_FLAGS",
    "Beneath",
    "Changed",
    "Held",
    "LinkOut",
    "NameWatch",
    "NotRegular",
    "Opened",
    "Outside",
    "TooBig",
    "UnsafePath",
    "Unverifiable",
    "Written",
    "WrittenElsewhere",
    "backend",
    "describe_mode",
    "inside",
    "make_dirs_exact",
    "open_beneath",
    "open_exact",
    "openat2_available",
    "read_all",
    "read_regular",
    "real_roots",
    "resolve",
    "stat_exact",
    "write_exact",
]
