"""Round 28: a trusted hook's shell script was read line by line, so what bash runs could hide from its binding in
what the reading took for a quote, a comment, a continued line or a here-document's text — `echo "⏎"; sh evil.sh;
echo "⏎"`, `# note \\⏎sh evil.sh`, `sh ev\\⏎il.sh`, `echo "<<EOF"⏎sh evil.sh`, `cat <<EOF-X`, a here-document's
`$(sh evil.sh)`, `sh <<EOF`, `[[ x =~ (#) ]]; sh evil.sh`, `$'\\''`, a CR before the newline… Each case here is proven
by its side effect: bash runs the hook script and `evil.sh` (a file the old binding did not pin) writes its marker;
now a change to `evil.sh` changes the binding (the user is asked again) or the script is unbindable (the hook stays
off). script_lexer.py reads the script as bash splits it, across lines."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bridge.permissions.named_files import UNBINDABLE, binding
from bridge.permissions.script_lexer import ScriptSyntax, script_commands

FIXTURES = Path(__file__).parent / "fixtures"
ATTACKS: list[dict[str, Any]] = json.loads((FIXTURES / "script_attacks_round28.json").read_text())
BASH = shutil.which("bash")


def _workspace(tmp_path: Path, script: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hook.sh").write_bytes(script.encode())
    (ws / "evil.sh").write_text("touch MARKER\n")
    return ws


def _program(path: Path, line: str) -> None:
    """An executable shell script of one line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{line}\n")
    path.chmod(0o755)


