"""Small on-disk caches of what a start-up would otherwise compute (tool schemas, the `initialize` answer),
each keyed by the code that computes it: a changed file of the bridge or of a library it names is a new key.
Light imports only: this runs before the bridge is loaded."""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

log = logging.getLogger(__name__)


def data_dir(environ: Mapping[str, str]) -> Path:
    """`bridge.config.default_data_dir()` (tests hold them equal)."""
    return Path(environ.get("AGENT_BRIDGE_DATA_DIR") or platformdirs.user_data_dir("agent-bridge"))


def cache_dir(environ: Mapping[str, str]) -> Path:
    return data_dir(environ) / "cache"


@lru_cache(maxsize=8)
def code_key(packages: tuple[str, ...] = ()) -> str:
    """Changes whenever a Python file of the bridge or of `packages` changes (path, size, mtime)."""
    digest = hashlib.sha256(sys.version.encode())
    roots = [Path(__file__).resolve().parent]
    for name in packages:
        spec = find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(Path(p) for p in spec.submodule_search_locations)
        elif spec is not None and spec.origin:
            roots.append(Path(spec.origin))
    for root in roots:
        if root.is_file():
            stat = root.stat()
            digest.update(f"{root}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
            continue
        for directory, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(directory, name))
                    digest.update(f"{directory}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def key_of(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:32]


def write_atomically(path: Path, data: bytes) -> None:
    """Whole or not at all (a concurrent reader never sees half a file); a failure is only logged."""
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as out:
            out.write(data)
        os.replace(out.name, path)
    except OSError:
        log.info("cannot write the cache file %s", path, exc_info=True)
