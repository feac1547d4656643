"""The code that `dataclasses` and `attrs` generate at import, and the programs of regular expressions, compiled
once and kept, as Python keeps bytecode.

Every `@dataclass` compiles its `__init__`, `__repr__`, `__eq__`... from source text at import, and so does every
`attrs` class (lsprotocol's ~560 LSP types). Compiling is most of what those imports cost: ~90 of lsprotocol.types'
~175 ms, ~40 of the bridge's ~220 dataclasses' ~100 ms (measured here). The text is the same at every start, so
the code objects are kept in a marshal file per generator and looked up by their source (and compile flags); a
miss is compiled as before. A regular expression's program (`re`'s parser and compiler are pure Python, ~0.1 ms
a pattern; `run` compiles ~225 while it loads, ~20 ms) is kept the same way, by its pattern and flags.

- Kept where the bridge's own bytecode is (`bridge/__pycache__/`): whoever can write there can already change the
  bridge, so the file adds no new place to trust (a sandboxed command can't write there: it is outside the
  workspace, and were the bridge installed inside one, its `.py` files would be as exposed). Written only where
  Python would write bytecode (not under PYTHONDONTWRITEBYTECODE), unless AGENT_BRIDGE_CODE_CACHE=write (the
  start-up bench, as it runs compileall); AGENT_BRIDGE_CODE_CACHE=0: not used at all.
- Files per interpreter (`cache_tag`: the bytecode's version), one per generator (`run` never reads
  lsprotocol's); an unreadable or foreign file is ignored and replaced. Looked up by the whole source text, so a
  hit is the code `compile` would make (renamed to the file name asked for, the functions in it too: tracebacks
  show it).
- Written once, at exit (`save`), when this start compiled something new: for `attrs`, `SAVE_AT` or more (a few
  differ at every start: attrs salts a frozen class's hash with the process's string hash; they are compiled each
  time); for the others one is enough (their text is the same at every start: a threshold there left the ten
  patterns a change of the bridge added compiled at every start, tokenize's ~5 ms one among them). Capped
  (`LIMIT` entries), beyond which it starts again from what this start used.
- `typing`'s forward references: every string annotation a `TypedDict` or a generic alias reads is compiled as
  an expression (~780 at `run`'s start, most of them pydantic-core's schema types): kept by their text too.
"""

from __future__ import annotations
import __future__

import contextlib
import importlib
import logging
import marshal
import os
import sys
import types
from pathlib import Path
from typing import Any

ENV = "AGENT_BRIDGE_CODE_CACHE"
LIMIT = 20_000
SAVE_AT = 16
_FORMAT = 3  # 3: each value kept marshalled on its own, read when first asked for


class Kept:
    """One generator's code (`dataclasses`, `attrs`), in a file of its own: `run` never reads lsprotocol's."""

    def __init__(self, name: str, save_at: int = 1) -> None:
        self.name = name
        self.save_at = save_at  # the new entries that make a start write the file
        self.codes: dict[Any, Any] = {}
        self.used: set[Any] = set()
        self.new = 0
        self.loaded = False
        self.keeping = True  # new code is kept (`loaded()` ends it for what is the session's data)

    def path(self) -> Path:
        return path(self.name)

    def stamp(self) -> int | None:
        """What else a file must have been written under to be read (beyond the interpreter's cache tag)."""
        return None

    def valid(self, key: object, value: object) -> bool:
        return (
            isinstance(key, tuple)
            and len(key) == 2
            and isinstance(key[0], str)
            and isinstance(key[1], int)
            and isinstance(value, types.CodeType)
        )

    def load(self) -> None:
        """Read the file: its keys now, each value as the bytes it was written as (`get` reads one when it is
        first asked for: a start uses a part of what all starts compiled, and reading a code object is most of
        a file's cost)."""
        if self.loaded:
            return
        self.loaded = True
        try:
            data = marshal.loads(self.path().read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return
        if (
            isinstance(data, tuple)
            and len(data) == 3
            and data[0] == _FORMAT
            and data[1] == self.stamp()
            and isinstance(data[2], dict)
        ):
            self.codes = {key: value for key, value in data[2].items() if isinstance(value, bytes)}

    def get(self, key: Any) -> Any:
        """The value kept under `key`, or None (nothing kept, or what was kept is unreadable or not a value of
        this generator's: then it is dropped)."""
        value = self.codes.get(key)
        if isinstance(value, bytes):
            try:
                value = marshal.loads(value)
            except (EOFError, ValueError, TypeError):
                value = None
            if value is None or not self.valid(key, value):
                self.codes.pop(key, None)
                return None
            self.codes[key] = value
        return value

    def compiled(self, source: str, filename: str, flags: int, mode: str = "exec") -> types.CodeType:
        """`compile(source, filename, mode, flags, dont_inherit=True)`, from the kept code when there is some (a
        generator's file holds one mode's code)."""
        key = (source, flags)
        code: types.CodeType | None = self.get(key)
        if code is None:
            code = compile(source, filename, mode, flags, dont_inherit=True)
            self.codes[key] = code
            self.new += 1
        elif code.co_filename != filename:
            code = _renamed(code, filename)
        self.used.add(key)
        return code

    def save(self) -> None:
        if self.new < self.save_at:
            return
        codes = dict(self.codes)  # (copies are taken whole: another thread may compile meanwhile)
        if len(codes) > LIMIT:
            codes = {k: codes[k] for k in list(self.used) if k in codes}
        entries = {k: v if isinstance(v, bytes) else marshal.dumps(v) for k, v in codes.items()}
        target = self.path()
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError, ValueError):
            target.parent.mkdir(exist_ok=True)
            data: Any = (_FORMAT, self.stamp(), entries)
            temporary.write_bytes(marshal.dumps(data))
            os.replace(temporary, target)
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


