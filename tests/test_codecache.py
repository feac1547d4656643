"""The kept code of generated methods (bridge/codecache.py): a start that uses it makes classes that behave as
freshly compiled ones, compiles nothing it kept, and never trusts a file it can't read as its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.codecache import SAVE_AT

# Classes as the bridge and lsprotocol make them; what each start prints about them must not depend on the cache.
SCRIPT = r"""
import json, sys, inspect
from pathlib import Path
from bridge import codecache
codecache.path = lambda name: Path(f"{sys.argv[1]}.{name}")
codecache.install_dataclasses()
codecache.install_attrs()
import dataclasses
from dataclasses import dataclass, field
import attrs

@dataclass(frozen=True)
class Point:
    x: int
    y: "int" = 2
    tags: tuple[str, ...] = ()

@dataclass(order=True)
class Ranked:
    rank: int
    name: str = "n"
    items: list[int] = field(default_factory=list, compare=False)

@attrs.define
class Shape:
    sides: int
    label: str = "s"

@attrs.frozen
class Pinned:
    value: int

twins = [attrs.make_class(name, {"same": attrs.field(default=0)}) for name in ("TwinOne", "TwinTwo")]
made = [dataclasses.make_dataclass(f"D{i}", [(f"f{i}", int)])(i) for i in range(12)]
shapes = {f"kind{i}": attrs.make_class(f"Kind{i}", {f"a{i}": attrs.field(default=i)}) for i in range(20)}
p = Point(1)
out = {
    "repr": [repr(p), repr(Ranked(1)), repr(Shape(3)), repr(Pinned(4))],
    "eq": [p == Point(1), p == Point(1, 3), Shape(3) == Shape(3), Pinned(1) == Pinned(2)],
    "order": sorted([Ranked(2), Ranked(1, "b")]) == [Ranked(1, "b"), Ranked(2)],
    "hash": hash(p) == hash(Point(1)) and hash(Pinned(4)) == hash(Pinned(4)),
    "frozen": False,
    "signature": str(inspect.signature(Point.__init__)),
    "annotations": {k: str(v) for k, v in Point.__init__.__annotations__.items()},
    "made": [repr(m) for m in made],
    "defaults": [getattr(shapes[f"kind{i}"](), f"a{i}") for i in range(20)],
    "filename": Point.__init__.__code__.co_filename,
    "attrs_filename": Shape.__init__.__code__.co_filename,
    "twins": [t.__init__.__code__.co_filename for t in twins],
    "installed": codecache.installed(),
}
try:
    p.x = 3
except Exception as error:
    out["frozen"] = type(error).__name__
out["new"] = sum(kept.new for kept in codecache.KEPT.values())
print(json.dumps(out))
codecache.save()
"""


def start(cache: Path, mode: str | None = "write", *, seed: str = "0") -> dict[str, object]:
    """One interpreter's start. `seed`: PYTHONHASHSEED, fixed by default (attrs salts a frozen class's hash with
    a string's hash, which differs at every start otherwise: "random")."""
    env = {k: v for k, v in os.environ.items() if k != "AGENT_BRIDGE_CODE_CACHE"}
    env["PYTHONHASHSEED"] = seed
    if mode is not None:
        env["AGENT_BRIDGE_CODE_CACHE"] = mode
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cache)], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def files(cache: Path) -> list[Path]:
    """The two files a start keeps (its own for each generator), under the name the script gives them."""
    return [cache.with_name(f"{cache.name}.{name}") for name in ("dataclasses", "attrs")]


def exists(cache: Path) -> bool:
    return all(f.exists() for f in files(cache))


def kept(cache: Path) -> list[tuple[int, bytes]]:
    return [(f.stat().st_mtime_ns, f.read_bytes()) for f in files(cache)]


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    """The classes behave alike (what was compiled, and whether the cache was in use, aside)."""
    return {k: v for k, v in a.items() if k not in ("new", "installed")} == {
        k: v for k, v in b.items() if k not in ("new", "installed")
    }


