"""JSON state files the bridge keeps for the user (approvals, trusted folders, settings it writes): read
leniently, written all-or-nothing (a temp file beside it, then `os.replace`), one writer at a time across
bridge processes (an flock on a lock file beside it)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def read_json(path: Path) -> tuple[Any, str | None]:
    """The file's JSON value (None when missing or empty), or None and what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as error:
        return None, f"{path}: cannot be read ({error}); skipped"
    if not text.strip():
        return None, None
    try:
        return json.loads(text), None
    except json.JSONDecodeError as error:
        return None, f"{path}: not valid JSON (line {error.lineno}: {error.msg}); skipped"


def jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """A JSON-lines file's records as (line number, the object with a `type`), blank lines passed over; a line
    that is not such an object comes as (number, what is wrong with it), for the reader to report and skip."""
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                record["type"]
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                yield number, str(error)
                continue
            yield number, record


def write_json_atomic(path: Path, data: Any, *, mode: int | None = None) -> None:
    """Replace `path` with `data` as indented JSON; readers see the old file or the new one, never a part.
    `mode`: the new file's permission bits (default: the temp file's 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One writer of `path` at a time across processes (an exclusive flock on `<path>.lock`; on Windows, a
    byte-range lock on it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        try:
            import fcntl
        except ImportError:  # Windows
            with _windows_lock(lock):
                yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def keyed_entry(path: Path, section: str, key: str) -> Iterator[dict[str, Any]]:
    """The object `data[section][key]` of the JSON store at `path`, to change in place: read under the lock,
    written back all-or-nothing when the block ends (nothing written when it raises). A store that can't be read
    is never overwritten: ValueError. The other sections and keys are kept as they were."""
    with locked(path):
        data, problem = read_json(path)
        if problem:
            raise ValueError(f"{problem}; not overwriting it")
        data = data if isinstance(data, dict) else {}
        found = data.get(section)
        entries = data[section] = found if isinstance(found, dict) else {}
        entry = entries.get(key)
        entry = entries[key] = entry if isinstance(entry, dict) else {}
        yield entry
        write_json_atomic(path, data)


def stat_key(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is replaced or written (mtime, size, inode); None when it is not there."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


@contextlib.contextmanager
def _windows_lock(lock: IO[str]) -> Iterator[None]:
    try:
        import msvcrt
    except ImportError:  # neither flock nor msvcrt (only a test that pretends to be Windows): no lock
        yield
        return
    lock.seek(0)
    locking: Any = getattr(msvcrt, "locking")  # noqa: B009 (Windows-only: typeshed has it only there)
    locking(lock.fileno(), getattr(msvcrt, "LK_LOCK"), 1)  # noqa: B009
    try:
        yield
    finally:
        lock.seek(0)
        locking(lock.fileno(), getattr(msvcrt, "LK_UNLCK"), 1)  # noqa: B009