def _refused_and_run(ws: Path, why: str, proof: str) -> None:
    """`bash hook.sh` is unbindable, saying `why`; and bash, running it, writes the marker (the proof)."""
    found = binding("bash hook.sh", ws)
    assert found.startswith(UNBINDABLE) and why in found, found
    assert BASH is not None
    subprocess.run([BASH, "hook.sh"], cwd=ws, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert (ws / "MARKER").exists(), proof


def _pinned(ws: Path) -> bool:
    """Whether a change to evil.sh is seen: the binding changes with it, or the hook can't be bound at all."""
    before = binding("bash hook.sh", ws)
    (ws / "evil.sh").write_text("touch MARKER; touch OTHER\n")
    after = binding("bash hook.sh", ws)
    (ws / "evil.sh").write_text("touch MARKER\n")
    return before.startswith(UNBINDABLE) or before != after


@pytest.mark.skipif(BASH is None, reason="bash is the proof")
@pytest.mark.parametrize("case", ATTACKS, ids=[c["name"] for c in ATTACKS])
def test_what_bash_runs_from_a_hook_script_is_pinned(tmp_path: Path, case: dict[str, Any]) -> None:
    ws = _workspace(tmp_path, case["script"])
    assert _pinned(ws), binding("bash hook.sh", ws)
    assert BASH is not None
    subprocess.run([BASH, "hook.sh"], cwd=ws, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert (ws / "MARKER").exists(), "the proof: bash runs evil.sh"


@pytest.mark.skipif(BASH is None, reason="bash is the proof")
@pytest.mark.parametrize(
    "script",
    [
        "cat <<A <<B >/dev/null\nA\nsh evil.sh\nB\n",  # the second document's text
        "cat <<EOF >/dev/null\nEOF \nsh evil.sh\nEOF\n",  # `EOF ` is not the delimiter
        'echo "\\"\nsh evil.sh\n"\n',  # an escaped quote: one quoted word
        "echo x # $(sh evil.sh)\n",  # a comment
        "echo '$(sh evil.sh)' \"\\$(sh evil.sh)\"\n",  # text, and nothing here evaluates it
        "awk '{ print $(NF) }' /dev/null\n",
    ],
)
def test_what_bash_only_reads_as_text_is_not_taken_for_commands(tmp_path: Path, script: str) -> None:
    """The reading is exact both ways: text bash does not run does not make the binding ask about evil.sh."""
    ws = _workspace(tmp_path, script)
    assert not _pinned(ws), binding("bash hook.sh", ws)
    assert BASH is not None
    subprocess.run([BASH, "hook.sh"], cwd=ws, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert not (ws / "MARKER").exists()


def test_a_real_format_hook_is_bound_to_what_it_runs(tmp_path: Path) -> None:
    """An ordinary PostToolUse hook script — `input=$(cat)`, jq, `case` arms, `[[ =~ ]]`, arithmetic, here-documents,
    a function — binds, with the script its `case` arm runs. (The line reading left it unbindable: `input=$(cat)`
    was taken for a program computed when it runs, and each `case` pattern for a command.)"""
    ws = _workspace(tmp_path, (FIXTURES / "format_hook_round28.sh").read_text())
    found = binding("bash hook.sh", ws)
    assert not found.startswith(UNBINDABLE), found
    assert "evil.sh sha256:" in found and "hook.sh sha256:" in found
    assert _pinned(ws)


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("echo 'open\nsh evil.sh\n", "unterminated single quote"),
        ('echo "open\nsh evil.sh\n', "unterminated double quote"),
        ("x=$(sh evil.sh\n", "unterminated `$(`"),
        ("x=$((sh evil.sh) )\n", "not arithmetic"),
        ("[[ $x == y # a comment? ]]\nsh evil.sh\n", "inside `[[ … ]]`"),
        ("cat <<$'EOF'\nx\nEOF\n", "$'…'"),
        ("echo " + "$(" * 40 + "\n", "deeper"),
        ("echo ${" * 40 + "\n", "deeper"),
        ("cat" + " <<A" * 17 + "\n", "here-documents"),
        ("x=$(cat <<EOF\nEOF)\nsh evil.sh\n", "closing line"),
        ("case x y in\nsh evil.sh\n", "`case` without its `in`"),
    ],
)
def test_what_the_reading_cannot_place_as_bash_does_is_unbindable(tmp_path: Path, script: str, why: str) -> None:
    ws = _workspace(tmp_path, script)
    found = binding("bash hook.sh", ws)
    assert found.startswith(UNBINDABLE) and why in found, found


def test_the_commands_are_split_as_bash_splits_them() -> None:
    script = (
        'a "b c"\'d\'\\ e $(f "g)") `h i`; j <<EOF && k\n$(l)\nEOF\n'
        "case $m in n|o) p;; (q) r ;; esac\n"
        "[[ $s =~ (t|#) ]] && u $(( 1 << 2 ))\n"
        "v\\\nw\n"
    )
    assert script_commands(script) == [
        ["f", "g)"],
        ["h", "i"],
        ["a", "b cd e", '$(f "g)")', "`h i`"],
        ["j", "<<", "EOF"],
        ["k"],
        ["l"],
        ["p"],
        ["r"],
        ["[[", "$s", "=~", "(t|#)", "]]"],
        ["u", "$(( 1 << 2 ))"],
        ["vw"],
    ]
    with pytest.raises(ScriptSyntax):
        script_commands("echo 'open")


@pytest.mark.parametrize(
    "text",
    [
        "'" * 2**20,
        '"\\' * 2**19,
        "$(" * 2**19,
        "${" * 2**19,
        "((" * 2**19,
        "`" * 2**20,
        "cat <<A\n" + "a\\\n" * 2**18,
        "a;" * 2**18,
        "echo " + "@(" * 2**19,
    ],
    ids=["quotes", "escapes", "substitutions", "braces", "arithmetic", "backticks", "continued", "commands", "globs"],
)
def test_the_attackers_shapes_are_read_in_one_pass(text: str) -> None:
    """A script of 1 MiB is read once, or refused at its bound (nesting, here-documents): nothing quadratic, no
    RecursionError."""
    with contextlib.suppress(ScriptSyntax):
        script_commands(text)


COMPUTED = [
    ("node", "h.js", "require('child_process').execSync('sh ev' + 'il.sh')\n"),
    (
        "node",
        "h.js",
        "const { execSync: run } = require('child_process')\nconst f = ['ev', 'il.sh'].join('')\nrun(`sh ${f}`)\n",
    ),
    ("node", "h.js", "const cp = require('child_process')\nconst m = 'exec' + 'Sync'\ncp[m]('sh ' + 'ev' + 'il.sh')\n"),
    ("perl", "h.pl", 'system("sh ev" . "il.sh");\n'),
    ("perl", "h.pl", 'my $f = "ev" . "il.sh"; `sh $f`;\n'),
    ("perl", "h.pl", 'open(my $p, "-|", "sh ev" . "il.sh") or die; my @x = <$p>;\n'),
    ("perl", "h.pl", 'my @c = ("sh", "ev" . "il.sh"); system { $c[0] } @c;\n'),
    ("ruby", "h.rb", 'system("sh ev" + "il.sh")\n'),
    ("ruby", "h.rb", 'f = "ev" + "il.sh"\nputs `sh #{f}`\n'),
    ("ruby", "h.rb", 'Kernel.public_send("sys" + "tem", "sh ev" + "il.sh")\n'),
    ("ruby", "h.rb", 'm = method(:system)\nm.call("sh ev" + "il.sh")\n'),
]


@pytest.mark.parametrize(("program", "name", "code"), COMPUTED, ids=[f"{c[0]}-{n}" for n, c in enumerate(COMPUTED)])
def test_a_script_that_starts_a_command_it_builds_is_unbindable(
    tmp_path: Path, program: str, name: str, code: str
) -> None:
    """Node, Ruby and Perl have no parser here (Python's calls are read with `ast`): a command built when the
    script runs, a start function under another name or looked up by name hid `sh evil.sh` from the binding."""
    ws = _workspace(tmp_path, "")
    (ws / name).write_text(code)
    found = binding(f"{program} {name}", ws)
    assert found.startswith(UNBINDABLE), found
    interpreter = shutil.which(program)
    if interpreter is None:
        pytest.skip(f"{program} is not here to prove it")
    subprocess.run([interpreter, name], cwd=ws, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert (ws / "MARKER").exists(), "the proof: the script runs evil.sh"


@pytest.mark.parametrize(
    ("program", "name", "code"),
    [
        ("ruby", "h.rb", 'system("sh scripts/a.sh")\nputs `git status`\nputs IO.read("x.txt")\n'),
        ("perl", "h.pl", 'system("sh scripts/a.sh");\nopen(my $fh, "<", "x.txt") or die;\n'),
    ],
)
def test_a_script_that_starts_literal_commands_still_binds(tmp_path: Path, program: str, name: str, code: str) -> None:
    ws = _workspace(tmp_path, "")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "a.sh").write_text("true\n")
    (ws / name).write_text(code)
    found = binding(f"{program} {name}", ws)
    assert "scripts/a.sh sha256:" in found, found


@pytest.mark.skipif(BASH is None, reason="bash is the proof")
@pytest.mark.parametrize(
    "script",
    [
        "export PATH=./bin:$PATH\nls >/dev/null\n",
        "read -r PATH < p.txt\nls >/dev/null\n",
        "printf -v PATH %s ./bin\nls >/dev/null\n",
        "declare -x PATH=./bin\nls >/dev/null\n",
    ],
)
def test_a_builtin_that_sets_where_programs_are_found_leaves_the_hook_off(tmp_path: Path, script: str) -> None:
    """`PATH=./bin` alone was refused, but `export PATH=./bin` (and `read`, `printf -v`, `declare`) was not: the
    script's `ls` then ran the workspace's bin/ls, bound to nothing."""
    ws = _workspace(tmp_path, script)
    (ws / "p.txt").write_text("./bin\n")
    _program(ws / "bin" / "ls", ": > MARKER")  # (a builtin: PATH may be ./bin alone)
    _refused_and_run(ws, "PATH", "the proof: bash runs the workspace's bin/ls")


@pytest.mark.skipif(BASH is None, reason="bash is the proof")
def test_a_cd_to_a_folder_named_when_the_script_runs_leaves_the_hook_off(tmp_path: Path) -> None:
    """`d=sub; cd $d; ./tool`: a computed `cd` in a script was left to "the script's own reading", which binds the
    workspace's `tool`, not sub/tool (what bash ran). The script's own folder and the workspace's variables still
    bind (`cd "$(dirname "$0")"`, `cd "$CLAUDE_PROJECT_DIR"`)."""
    ws = _workspace(tmp_path, "d=sub\ncd $d\n./tool\n")
    _program(ws / "sub" / "tool", "touch ../MARKER")
    _refused_and_run(ws, "named when it runs", "the proof: bash runs sub/tool")
    for script in ('cd "$(dirname "$0")"\nsh evil.sh\n', 'cd "${CLAUDE_PROJECT_DIR}" || exit 1\nsh evil.sh\n'):
        (ws / "hook.sh").write_text(script)
        assert "evil.sh sha256:" in binding("bash hook.sh", ws)


@pytest.mark.parametrize(
    "script",
    [
        "x=$(cat <<'EOF'\n$(sh evil.sh)\nEOF\n)\neval \"echo $x\"\n",
        "x='$(sh evil.sh)'\necho \"${x@P}\"\n",
        'x="\\$(sh evil.sh)"\neval "echo $x"\n',
        "PS4='$(sh evil.sh)'\nset -x\n:\n",
        "x='a[$(sh evil.sh)]'\necho $(( x ))\n",
    ],
)
def test_a_substitution_kept_as_text_leaves_the_hook_off(tmp_path: Path, script: str) -> None:
    """Text holding `$(…)` or a backtick is not run where it stands, but bash runs it later in many ways (eval, an
    array subscript in arithmetic, PS4 under `set -x`, `${x@P}`, `${!x}`, `test -v`): the helper's round ran evil.sh
    through four of them. Such a script is refused (a false refusal for one that only prints the text: safe)."""
    ws = _workspace(tmp_path, script)
    found = binding("bash hook.sh", ws)
    assert found.startswith(UNBINDABLE) and "as text" in found, found


def _decoded(value: Any) -> Any:
    if isinstance(value, dict) and "__bytes__" in value:
        return value["__bytes__"].encode("latin-1")
    if isinstance(value, dict):
        return {key: _decoded(each) for key, each in value.items()}
    return value


VERIFICATION: list[dict[str, Any]] = [
    {key: _decoded(value) for key, value in case.items()}
    for case in json.loads((FIXTURES / "script_attacks_round28b.json").read_text())
]


@pytest.mark.skipif(BASH is None, reason="bash is the proof")
@pytest.mark.parametrize("case", VERIFICATION, ids=[c["name"] for c in VERIFICATION])
def test_the_rounds_verification_finds_each_run_pinned(tmp_path: Path, case: dict[str, Any]) -> None:
    """The round's verification (a helper, on the lexer as first written): scripts that ran a file their binding
    did not pin (78 here, each run again) — a wrapper before a computed script (`exec bash "$f"`,
    `time . "./$f"`, `bash -o errexit "$f"`),
    code in literal strings (`bash -c 'sh evil.sh'`, `eval 'sh ev''il.sh'`), braces and `~+`, data bash evaluates
    later (PS4, `${x@P}`, arithmetic subscripts, `${!x}`, `test -v`), settings by computed names, `BASH_ALIASES`,
    namerefs, quotes and continued lines the lexer placed apart from bash, NUL bytes, reserved words as arguments,
    `!(…)`, Perl's and Python's written-out commands, Node's escaped module names, a `.sh` whose `#!` is Perl. Each
    is proven by its side effect (the evil file ran) and must be pinned now; the four where `sh` is dash (`$'…'`,
    `((…))`, `$[…]`, a quote in `"${…}"`, which dash splits otherwise) are read as dash reads them."""
    ws = tmp_path / "ws"
    ws.mkdir()
    hook = case["hook"]
    (ws / "hook.sh").write_bytes(hook.encode("latin-1") if isinstance(hook, str) else hook)
    if case.get("mode"):
        (ws / "hook.sh").chmod(case["mode"])
    evil_name = case.get("evil_name", "evil.sh")
    evil = case.get("evil", b"touch MARKER\n")
    (ws / evil_name).parent.mkdir(parents=True, exist_ok=True)
    (ws / evil_name).write_bytes(evil)
    (ws / evil_name).chmod(0o755)
    for name, text in (case.get("extra") or {}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(text.encode() if isinstance(text, str) else text)
        (ws / name).chmod(0o755)
    command = case.get("cmd", "bash hook.sh")
    before = binding(command, ws)
    (ws / evil_name).write_bytes(case.get("evil2", b"touch MARKER; touch OTHER\n"))
    assert before.startswith(UNBINDABLE) or binding(command, ws) != before, before
    (ws / evil_name).write_bytes(evil)
    runner = case.get("runner") or ["bash", "hook.sh"]
    if shutil.which(runner[0]) is None:
        pytest.skip(f"{runner[0]} is not here to prove it")
    subprocess.run(runner, cwd=ws, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, start_new_session=True)
    assert (ws / "MARKER").exists(), "the proof: it ran the evil file"


GIT = shutil.which("git")


@pytest.mark.skipif(GIT is None, reason="git is the proof")
@pytest.mark.parametrize("command", ["git commit -q --allow-empty -m x", "bash hook.sh"])
def test_the_hooks_git_runs_from_the_workspace_are_bound(tmp_path: Path, command: str) -> None:
    """`core.hooksPath` in the workspace (husky's `.husky/_`, a `.githooks` folder): a trusted `git commit` (or a
    script that runs one) ran `.githooks/pre-commit`, which a pull changes, bound to nothing. Each hook there is
    bound by its text, and the hooks there by their names (a pull that adds `pre-push` asks again too)."""
    assert GIT is not None
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.com",
    }
    subprocess.run([GIT, "init", "-q"], cwd=ws, check=True, env=env)
    subprocess.run([GIT, "config", "core.hooksPath", ".githooks"], cwd=ws, check=True, env=env)
    (ws / "hook.sh").write_text("git commit -q --allow-empty -m x\n")
    (ws / ".githooks").mkdir()
    hook = ws / ".githooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch MARKER\n")
    hook.chmod(0o755)
    before = binding(command, ws)
    assert ".githooks/pre-commit sha256:" in before and ".githooks/ git hooks:pre-commit" in before, before
    hook.write_text("#!/bin/sh\ntouch MARKER; true\n")
    changed = binding(command, ws)
    assert changed != before
    (ws / ".githooks" / "pre-push").write_text("#!/bin/sh\ntrue\n")
    assert binding(command, ws) != changed
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=30, env=env, check=True)
    assert (ws / "MARKER").exists(), "the proof: git ran the workspace's pre-commit"