def test_a_start_with_the_kept_code_compiles_nothing_and_makes_the_same_classes(tmp_path: Path) -> None:
    cache = tmp_path / "generated.marshal"
    plain = start(cache, "0")  # the control: no cache at all
    assert (
        not any(f.exists() for f in files(cache))
        and plain["installed"] == []
        and plain["frozen"] == "FrozenInstanceError"
    )
    first = start(cache)
    assert exists(cache) and first["installed"] == ["attrs", "dataclasses"]
    assert isinstance(first["new"], int) and first["new"] >= SAVE_AT
    second = start(cache)
    assert second["new"] == 0  # every generated method came from the file
    assert same(plain, first) and same(first, second)
    assert second["filename"] == "<string>" and str(second["attrs_filename"]).startswith("<attrs generated")
    # two classes alike but for their names share one kept code; each method still names its own class
    twins = second["twins"]
    assert isinstance(twins, list) and "TwinOne" in twins[0] and "TwinTwo" in twins[1]


def test_what_changes_at_every_start_is_compiled_each_time_without_rewriting_the_file(tmp_path: Path) -> None:
    cache = tmp_path / "generated.marshal"
    start(cache, seed="random")
    before = kept(cache)
    for _ in range(3):
        assert start(cache, seed="random")["new"] == 1  # the frozen attrs class's salted __hash__: compiled again
    assert kept(cache) == before


@pytest.mark.parametrize(
    "content",
    [b"", b"not marshal at all", b"\xe3" + b"\0" * 40, None],
    ids=["empty", "garbage", "truncated", "foreign"],
)
def test_a_file_that_is_not_its_own_is_ignored_and_replaced(tmp_path: Path, content: bytes | None) -> None:
    import marshal

    cache = tmp_path / "generated.marshal"
    # foreign: valid marshal of the wrong shape (a dict of code objects keyed by something else)
    for each in files(cache):
        each.write_bytes(content if content is not None else marshal.dumps({"x": compile("1", "f", "exec")}))
    control = start(tmp_path / "none.marshal", "0")
    result = start(cache)
    assert same(control, result)
    assert isinstance(result["new"], int) and result["new"] >= SAVE_AT  # nothing was taken from it
    assert start(cache)["new"] == 0  # replaced by a good one


def test_a_damaged_entry_is_compiled_again_and_the_rest_still_read(tmp_path: Path) -> None:
    """Each value is read when first asked for (reading a start's every code object up front was most of the
    file's cost): one that is damaged, or not code, is compiled again alone; the file stays usable."""
    import marshal

    cache = tmp_path / "generated.marshal"
    control = start(cache)
    dataclasses_file = cache.with_name(f"{cache.name}.dataclasses")
    fmt, stamp, entries = marshal.loads(dataclasses_file.read_bytes())
    assert entries and all(isinstance(value, bytes) for value in entries.values())
    damaged, not_code = list(entries)[:2]
    entries[damaged] = b"\xe3 not marshal"
    entries[not_code] = marshal.dumps(("a tuple", 1))
    dataclasses_file.write_bytes(marshal.dumps((fmt, stamp, entries)))
    result = start(cache)
    assert same(control, result)
    assert result["new"] == 2  # those two alone
    assert start(cache)["new"] == 0  # and kept again, as made


def test_it_is_written_only_where_python_writes_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "generated.marshal"
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as for .pyc files: no variable of ours, no writing
    start(cache, None)
    assert not any(f.exists() for f in files(cache))
    start(cache, "write")  # the bench's (and an installer's) explicit choice
    assert exists(cache)
    assert start(cache, None)["new"] == 0  # read, even where it is never written
    assert start(cache, "0")["installed"] == []


def test_the_file_is_kept_beside_the_bridges_own_bytecode() -> None:
    from bridge import codecache

    for name in codecache.KEPT:
        where = codecache.path(name)
        assert where.parent == Path(codecache.__file__).parent / "__pycache__"
        assert sys.implementation.cache_tag in where.name and name in where.name


