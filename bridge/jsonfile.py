"""JSON state files the bridge keeps for the user (approvals, trusted folders, settings it writes): read
leniently, written all-or-nothing (a temp file beside it, then `os.replace`), one writer at a time across
bridge processes (an flock on a lock file beside it).

Every JSON file the bridge reads (settings, `.mcp.json`, its own stores) goes through `read_text`: a regular
file only, opened without waiting (a FIFO would hang the whole bridge), at most a size cap (a link to
`/dev/zero` would fill its memory); a folder's own file (`within` the folder) is never read through a link
that leads out of it. `loads` refuses the non-numbers Python's json accepts (`NaN`, `Infinity`, `1e999`)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from bridge import safefs

SETTINGS_MAX_BYTES = 1 << 20  # a settings file or `.mcp.json`: far more than any real one
STATE_MAX_BYTES = 64 << 20  # the user's own stores (Claude Code's `~/.claude.json` keeps history and grows)


def read_text(path: Path, *, within: Path | None = None, max_bytes: int = SETTINGS_MAX_BYTES) -> str:
    """The UTF-8 text of the regular file `path`. `within`: the folder it belongs to; a link on its way that
    leads out of it is not followed. Raises FileNotFoundError, an OSError whose `str()` says why it is not read
    (not a regular file, too big, a link out: bridge/safefs/errors.py), or ValueError (not UTF-8)."""
    roots = [os.fspath(within)] if within is not None else safefs.ANYWHERE
    opened = safefs.open_beneath(path, roots, safefs.READ_FLAGS)  # O_NONBLOCK: a FIFO opens at once
    try:
        if not stat.S_ISREG(opened.stat.st_mode):
            raise safefs.NotRegular(opened.real, opened.stat.st_mode)
        if opened.stat.st_size > max_bytes:
            raise safefs.TooBig(opened.real, opened.stat.st_size, max_bytes)
        data = safefs.read_all(opened.fd, max_bytes, opened.real)
    finally:
        opened.close()
    return data.decode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number (JSON has no {name})")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large a number")
    return value


def loads(text: str) -> Any:
    """`json.loads`, refusing `NaN`, `Infinity` and floats too large to be finite (ValueError)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def read_json(path: Path, *, within: Path | None = None, max_bytes: int = STATE_MAX_BYTES) -> tuple[Any, str | None]:
    """The file's JSON value (None when missing or empty), or None and what is wrong with it (`read_text`)."""
    try:
        text = read_text(path, within=within, max_bytes=max_bytes)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as error:
        return None, f"{path}: cannot be read ({error}); skipped"
    if not text.strip():
        return None, None
    try:
        return loads(text), None
    except json.JSONDecodeError as error:
        return None, f"{path}: not valid JSON (line {error.lineno}: {error.msg}); skipped"
    except ValueError as error:  # NaN, Infinity, an int of too many digits
        return None, f"{path}: not valid JSON ({error}); skipped"


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
