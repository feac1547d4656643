"""Setting a protected path aside: what a sandboxed command created where it must not (a new `.git/hooks`
script, a settings file) is moved out of the workspace, never deleted unseen (bridge/execution/sandbox_watch.py)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import time
import uuid
from pathlib import Path

from bridge.safefs.held import Held

log = logging.getLogger(__name__)

QUARANTINE_COPY_BYTES = 16 * 1024 * 1024  # beyond this, what is set aside across file systems is only listed


def quarantine(path: Path, into: Path) -> Path | bool | None:
    """Move `path` out of the workspace into a fresh folder under `into`: by rename where `into` is on the same
    file system; else renamed beside itself first (at once harmless: no program looks for that name), then
    copied (bounded) and removed. The new path; None when it could only be removed; False when it was gone.

    `path`'s directory is opened exactly (`safefs.Held`): a symbolic link anywhere on its way raises `Changed`
    (an `OSError`), so that only the entry itself is ever moved, never what a link a command made leads to (attack
    round 20: a link `mise -> ~/.cargo` had the bridge move `~/.cargo/config.toml` into the quarantine)."""
    target: Path | None = into / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}" / path.name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    except OSError:
        target = None
    with Held(path.parent) as parent:
        if target is not None:
            try:
                os.rename(path.name, target, src_dir_fd=parent.fd)
                return target
            except FileNotFoundError:
                return False
            except OSError as error:
                if error.errno != errno.EXDEV:
                    log.warning("cannot set %s aside: %s", path, error)
        beside = f".{path.name}.set-aside-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(path.name, beside, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
        except FileNotFoundError:
            return False
        except OSError as error:
            log.error("cannot set %s aside: %s", path, error)
            return False
        # read through the held directory itself, whatever its path leads to by now
        source = Path(f"/proc/self/fd/{parent.fd}") / beside
        copied = _copy_bounded(source, target) if target is not None else False
        try:
            kind = os.stat(beside, dir_fd=parent.fd, follow_symlinks=False).st_mode
        except OSError:
            kind = 0
        if stat.S_ISDIR(kind):
            shutil.rmtree(beside, dir_fd=parent.fd, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(beside, dir_fd=parent.fd)
    return target if copied else None


def _copy_bounded(source: Path, target: Path) -> bool:
    budget = QUARANTINE_COPY_BYTES
    try:
        if os.path.isdir(source) and not os.path.islink(source):
            for folder, _dirs, files in os.walk(source):
                budget -= sum(os.lstat(os.path.join(folder, f)).st_size for f in files)
                if budget < 0:
                    return False
            shutil.copytree(source, target, symlinks=True)
        elif os.path.islink(source):
            os.symlink(os.readlink(source), target)
        else:
            if os.lstat(source).st_size > budget:
                return False
            shutil.copy2(source, target, follow_symlinks=False)
        return True
    except OSError:
        return False