# Patterns of every kind the engine has (named groups, flags inline and passed, bytes, look-around, conditionals,
# possessive-free repeats, unicode classes); what each start prints about them must not depend on the kept programs.
REGEX_SCRIPT = r"""
import json, re, sys, threading
from pathlib import Path
from bridge import codecache
codecache.path = lambda name: Path(f"{sys.argv[1]}.{name}")
codecache.install_regex()
patterns = [
    (r"(?P<key>[A-Za-z_]\w*)\s*=\s*(?P<value>.+?)\s*$", re.M),
    (r"(?i)straße|ǅ", 0),
    (r"^(?:(?P<q>['\"])(?P<body>.*?)(?P=q)|(?P<bare>\S+))", 0),
    (r"(?<=\$)\{?(\w+)\}?(?!\w)", 0),
    (r"(a)?(?(1)b|c)", 0),
    (r" \d{2,4} (?# a year ) - \d{1,2} ", re.X),
    (rb"\x00[\x01-\x7f]+\xff", 0),
    (r"[^\W\d_]+", re.U),
    (r"(?s)<!--.*?-->", 0),
    (r"\bfoo\b|\Bbar", re.I | re.A),
]
subjects = ["x = 1\nname_2 =  two words  \n", "STRASSE strasse Straße ǆ", "'quoted one' rest",
            "echo ${HOME}/$USER x$y1", "ab c b", " 2026 - 12 ",
            "caf\u00e9 na\u00efve 123 _x", "a<!-- one\ntwo -->b", "FOO foobar xbar"]
out = []
for pattern, flags in patterns:
    compiled = re.compile(pattern, flags)
    row = {"groups": compiled.groups, "groupindex": dict(compiled.groupindex), "flags": int(compiled.flags)}
    if isinstance(pattern, bytes):
        row["found"] = [m.span() for m in compiled.finditer(b"\x00abc\xff \x00\x80\xff \x00z\xff")]
    else:
        row["found"] = [[m.group(0), m.groups()] for s in subjects for m in compiled.finditer(s)]
    out.append(row)
# several threads compiling at once each keep their own pattern's program
def worker(n):
    for i in range(40):
        assert re.compile(f"t{n}x{i}(\\d+)").fullmatch(f"t{n}x{i}{n}{i}").group(1) == f"{n}{i}"
threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
for t in threads: t.start()
for t in threads: t.join()
kept = codecache.KEPT["regex"]
# once the bridge is loaded, what compiles is a session's (its rules, its paths): used, never kept
codecache.loaded()
session = re.compile(r"/home/someone/\.secret-(\d+)")
assert session.fullmatch("/home/someone/.secret-42").group(1) == "42"
print(json.dumps({"out": out, "new": kept.new, "installed": codecache.installed(),
                  "session_kept": session.pattern in {key[0] for key in kept.codes}}))
codecache.save()
"""