def test_a_binding_reads_a_bounded_number_of_commands(tmp_path: Path) -> None:
    """A 20 KB hook reaching a 50 KB package script 2,000 times read it 2,000 times (77 s, the round's verification);
    a script of 500,000 commands was read whole before its first was judged. Both stop at the bound now."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hook.sh").write_text("npm run a\n" * 2000)
    (ws / "package.json").write_text(json.dumps({"scripts": {"a": " ; ".join(["echo a b c d e f"] * 3000)}}))
    found = binding("bash hook.sh", ws)
    assert found.startswith(UNBINDABLE) and "100,000" in found, found
    (ws / "hook.sh").write_text("a;" * 2**19)
    found = binding("bash hook.sh", ws)
    assert found.startswith(UNBINDABLE) and "100,000" in found, found


SECOND: list[dict[str, Any]] = json.loads((FIXTURES / "script_attacks_round28c.json").read_text())


@pytest.mark.parametrize("case", SECOND, ids=[c["name"] for c in SECOND])
def test_the_second_verifications_runs_are_pinned(tmp_path: Path, case: dict[str, Any]) -> None:
    """The round's second verification (a helper, on a637f5d): 77 forms where the command ran workspace code its
    binding did not pin, now each pinned or refused. Code handed to programs no reader reads (awk's system(), sed's
    `e`, `perl -e`, `python3 -c` inside a script, `git -c alias.x=!…`, `flock -c`, tar's checkpoint actions, ssh's
    ProxyCommand, vim's `!`), a copy run from /tmp, dash's reading of make recipes, npm scripts, os.system and what a
    dash script sources, git's hooks reached by `/usr/bin/git` or an include, Python's renamed modules,
    `map(os.system, …)`, `executable=`, `shell=True` lists, builtins, imports after `;` or under `if`, a package
    shadowing the library's, pickles, a UTF-7 coding line, Node's `require` by another name, folder mains, `#`
    imports, self-references, createRequire, Module._load, eval and Function, ESM queries and loaders, Perl's
    BEGIN blocks, `use if`, `do q()`, POD inside here-documents, `-I` on the `#!` line, and `.npmrc` quoted keys.
    Proven where this machine has the tools (the binding's side is checked everywhere)."""
    import base64

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    for argv in case.get("setup", []):
        if shutil.which(argv[0]) is None:
            pytest.skip(f"{argv[0]} is not here")
        subprocess.run(argv, cwd=ws, env=env, capture_output=True, timeout=30, check=False)
    for name, text in case["files"].items():
        target = ws / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, dict):
            target.write_bytes(base64.b64decode(text["b64"]))
        else:
            target.write_bytes(text.encode("utf-8", "surrogateescape"))
        target.chmod(0o755)
    if case.get("pysetup"):
        exec(case["pysetup"], {"ws": ws, "os": os, "Path": Path})
    before = binding(case["cmd"], ws)
    evil = ws / case["evil"]
    if case.get("pychange"):
        exec(case["pychange"], {"ws": ws, "os": os, "Path": Path})
    else:
        evil.write_bytes(evil.read_bytes() + b"\n" + case.get("append", "# changed\n").encode())
    assert before.startswith(UNBINDABLE) or binding(case["cmd"], ws) != before, before
    runner = case["runner"]
    if shutil.which(runner[0]) is None:
        pytest.skip(f"{runner[0]} is not here to prove it")
    marker = ws / case.get("marker", "MARKER")
    marker.unlink(missing_ok=True)
    subprocess.run(
        runner, cwd=ws, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, start_new_session=True
    )
    if not marker.exists():
        pytest.skip("the proof needs a tool this machine lacks")


@pytest.mark.parametrize(
    ("command", "name", "code"),
    [
        ("python3 h.py", "h.py", 'import subprocess as sp\nsp.run(["git", "status"])\n'),
        ("python3 h.py", "h.py", 'from subprocess import run as r\nr(["git", "status"])\n'),
        (
            "node h.mjs",
            "h.mjs",
            "import path from 'node:path'\nclass A { constructor() { this.d = import.meta.url } }\n",
        ),
    ],
)
def test_what_the_rounds_refuse_leaves_ordinary_scripts_bound(
    tmp_path: Path, command: str, name: str, code: str
) -> None:
    """A renamed module whose calls are literal, a JavaScript class and `import.meta`: read, not refused (the
    refusals are for a spawning call under another name, `.constructor` reached from a value, a loader hook)."""
    ws = _workspace(tmp_path, "")
    (ws / name).write_text(code)
    found = binding(command, ws)
    assert not found.startswith(UNBINDABLE) and f"{name} sha256:" in found, found