class Programs(Kept):
    """Regular expressions' compiled programs: what `re`'s parser and compiler (pure Python, ~0.1 ms a pattern)
    make of a pattern and its flags, the arguments `re._compiler.compile` hands to `_sre.compile`. Kept under
    the regex engine's version (`_sre.MAGIC`); `_sre.compile` checks every program it is given (a program it
    rejects is compiled again from the pattern)."""

    def stamp(self) -> int | None:
        magic = getattr(importlib.import_module("_sre"), "MAGIC", None)
        return magic if isinstance(magic, int) else None

    def valid(self, key: object, value: object) -> bool:
        return (
            isinstance(key, tuple)
            and len(key) == 2
            and isinstance(key[0], (str, bytes))
            and isinstance(key[1], int)
            and isinstance(value, tuple)
            and len(value) == 5
            and isinstance(value[0], int)
            and isinstance(value[1], list)
            and isinstance(value[2], int)
            and isinstance(value[3], dict)
            and isinstance(value[4], tuple)
        )


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` as compiled under `filename`: the functions it defines carry the name too (tracebacks show it)."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


KEPT: dict[str, Kept] = {
    "dataclasses": Kept("dataclasses"),
    "attrs": Kept("attrs", save_at=SAVE_AT),
    "typing": Kept("typing"),
    "regex": Programs("regex"),
}


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


def install_typing() -> None:
    """The same for `typing.ForwardRef`'s compiling of a string annotation (`compile(arg, "<string>", "eval")`,
    `compile` looked up in typing's globals first): only that very call is kept; any other goes to the builtin."""
    kept = KEPT["typing"]
    if kept.loaded or _mode() == "off":
        return
    import builtins
    import typing

    if getattr(typing, "compile", builtins.compile) is not builtins.compile:
        return  # someone else's: left alone
    kept.load()
    flags = _future_flags(typing)

    def compile_kept(source: Any, filename: Any, mode: Any, *rest: Any, **options: Any) -> Any:
        if rest or options or mode != "eval" or filename != "<string>" or not isinstance(source, str):
            return builtins.compile(source, filename, mode, *rest, **options)
        return kept.compiled(source, filename, flags, mode)

    typing.compile = compile_kept  # type: ignore[attr-defined]


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


def install_regex() -> None:
    """Route `re`'s compiling of a pattern through the kept programs: a pattern compiled at an earlier start is
    handed to `_sre.compile` as it was then, without parsing it again (~15 ms of `run`'s load). A program is
    kept from the very call that made it (the pattern object passed on is the one asked for, on the same
    thread), so nothing else's program is ever kept under a pattern; `re.DEBUG` (which prints) is never kept,
    nor anything compiled after `loaded()`."""
    kept = KEPT["regex"]
    if kept.loaded or _mode() == "off":
        return
    import threading

    _sre: Any = importlib.import_module("_sre")
    _compiler: Any = importlib.import_module("re._compiler")
    original = _compiler.compile
    engine = _sre.compile
    asked = threading.local()
    debug = 128  # re.DEBUG

    def compile_kept(p: Any, flags: int = 0) -> Any:
        if not isinstance(p, (str, bytes)) or not isinstance(flags, int) or flags & debug:
            return original(p, flags)
        key = (p, flags)
        program = kept.get(key)
        if program is not None:
            kept.used.add(key)
            final, code, groups, groupindex, indexgroup = program
            try:
                return engine(p, final, list(code), groups, dict(groupindex), indexgroup)
            except (TypeError, ValueError, RuntimeError, OverflowError):
                kept.codes.pop(key, None)  # not a program this engine takes: made again below
        asked.key = key
        try:
            return original(p, flags)
        finally:
            asked.key = None

    def engine_keeping(
        pattern: Any, flags: int, code: list[int], groups: int, groupindex: dict[str, int], indexgroup: tuple[Any, ...]
    ) -> Any:
        compiled = engine(pattern, flags, code, groups, groupindex, indexgroup)
        key = getattr(asked, "key", None)
        if key is not None and key[0] is pattern and kept.keeping:
            asked.key = None
            kept.codes[key] = (int(flags), [int(c) for c in code], int(groups), dict(groupindex), tuple(indexgroup))
            kept.used.add(key)
            kept.new += 1
        return compiled

    kept.load()
    _sre.compile = engine_keeping
    _compiler.compile = compile_kept


def loaded() -> None:
    """The bridge is loaded (each front end says so): from here on, the patterns compiled are the sessions' own
    (rules, paths, what the model asked for), and they are not kept: the file holds only what every start of
    this bridge compiles, and a long `serve` doesn't keep a program per pattern it ever saw. Kept programs are
    still used."""
    kept = KEPT["regex"]
    if kept.loaded and kept.keeping:
        logging.getLogger(__name__).debug(
            "the bridge is loaded: %d regular expressions' programs kept (%d new); no more are kept",
            len(kept.codes),
            kept.new,
        )
    kept.keeping = False


def save() -> None:
    """Keep what this start compiled, if it was something (atomically; a failure is silent: the next start
    compiles)."""
    if _mode() == "write":
        for kept in KEPT.values():
            kept.save()


def installed() -> list[str]:
    return sorted(name for name, kept in KEPT.items() if kept.loaded)