def script_start(script: str, cache: Path, mode: str = "write", **env: str) -> dict[str, Any]:
    """One interpreter's start running `script` with the kept code at `cache`; what it prints, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache)],
        env={**os.environ, "AGENT_BRIDGE_CODE_CACHE": mode, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def regex_start(cache: Path, mode: str = "write") -> dict[str, Any]:
    return script_start(REGEX_SCRIPT, cache, mode)


def test_patterns_compiled_from_kept_programs_match_as_freshly_compiled_ones(tmp_path: Path) -> None:
    cache = tmp_path / "generated.marshal"
    plain = regex_start(cache, "0")
    assert plain["installed"] == [] and not cache.with_name(f"{cache.name}.regex").exists()
    first = regex_start(cache)
    assert first["installed"] == ["regex"] and first["new"] >= 10 + 4 * 40
    second = regex_start(cache)
    assert second["new"] == 0  # every program came from the file, threads' too
    assert plain["out"] == first["out"] == second["out"]
    assert not first["session_kept"] and not second["session_kept"]
    assert b"secret-" not in cache.with_name(f"{cache.name}.regex").read_bytes()


def test_a_kept_program_the_engine_rejects_is_compiled_again_from_its_pattern(tmp_path: Path) -> None:
    import marshal

    cache = tmp_path / "generated.marshal"
    control = regex_start(cache)
    kept = cache.with_name(f"{cache.name}.regex")
    fmt, stamp, programs = marshal.loads(kept.read_bytes())
    # programs the engine checks and refuses (as a damaged file would give): each is made again from its pattern
    tampered: dict[Any, Any] = {key: marshal.dumps((0, [99999, 1, 2], 0, {}, (None,))) for key in programs}
    kept.write_bytes(marshal.dumps((fmt, stamp, tampered)))
    result = regex_start(cache)
    assert result["out"] == control["out"] and result["new"] == control["new"]
    assert regex_start(cache)["new"] == 0  # and kept again, as made


def test_one_new_pattern_is_kept_at_the_next_start(tmp_path: Path) -> None:
    """A change of the bridge that adds a few patterns (fewer than attrs' threshold) had them compiled at every start
    for ever: the file was written only for 16 new ones."""
    cache = tmp_path / "generated.marshal"
    regex_start(cache)
    script = REGEX_SCRIPT.replace("patterns = [", 'patterns = [(r"one (new) pattern", 0),', 1)
    assert script_start(script, cache)["new"] == 1
    assert script_start(script, cache)["new"] == 0


TYPING_SCRIPT = r"""
import json, sys, typing
from pathlib import Path
from bridge import codecache
codecache.path = lambda name: Path(f"{sys.argv[1]}.{name}")
codecache.install_typing()
from typing import Generic, TypeVar, get_type_hints
from typing_extensions import TypedDict
T = TypeVar("T")
class Box(Generic[T]):
    pass
class Row(TypedDict, total=False):
    name: "str"
    size: "int | None"
    boxes: "list[Box[int]]"
    nested: "dict[str, list[tuple[int, ...]]]"
refs = [typing.ForwardRef(text) for text in ("a.b[c]", "*Ts", "x if y else z")]
try:
    typing.ForwardRef("not an expression!")
    error = None
except SyntaxError as e:
    error = str(e)
print(json.dumps({
    "hints": {k: repr(v) for k, v in get_type_hints(Row).items()},
    "codes": [repr(r.__forward_code__.co_names) for r in refs],
    "error": error,
    "eval": repr(compile("1 + 1", "<string>", "eval")),
    "new": codecache.KEPT["typing"].new,
    "installed": codecache.installed(),
}))
codecache.save()
"""


def test_forward_references_compiled_from_the_kept_code_read_as_freshly_compiled_ones(tmp_path: Path) -> None:
    cache = tmp_path / "generated.marshal"

    def typing_start(mode: str) -> dict[str, Any]:
        return script_start(TYPING_SCRIPT, cache, mode)

    plain = typing_start("0")
    assert plain["installed"] == [] and plain["error"] and "str" in plain["hints"]["name"]
    first = typing_start("write")
    assert first["installed"] == ["typing"] and first["new"] >= 7
    second = typing_start("write")
    assert second["new"] == 0
    strip = ("new", "installed", "eval")
    assert {k: v for k, v in plain.items() if k not in strip} == {k: v for k, v in second.items() if k not in strip}


BRIDGE_START = r"""
import json, sys
from pathlib import Path
from bridge import codecache
codecache.path = lambda name: Path(f"{sys.argv[1]}.{name}")
import bridge.cli.main  # installs the kept code as `run` does
import bridge.execution.sandbox, bridge.cli.terminal, bridge.server.wire, bridge.server.wire_history
from bridge.config import BridgeConfig
BridgeConfig.load({})
print(json.dumps({name: kept.new for name, kept in codecache.KEPT.items()}))
codecache.save()
"""


def test_what_the_bridge_compiles_as_it_loads_is_the_same_at_every_start(tmp_path: Path) -> None:
    """Nothing the bridge's start compiles differs between starts (it would be compiled, and the file written, at
    every start): a pydantic field's `default_factory=list` had `inspect` read the builtin's signature with
    tokenize, whose pattern lists string prefixes in a set's order."""
    cache = tmp_path / "generated.marshal"
    counts = [script_start(BRIDGE_START, cache, PYTHONHASHSEED=seed) for seed in ("1", "2", "3")]
    assert counts[0]["regex"] > 100 and counts[0]["typing"] > 100
    assert counts[1:] == [{"dataclasses": 0, "attrs": 0, "typing": 0, "regex": 0}] * 2, counts
