"""The code that `dataclasses` and `attrs` generate at import, compiled once and kept, as Python keeps bytecode.

Every `@dataclass` compiles its `__init__`, `__repr__`, `__eq__`... from source text at import, and so does every
`attrs` class (lsprotocol's ~560 LSP types). Compiling is most of what those imports cost: ~90 of lsprotocol.types'
~175 ms, ~40 of the bridge's ~220 dataclasses' ~100 ms (measured here). The text is the same at every start, so
the code objects are kept in a marshal file per generator and looked up by their source (and compile flags); a
miss is compiled as before.

- Kept where the bridge's own bytecode is (`bridge/__pycache__/`): whoever can write there can already change the
  bridge, so the file adds no new place to trust (a sandboxed command can't write there: it is outside the
  workspace, and were the bridge installed inside one, its `.py` files would be as exposed). Written only where
  Python would write bytecode (not under PYTHONDONTWRITEBYTECODE), unless AGENT_BRIDGE_CODE_CACHE=write (the
  start-up bench, as it runs compileall); AGENT_BRIDGE_CODE_CACHE=0: not used at all.
- Files per interpreter (`cache_tag`: the bytecode's version), one per generator (`run` never reads
  lsprotocol's); an unreadable or foreign file is ignored and replaced. Looked up by the whole source text, so a
  hit is the code `compile` would make (renamed to the file name asked for, the functions in it too: tracebacks
  show it).
- Written once, at exit (`save`), when this start compiled `SAVE_AT` or more new ones (a few differ at every
  start: attrs salts a frozen class's hash with the process's string hash; they are compiled each time); capped
  (`LIMIT` entries), beyond which it starts again from what this start used.
"""

from __future__ import annotations
import __future__

import contextlib
import marshal
import os
import sys
import types
from pathlib import Path
from typing import Any

ENV = "AGENT_BRIDGE_CODE_CACHE"
LIMIT = 20_000
SAVE_AT = 16
_FORMAT = 1


class Kept:
    """One generator's code (`dataclasses`, `attrs`), in a file of its own: `run` never reads lsprotocol's."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.codes: dict[tuple[str, int], types.CodeType] = {}
        self.used: set[tuple[str, int]] = set()
        self.new = 0
        self.loaded = False

    def path(self) -> Path:
        return path(self.name)

    def load(self) -> None:
        if self.loaded:
            return
        self.loaded = True
        try:
            data = marshal.loads(self.path().read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return
        if isinstance(data, tuple) and len(data) == 2 and data[0] == _FORMAT and isinstance(data[1], dict):
            for key, code in data[1].items():
                if (
                    isinstance(key, tuple)
                    and len(key) == 2
                    and isinstance(key[0], str)
                    and isinstance(key[1], int)
                    and isinstance(code, types.CodeType)
                ):
                    self.codes[key] = code

    def compiled(self, source: str, filename: str, flags: int) -> types.CodeType:
        """`compile(source, filename, "exec", flags, dont_inherit=True)`, from the kept code when there is some."""
        key = (source, flags)
        code = self.codes.get(key)
        if code is None:
            code = compile(source, filename, "exec", flags, dont_inherit=True)
            self.codes[key] = code
            self.new += 1
        elif code.co_filename != filename:
            code = _renamed(code, filename)
        self.used.add(key)
        return code

    def save(self) -> None:
        if self.new < SAVE_AT:
            return
        entries = self.codes if len(self.codes) <= LIMIT else {k: self.codes[k] for k in self.used}
        target = self.path()
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError, ValueError):
            target.parent.mkdir(exist_ok=True)
            temporary.write_bytes(marshal.dumps((_FORMAT, entries)))
            os.replace(temporary, target)
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` as compiled under `filename`: the functions it defines carry the name too (tracebacks show it)."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


KEPT = {name: Kept(name) for name in ("dataclasses", "attrs")}


def path(name: str) -> Path:
    """Where `name`'s code is kept: beside the bridge's own bytecode."""
    return Path(__file__).parent / "__pycache__" / f"generated-{name}.{sys.implementation.cache_tag}.marshal"


def _mode() -> str:
    """ "off", "read" (use, never write) or "write"."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off"
    if value == "write":
        return "write"
    return "read" if sys.dont_write_bytecode else "write"


def _future_flags(module: types.ModuleType) -> int:
    """The `from __future__` flags a module's own `compile`/`exec` calls pass on to what they compile."""
    flags = 0
    for name in __future__.all_feature_names:
        feature: __future__._Feature = getattr(__future__, name)
        if getattr(module, name, None) is feature:
            flags |= feature.compiler_flag
    return flags


def install_dataclasses() -> None:
    """Route the `exec` of generated methods in `dataclasses` through the kept code (its `exec` is looked up in
    its module's globals before the builtins: one name there catches every version's calls)."""
    kept = KEPT["dataclasses"]
    if kept.loaded or _mode() == "off":
        return
    import dataclasses

    kept.load()
    flags = _future_flags(dataclasses)

    def exec_kept(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if isinstance(source, str):
            source = kept.compiled(source, "<string>", flags)
        exec(source, globals, locals)

    dataclasses.exec = exec_kept  # type: ignore[attr-defined]


def install_attrs() -> None:
    """The same for `attrs` (pygls and lsprotocol's classes): its one compile-and-eval function, when it has the
    shape we know (else nothing changes)."""
    kept = KEPT["attrs"]
    if kept.loaded or _mode() == "off":
        return
    try:
        from attr import _make
    except ImportError:
        return
    original = getattr(_make, "_compile_and_eval", None)
    if original is None or original.__code__.co_argcount != 4:
        return
    kept.load()
    flags = _future_flags(_make)

    def compile_and_eval(script: str, globs: Any, locs: Any = None, filename: str = "") -> None:
        eval(kept.compiled(script, filename, flags), globs, locs)

    _make._compile_and_eval = compile_and_eval


def save() -> None:
    """Keep what this start compiled, if it was something (atomically; a failure is silent: the next start
    compiles)."""
    if _mode() == "write":
        for kept in KEPT.values():
            kept.save()


def installed() -> list[str]:
    return sorted(name for name, kept in KEPT.items() if kept.loaded)
