"""What a bound script's own code pulls in (named_files.py binds it with the script): a trusted hook
`sh scripts/fmt.sh` runs `lib.sh` too if the script sources it, `python tools/x.py` runs the sibling modules it
imports, `make fmt` the makefiles it includes and the scripts its recipes run, `npm run lint` the scripts
package.json's `scripts` name, `ruby tools/x.rb` what it requires and loads, `perl tools/x.pl` the modules it uses
(under its `use lib` folders, FindBin's `$Bin` read as its own folder) and the files it requires.

Each reader returns names (paths to look at now, relative to the workspace or absolute), read tolerantly from the
text: over-reading is safe (a name that is a workspace file binds it, costing at most a question when it changes;
a name absent today is bound by its absence, since a file that appears later makes another binding). What must
not happen is a pulled-in file missed silently, so a pull-in whose name is computed when it runs (`. "$LIB"`,
`include $(X)`, `require(name)`, `importlib.import_module(name)`, Ruby's `require f`, Perl's `require $m`) makes
the command unbindable: it stays off.

Not read: what a program finds by itself beyond these (a Python package's `.pth` files, a Node package's
`node_modules`, a gem or a CPAN module installed outside the workspace, a Makefile's implicit rules' programs),
other languages' own pull-ins (PHP, Lua…), and files named only inside another language's strings.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shlex
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from bridge.permissions.script_lexer import Read, ScriptSyntax
from bridge.permissions.script_lexer import read as lexed_read

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"})
POSIX_SHELLS = frozenset({"sh", "dash", "ash", "busybox"})  # (where `sh` is dash: Debian's, Ubuntu's)
SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
MAKEFILES = frozenset({"GNUmakefile", "makefile", "Makefile", "justfile", "Justfile", ".justfile"})
NODE_SUFFIXES = (".js", ".mjs", ".cjs")
PROJECT_VARIABLES = ("CLAUDE_PROJECT_DIR", "AGENT_BRIDGE_PROJECT_DIR")  # a hook's environment names the workspace
# Files a program reads by convention when the command names none (their code is what runs).
CONVENTIONAL: dict[str, tuple[str, ...]] = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "gmake": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    # and their own configuration, which can name code to run (`.npmrc`'s node-options, `.yarnrc.yml`'s yarnPath)
    "npm": ("package.json", ".npmrc"),
    # (npx runs the project's own `bin` when the package it is asked for has the project's `name`: `npx tsc`)
    "npx": ("package.json", ".npmrc"),
    "pnpx": ("package.json", ".npmrc"),
    "bunx": ("package.json", ".npmrc", "bunfig.toml"),
    "yarn": ("package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnp.cjs", ".pnp.loader.mjs"),
    "pnpm": ("package.json", ".npmrc", "pnpm-workspace.yaml", ".pnpmfile.cjs"),
    "bun": ("package.json", ".npmrc", "bunfig.toml"),
    "rake": ("Rakefile", "rakefile"),
    # what makes uv build the project again (its default cache keys) and what it builds and installs from (round 27)
    "uv": ("pyproject.toml", "uv.lock", "uv.toml", "setup.py", "setup.cfg", ".python-version", ".venv/bin/python"),
    "poetry": ("pyproject.toml", "poetry.lock", "poetry.toml"),
    "pdm": ("pyproject.toml", "pdm.lock", "pdm.toml"),
    "pipenv": ("Pipfile", "Pipfile.lock"),
}
# How a shell script names its own folder: read as that folder (what the shell would make of it), through a
# variable of ours so that a folder with spaces in its name stays one word.
OWN_FOLDER_VARIABLE = "__agent_bridge_script_folder"
OWN_FOLDER = re.compile(
    r"""\$\(\s*dirname\s+("?)(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)\1\s*\)"""
    r"""|\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}"""
    r"""|\$\(\s*cd\s+("?)\$\(\s*dirname\s+("?)(?:\$0|\$\{BASH_SOURCE(?:\[0\])?\})\3\s*\)\2\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)"""
)


def _globbed(word: str) -> bool:
    """What the shell would expand (`[` and `[[` alone are programs): `re.search(r"[*?]|\\[.+\\]", word)` without its
    scan from every `[` to the end (O(n^2): attack round 20)."""
    if "*" in word or "?" in word:
        return True
    for line in word.split("\n"):
        opening, closing = line.find("["), line.rfind("]")
        if opening >= 0 and closing >= opening + 2:
            return True
    return False


_WRITE_TO = re.compile(r"\d*(?:>>?|>\||&>>?)(.*)")  # an output redirection, its target attached or next
_MAKE_INCLUDE = re.compile(r"^[^\S\n]*[-s]?include[^\S\n]+(.+)$", re.MULTILINE)
_PY_IMPORT = re.compile(
    # (possessive, the spaces between `from` and `import` when nothing is named kept apart, and a parenthesized list
    # that stops at the next `(`: O(n) where a run of dots, of spaces or of unclosed lists made it O(n^2), attack
    # rounds 20 and 22)
    r"^[^\S\n]*(?:from\s++(\.*+)([\w.]*)(?:(?<=\s\s)|\s+)import\s+(\([^()]*\)|[^\n#;]+)|import\s+([^\n#;]+))",
    re.MULTILINE,
)
# Python that loads code in a way a reading of its text can't follow: the script stays off.
_PY_DYNAMIC = re.compile(
    r"(?<![.\w])(?:exec|eval|compile|__import__|execfile)\s*\("
    r"|\b(?:importlib|runpy|pkgutil|zipimport|imp|ctypes|cffi|builtins|pickle|cPickle|marshal|shelve|dill|cloudpickle)\b"
    r"|\bjoblib\s*+\.\s*+load|\byaml\s*+\.\s*+(?:load|unsafe_load)\b|\btorch\s*+\.\s*+load\b"
    r"|\bsys\s*\.\s*(?:path|meta_path|path_hooks|modules)\b|\bsite\s*\.\s*addsitedir\b"
)
# A string literal that names a file of code (a script it runs: `subprocess.run(["sh", "scripts/x.sh"])`).
_PY_CODE_LITERAL = re.compile(r"""['"]([^'"\\\n]+\.(?:py|sh|bash|js|mjs|cjs|so|pth))['"]""")
_JS_LITERAL = re.compile(
    r"""(?:require\s*+\(|import\s*+\(|\bfrom\s++|^[^\S\n]*+import\s++)\s*+['"](\.{1,2}/[^'"]+)['"]""", re.MULTILINE
)
_JS_DYNAMIC = re.compile(r"""(?:\brequire|\bimport)\s*\(\s*(?!['"\s])""")
# A path-like word that names a file of code, anywhere in a Ruby or Perl script (`system("sh scripts/x.sh")`).
_CODE_WORD = re.compile(
    r"""(?<![\w$@%{./-])([\w.-]*/[\w./-]*\.(?:rb|pl|pm|py|sh|bash|js|mjs|cjs)|[\w-]+\.(?:rb|pl|pm|sh))\b"""
)
# The same after a variable (`"$Bin/helper.pl"`, `"$dir/deploy.sh"`, `sprintf("%s/build.sh")`): the part after it, from
# the workspace or beside the script. (`_CODE_WORD` found it itself once, starting after the `/`; its start may no
# longer follow `./-`, which made it O(n^2) on a run of dashes: attack rounds 20 and 22.)
_AFTER_VARIABLE = re.compile(
    r"""(?<![\w$@%{./-])[$@%{][\w:]*\}?/([\w.-]*/[\w./-]*\.(?:rb|pl|pm|py|sh|bash|js|mjs|cjs)|[\w-]+\.(?:rb|pl|pm|sh))\b"""
)
# Ruby: what it loads by a literal name, and what loads code a reading can't follow (the script stays off).
_RB_LOAD = re.compile(
    r"""\b(require_relative|require|load)\b\s*+(?:\(\s*+)?(['"])([^'"#\\\n]+)\2"""
    r"""|\bautoload\s*+(?:\(\s*+)?:\w++\s*+,\s*+(['"])([^'"#\\\n]+)\4"""
)
_RB_ANY_LOAD = re.compile(r"\b(?:require_relative|require|load|autoload)\b")
_RB_DYNAMIC = re.compile(
    r"\b(?:eval|instance_eval|class_eval|module_eval|instance_exec|binding)\b|\$LOAD_PATH|\$:|\$LOADED_FEATURES"
    r"|\bsend\s*\(\s*:(?:require|load|eval)|\bKernel\s*\.\s*(?:require|load|eval)"
)
# Perl: `require`/`do` of a file, `use`/`require` of a module, `use lib` folders (FindBin's are the script's own).
_PL_FILE = re.compile(r"""\b(?:require|do)\s*+(?:\(\s*+)?(['"])([^'"$@\\\n]+)\1""")
_PL_MODULE = re.compile(r"^[^\S\n]*(?:use|require|no)\s+([A-Za-z_]\w*(?:::\w+)*)", re.MULTILINE)
_PL_PARENT = re.compile(r"^[^\S\n]*use\s+(?:parent|base)\s+([^;]+);", re.MULTILINE)
_PL_LIB = re.compile(r"^[^\S\n]*use\s+lib\s+([^;]+);", re.MULTILINE)
_PL_FINDBIN = re.compile(r"\$(?:FindBin::)?(?:Real)?Bin\b|\$\{(?:FindBin::)?(?:Real)?Bin\}")
_PL_DYNAMIC = re.compile(
    r"\beval\s*+(?![\s{]|$)|\beval\s++(?!\{)\S|\b(?:require|do)\s*+(?:\(\s*+)?[$@]|@INC\b|\bUNIVERSAL::require\b"
    r"|\bModule::(?:Load|Runtime|Pluggable)\b|\b(?:Class::Load|load_class)\b"
)


class Unbindable(Exception):
    """What a command runs can't be known before it runs: it stays off, saying this."""


MAX_COMMANDS = 100_000  # commands one binding may read, its scripts', recipes' and package scripts' together
_BUDGET: ContextVar[list[int] | None] = ContextVar("reading_budget", default=None)


@contextlib.contextmanager
def reading_budget(commands: int = MAX_COMMANDS) -> Iterator[None]:
    """Bound the work of one binding (a 20 KB hook reaching a 50 KB package script 2,000 times read it 2,000 times:
    77 s). Beyond it the command is unbindable."""
    token = _BUDGET.set([commands])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def spend(commands: int) -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget[0] -= commands
        if budget[0] < 0:
            raise Unbindable(f"reading what it runs takes more than {MAX_COMMANDS:,} steps (commands and names)")


# Programs that find and run the folder's code by themselves — test modules and conftest.py, build scripts and
# build.rs, plugins, configuration files that are code — so what they run is not the files a command names: a
# hook running one can't be pinned to what the user trusted (a pull that changes a test module would run unasked).
DISCOVERERS = frozenset(
    {
        *("pytest", "py.test", "tox", "nox", "hatch", "trial", "green", "ward"),
        *("jest", "vitest", "mocha", "ava", "karma", "cypress", "playwright", "webpack", "vite", "rollup", "eslint"),
        *("cargo", "go", "gradle", "gradlew", "mvn", "mvnw", "ant", "sbt", "lein", "bazel", "bazelisk", "buck"),
        *("buck2", "pants", "cmake", "ctest", "meson", "ninja", "scons", "waf", "dotnet", "msbuild", "swift"),
        *("xcodebuild", "mix", "rebar3", "phpunit", "composer", "rspec", "rails", "rake", "stack", "cabal", "dune"),
        "zig",
        # and the programs whose own configuration names code they load (plugins, hooks, a config that is a
        # script): a pull that changes `mypy.ini`'s `plugins =` ran its module outside the sandbox (attack round 26)
        *("mypy", "dmypy", "pylint", "flake8", "coverage", "sphinx-build", "mkdocs", "pre-commit", "prettier"),
        *("babel", "postcss", "stylelint", "tailwindcss", "next", "nuxt", "astro", "parcel", "turbo", "nx", "lerna"),
        *("rustup", "rustc", "mypyc", "stubtest", "gulp", "grunt", "invoke", "inv", "fab", "pip", "pip3"),
        # and those that load the folder's modules by name or run what its files declare (settings modules, apps,
        # config files that are code, containers a compose file mounts the host into, a Vagrantfile, .tf files'
        # external programs): round 27
        *("django-admin", "flask", "uvicorn", "gunicorn", "hypercorn", "daphne", "celery", "alembic", "scrapy"),
        *("behave", "nose2", "nosetests", "robot", "locust", "doit", "paver", "pelican", "jupyter", "ipython"),
        *("ansible", "ansible-playbook", "molecule", "terraform", "tofu", "terragrunt", "pulumi", "packer"),
        *("vagrant", "docker", "docker-compose", "podman", "podman-compose", "task", "mage", "earthly"),
        # and linters, bundlers and site builders whose configuration is code or names plugins the folder holds
        *("rubocop", "standardrb", "jekyll", "phpstan", "psalm", "php-cs-fixer", "phpcs", "phpcbf", "golangci-lint"),
        *("markdownlint", "markdownlint-cli2", "commitlint", "lint-staged", "husky", "vue-cli-service", "ng"),
        *("svelte-kit", "svelte-check", "gatsby", "react-scripts", "storybook", "docusaurus", "hardhat", "truffle"),
        *("serverless", "sls", "cdk", "ansible-lint", "sqlfluff", "dbt", "typedoc", "jsdoc", "tsup", "remix"),
        *("expo", "eleventy", "hexo", "middleman"),
        # and rustup's stand-ins, which run the toolchain the folder's rust-toolchain.toml names (`path =` a
        # workspace folder), and Perl's test runner (attack round 36's third pass)
        *("rustfmt", "cargo-fmt", "cargo-clippy", "clippy-driver", "rust-analyzer", "rustdoc", "rust-gdb", "prove"),
    }
)

DISCOVERING_MODULES = frozenset(
    {"unittest", "pytest", "tox", "nox", "build", "setuptools", "doctest", "trial", "pip"}
    | {"mypy", "pylint", "flake8", "coverage", "sphinx", "pre_commit", "mkdocs", "invoke"}
)
PY_DISCOVERING_IMPORTS = (DISCOVERING_MODULES - {"unittest", "doctest"}) | {
    *("_pytest", "django", "celery", "alembic", "scrapy", "nose", "nose2", "behave", "robot", "doit", "paver"),
    *("SCons", "pyproject_hooks", "pep517", "hatchling", "poetry", "locust", "pelican", "ansible", "IPython"),
    "nbconvert",
}
# servers that import an app by its name (`uvicorn.run("pkg.app:app")`): with one of them imported, a `module:attr`
# string is code loaded by name
_PY_APP_SERVERS = frozenset({"uvicorn", "gunicorn", "hypercorn", "daphne", "granian", "waitress"})
_PY_APP_NAME = re.compile(r"""['"][A-Za-z_][\w.]*+:[A-Za-z_][\w.]*+['"]""")
_PY_ANY_IMPORT = re.compile(
    r"(?<![\w.])import\s++([A-Za-z_][\w.]*+(?:\s*+,\s*+[A-Za-z_][\w.]*+)*+)|(?<![\w.])from\s++([A-Za-z_][\w.]*+)\s"
)


# Programs that run the program named after them (and their subcommands that do): `uv run pytest`, `npx jest`.
_WRAPPERS = frozenset(
    {
        *("uv", "uvx", "poetry", "pdm", "hatch", "pipenv", "pipx", "npx", "pnpx", "bunx", "yarn", "pnpm", "npm"),
        *("bundle", "env", "time", "nice", "nohup", "timeout", "xargs", "exec", "command", "sudo", "stdbuf"),
    }
)
_WRAPPER_WORDS = frozenset({"run", "exec", "x", "dlx", "tool"})


def discovers(words: list[str]) -> str | None:
    """Why a command (its words) runs code it finds by itself (`DISCOVERERS`, `python -m unittest`), or None: its
    program, or the program a wrapper it is runs (`uv run pytest`); not a word it is merely given (`grep cargo`)."""
    n = 0
    while n < len(words):
        name = words[n].rsplit("/", 1)[-1]
        if name in _PLAIN_WRAPPERS:  # `eval pytest`, `timeout 60s pytest`, `xargs -I {} pytest {}`
            words, n = unwrapped(words[n:]), 0
            continue
        if name in DISCOVERERS:
            return f"`{name}` finds and runs the folder's code by itself (tests, build scripts, plugins)"
        if re.fullmatch(r"python[\d.]*", name):
            return _python_discovers(words[n + 1 :])
        if name in SHELLS:  # `sh -c 'pytest -x'`, `sh -ec …`, `sh -c -- …`
            rest = words[n + 1 :]
            if any(re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", w) for w in rest):
                code = next((w for w in rest if not w.startswith("-")), "")
                try:
                    return discovers(shlex.split(code)) or _literal_runs_shell(code)
                except ValueError:
                    return "its `-c` code can't be read"
            return None
        if name in _BUILDING:
            sub = next((w for w in words[n + 1 :] if not w.startswith("-")), "")
            if sub in _BUILDING[name] or (name == "uv" and sub == "pip" and _uv_pip_builds(words[n + 1 :])):
                return f"`{name} {sub}` runs code the folder's files declare (the project's build code, its tasks)"
        if name not in _WRAPPERS:
            return None
        n += 1
        while n < len(words) and (
            words[n] in _WRAPPER_WORDS or words[n].startswith("-") or "=" in words[n] or words[n].isdigit()
        ):
            if words[n].split("=", 1)[0] in ("--env-file", "--env_file", "--dotenv"):
                return f"`{name} {words[n]}` runs the command with settings from a file"
            n += 2 if words[n] in _VALUED_OPTIONS else 1
    return None


# a package runner's options whose value is the next word (`uv run --with iniconfig pytest`)
_VALUED_OPTIONS = frozenset(
    {"--with", "--with-requirements", "--with-editable", "--python", "-p", "--from", "--extra", "--group"}
    | {"--package", "--index", "--index-url", "--extra-index-url", "--find-links", "-f", "--script", "--only-group"}
    | {
        "--no-group",
        "--config-file",
        "--cache-dir",
        "--python-platform",
        "--prerelease",
        "--resolution",
        "--refresh-package",
    }
)


# Package managers' subcommands that build and install the project (its build backend runs setup.py, hatch_build.py,
# pdm_build.py, a poetry build script, a module it imports for its version, build.rs): round 27. `uv run`/`uv sync`
# build it only when a file of its cache keys changes: those are bound instead (CONVENTIONAL, `pyproject_names`).
_BUILDING = {
    "poetry": frozenset({"install", "add", "update", "build", "sync", "remove"}),
    "pdm": frozenset({"install", "sync", "add", "update", "build", "remove"}),
    "pipenv": frozenset({"install", "sync", "update", "lock"}),
    "uv": frozenset({"build"}),
    "deno": frozenset({"task", "test", "bench"}),  # deno.json's tasks, like package.json's scripts
}


def _uv_pip_builds(words: list[str]) -> bool:
    """`uv pip install …` / `sync` / `compile`: what it installs may be built from the folder (`-e .`, `.`)."""
    sub = [w for w in words if not w.startswith("-")]
    return len(sub) > 1 and sub[1] in ("install", "sync", "compile")


def _literal_runs_shell(code: str) -> str | None:
    try:
        commands = script_commands(code)
    except Unbindable as refused:
        return str(refused)
    for words in commands:
        if why := discovers(words):
            return why
    return None


def _python_discovers(arguments: list[str]) -> str | None:
    """Why `python ARGUMENTS` runs code that finds the folder's (`-m pytest`, `-mpytest`, `-Im pytest`, `-c
    'import pytest…'`), or None."""
    skip = False
    for n, word in enumerate(arguments):
        if skip:  # `-W ignore`, `-X dev`: an option's value
            skip = False
            continue
        if word in ("-W", "-X", "-Q"):
            skip = True
            continue
        if not word.startswith("-") or word == "-":
            return None  # the script: read as a file of its own
        if found := re.fullmatch(r"-[A-Za-z]*([mc])(.*)", word, re.S):
            value = found.group(2) or (arguments[n + 1] if n + 1 < len(arguments) else "")
            if found.group(1) == "m":
                module = value.split(".")[0]
                if module in DISCOVERING_MODULES or module in PY_DISCOVERING_IMPORTS:
                    return f"`python -m {module}` finds and runs the folder's code by itself"
                if module in ("cProfile", "profile", "trace", "pdb", "runpy", "timeit", "coverage", "pyinstrument"):
                    return f"`python -m {module}` runs what its arguments name"
                return None
            try:
                list(python_names(value, Path("-c"), Path("."), "its -c code"))
            except Unbindable as why:
                return str(why)
            return _literal_runs(value)
    return None


def _literal_runs(code: str) -> str | None:
    """Why a script's own string literals name a runner it may start (`subprocess.run(["pytest"])`,
    `execSync("jest")`), or None: what a literal names is not followed, so such a script can't be pinned."""
    if not _SPAWNS.search(code):
        return None  # (it starts no process: a literal `"next step"` is only text)
    for found in _LITERAL.finditer(code):
        words = found.group(2).split()
        if words and (why := discovers(words)):
            return f"it starts `{found.group(2)[:40]}`: {why}"
    return None


_SPAWNS = re.compile(
    r"\b(?:subprocess|os\s*+\.\s*+(?:system|popen|exec\w*+|spawn\w*+|posix_spawn\w*+)|pty\s*+\.\s*+spawn|child_process"
    r"|execSync|execFileSync|spawnSync|execa|Bun\s*+\.\s*+spawn|Deno\s*+\.\s*+(?:run|Command)|shelljs|zx)\b"
)
_LITERAL = re.compile(r"""(['"`])([A-Za-z][\w.+-]*+(?:[ \t][^'"`\n]*+)?)\1""")
# What starts a process, or runs code, in a Node, Ruby or Perl script. Python's calls are read with its own parser
# (`_python_computes`); these languages have none here. A command built when it runs (`execSync('py' + 'test')`,
# `system("py" + "test")`), an alias of the function (`const run = cp.execSync`, `method(:system)`) or a name looked
# up (`cp[m](…)`, `public_send`) can't be told from a literal one (round 28): a Node script that can start a
# process is unbindable (a module's functions are called by any name there); a Ruby or Perl one only when it starts
# one other than by a call with one plain literal (`system("sh scripts/a.sh")`, read as a shell line).
_JS_STARTS = re.compile(
    r"\b(?:child_process|execa|shelljs|zx|worker_threads|vm|cluster)\b|\bBun\s*+\.\s*+(?:spawn|\$)|\bBun\s*+\.\s*+\$"
    r"|\bDeno\s*+\.\s*+(?:run|Command)\b|\bprocess\s*+\.\s*+(?:binding|_linkedBinding|dlopen)\b"
    r"|\beval\s*+\(|\bFunction\s*+\("
)
# a printable character written as an escape or a code (`'child\x5fprocess'`), or text decoded when it runs
_JS_SPELLED = re.compile(
    r"\\x[2-7][0-9a-fA-F]|\\u00[2-7][0-9a-fA-F]|\\u\{0*[2-7][0-9a-fA-F]\}|\\[0-7]{3}"
    r"|\bfromCharCode\b|\bfromCodePoint\b|\batob\s*+\(|['\"]base64['\"]|\bdecodeURI\w*|\bunescape\s*+\("
)
# what the Node reading doesn't follow: `require` by another name, createRequire, Module._load, loader hooks, eval
# by any name, Function's constructor, `#` imports, specifiers with a query; bare specifiers (packages, the folder's
# own name: package.json's `exports`) are not read either
_JS_UNREAD = re.compile(
    r"\brequire\b(?!\s*+\()|\bcreateRequire\b|\b_load\b|\bregister\s*+\(\s*+['\"]|\.\s*+constructor\b|\beval\b"
    r"|\bFunction\s*+\(|\bprocess\s*+\.\s*+(?:binding|dlopen|_linkedBinding)|\bnew\s++Worker\b"
    r"|['\"](?:node:)?(?:vm|worker_threads|module|inspector|wasi)['\"]"
)
_JS_SPECIFIER = re.compile(r"""(?:\brequire\s*+\(|\bfrom\s++|\bimport\s*+\(?)\s*+['"]([^'"\n]*+)['"]""")
_RB_STARTS = re.compile(
    r"`|%x|\b(?:system|exec|spawn|fork|syscall|Open3|PTY|popen\w*+|__send__|public_send|send|method|instance_method"
    r"|define_method|const_get|ObjectSpace)\b|(?<![.\w])open\b|\bIO\s*+\.\s*+\w++"
)
_PL_STARTS = re.compile(
    r"`|\bqx\b|\b(?:system|exec|fork|open\w*+|readpipe|syscall|can|CORE)\b|\bIPC::|&\s*+[{$]|->\s*+[{$]"
    r"|<<\s*+`|[/|!#}][msixpodualngcr]*+e[msixpodualngcr]*+e[msixpodualngcr]*+\s*+[;)]"
)
# A start that is one call of one plain literal, ending its statement: `system("sh x.sh")`, `` `git status` ``.
_LITERAL_START = re.compile(
    r"""[ \t]*+\(?[ \t]*+(['"])([^'"`#$@\\\n|]*+)\1[ \t]*+\)?[ \t]*+(?=$|;|\n|\b(?:if|unless|or|and)\b|&&|\|\|)"""
    r"|([^`#$@\\\n]*+)`"
)

# what the Perl reading doesn't follow: BEGIN blocks, `use if`, `do q(…)`, the old package separator, `-I`/`-M` on
# the `#!` line, a here-document (its text may hold a line that starts POD or __END__, which hid what follows)
_PL_UNREAD = re.compile(
    r"\bBEGIN\b|\buse\s++if\b|\bdo\s*+q|\b(?:use|require|no)\s++\w++'\w|\A#!.*\s-[IMm]|<<\s*+[\"'~`\w]", re.MULTILINE
)
_PL_FILE_OPEN = re.compile(r"""\s*+\(?\s*+(?:my\s++)?\$\w++\s*+,\s*+(['"])(?:<|>|>>|\+<|\+>)(?::[\w()-]*+)?\1\s*+,""")


def _starts_unread(code: str, starts: re.Pattern[str], commands: list[str] | None = None) -> str | None:
    """Why a Ruby or Perl script starts a process the reading can't see (a command built, an alias, a lookup), or
    None: each start is a call of one plain literal (or a plain backtick), put in `commands` (the caller reads each
    as a shell line)."""
    read_to = 0
    for found in starts.finditer(code):
        if found.start() < read_to:
            continue  # inside the literal just read (`system("echo system")`, a backtick's closing one)
        if found.group(0) == "open" and _PL_FILE_OPEN.match(code, found.end()):
            continue  # Perl's three-argument open of a file for reading or writing
        literal = _LITERAL_START.match(code, found.end())
        if literal is None or (found.group(0) == "`") != (literal.group(3) is not None):
            return f"it starts a process other than by a literal command (`{found.group(0)}`)"
        read_to = literal.end() + (literal.group(3) is not None)
        command = literal.group(2) if literal.group(3) is None else literal.group(3)
        if commands is not None:
            commands.append(command)
    return None


def language(path: Path, first_line: bytes) -> str | None:
    """Which reader a file takes: by its name, else by its `#!` line. A name and a `#!` line of two different
    languages (`hook.sh` starting `#!/usr/bin/perl`) make it "mixed": run by name (`bash hook.sh`) it is one, run
    itself (`./hook.sh`) the other, and no one reading holds for both."""
    named = _by_name(path.name)
    shebang = _by_shebang(first_line)
    if named in _CODE_LANGUAGES and shebang is not None and shebang != named:
        return "mixed"
    return named or shebang


_CODE_LANGUAGES = frozenset({"shell", "python", "node", "ruby", "perl"})


def _by_name(name: str) -> str | None:
    if name.endswith(SHELL_SUFFIXES):
        return "shell"
    if name in MAKEFILES or name.endswith(".mk"):
        return "make"
    if name == "package.json":
        return "package"
    if name == "pyproject.toml":
        return "pyproject"
    if name in (".npmrc", ".yarnrc", ".yarnrc.yml"):
        return "npmrc"
    if name == ".python-version":
        return "python-version"
    if name.endswith(".py"):
        return "python"
    if name.endswith(NODE_SUFFIXES):
        return "node"
    if name.endswith(".rb") or name in ("Rakefile", "rakefile", "Gemfile"):
        return "ruby"
    if name.endswith((".pl", ".pm")):
        return "perl"
    return None


def _by_shebang(first_line: bytes) -> str | None:
    if not first_line.startswith(b"#!"):
        return None
    words = first_line[2:].decode("utf-8", "replace").split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program in SHELLS:
        return "shell"
    if re.fullmatch(r"python[\d.]*", program):
        return "python"
    if program in ("node", "nodejs", "bun", "deno"):
        return "node"
    if re.fullmatch(r"ruby[\d.]*", program):
        return "ruby"
    if re.fullmatch(r"perl[\d.]*", program):
        return "perl"
    return None


def names_in(kind: str, text: str, path: Path, root: Path, shown: str, *, posix: bool = False) -> list[str]:
    """The names the file at `path` (`shown` in messages) of `kind` pulls in or mentions (`posix`: a shell script
    `sh` may run, where `sh` is dash)."""
    if kind == "shell":
        return list(shell_names(text, path, root, shown, posix=posix))
    return list(_READERS[kind](text, path, root, shown))


def shell_names(
    text: str, path: Path, root: Path, shown: str, *, strict: bool = True, make_depth: int = 0, posix: bool = False
) -> Iterator[str]:
    """What a shell script sources (relative to the hook's folder, the workspace, and to the script's own, for
    one that `cd`s there first) and every other workspace name its commands mention. `strict` (a script, not a
    makefile's recipes, where `$(CC)` is how programs are named): a program, or the code a shell, an interpreter
    or `eval` is given, that is computed when it runs makes the script unbindable."""
    # (`<<<` is read: a shell or an interpreter given one reads its code from its input, `code_it_reads`)
    if strict and (fed := re.search(r"<\(|>\(", text)):
        raise Unbindable(f"{shown}: `{fed.group(0)}` gives a command its code, which a reading can't follow")
    text = OWN_FOLDER.sub("${" + OWN_FOLDER_VARIABLE + "}", text)
    own = {**dict.fromkeys(PROJECT_VARIABLES, str(root)), OWN_FOLDER_VARIABLE: str(path.parent)}
    try:
        reading = script_read(text, strict=strict, posix=posix)
    except Unbindable as refused:
        raise Unbindable(f"{shown}: {refused}") from refused
    if strict and reading.held_substitution and (evaluates := _EVALUATES.search(text)):
        raise Unbindable(
            f"{shown} keeps `$(…)` or a backtick as text, and bash may run it (`{evaluates.group(0).strip()}`: eval, "
            "an array subscript in arithmetic, PS4, prompt expansion, `${!x}`, `test -v`)"
        )
    for words in reading.commands:
        spend(len(words))  # (a name per word: 120,000 words took 4 s)
        settings: list[str] = []
        while len(words) > 1 and re.match(r"[A-Za-z_]\w*\+?=", words[0]):
            settings.append(words[0])  # `X=1 cmd`: the program is after the assignments
            words = words[1:]
        program = words[0]
        # `x=$(cat)` alone sets a variable: no program runs (what its substitution runs is a command of its own)
        assigns = re.match(r"[A-Za-z_]\w*\+?=", program) is not None
        if strict and (
            why := discovers(words)
            or package_script_discovers(words, root)
            or elsewhere(words, root, own=path.parent)
            or loads_by_setting(settings + words)
            or unmodelled(words)
        ):
            raise Unbindable(f"{shown}: {why}")
        if strict:
            from bridge.permissions import make_reads  # (it reads recipes with this very function)

            if reads := code_it_reads(settings + words, root):
                raise Unbindable(f"{shown}: {reads}")
            if (real := unwrapped(words)) and not assigns and not _known(substituted(real[0], own)):  # `env $X …`
                raise Unbindable(f"{shown} runs `{real[0]}`, a name computed when it runs")
            if real and (why := _takes_code(real) or _takes_code(words) or _runs_outside(real, root)):
                raise Unbindable(f"{shown}: {why}")
            if real and _inline(real, at := _operand(real)) and at < len(real) and not _gives_code(real):
                kind = _INLINE_READERS.get(re.sub(r"[\d.]+$", "", _name(real[0])))
                if kind is not None:  # `python3 -c '…'`, `node -e '…'`, `perl -e '…'` in a script: read as such
                    yield from names_in(kind, real[at], path, root, shown)
            if real and any(_name(w) == "eval" for w in words[: len(words) - len(real)]):
                # `eval 'sh evil.sh'`: its words joined are shell code, read as a script
                yield from shell_names(" ".join(real), path, root, shown, make_depth=make_depth, posix=posix)
            if real and _runs_code(real[0]) and (at := _operand(real)) < len(real):
                if not _inline(real, at) and not _known(
                    substituted(real[at], own)
                ):  # `exec bash "$f"`, `time . "./$f"`, `bash -o errexit "$f"`
                    verb = "sources" if _name(real[0]) in (".", "source") else "runs"
                    raise Unbindable(f"{shown} {verb} `{real[at]}`, a name computed when it runs")
                if _gives_code(real):  # `bash -c 'sh evil.sh'`, `eval 'sh ev''il.sh'`: the code is read as a script
                    code = " ".join(real[at:]) if _name(real[0]) == "eval" else real[at]
                    dash = posix if _name(real[0]) == "eval" else _name(real[0]) in POSIX_SHELLS
                    yield from shell_names(code, path, root, shown, make_depth=make_depth, posix=dash)
            if make_reads.is_make(real):
                try:
                    yield from make_reads.make_names([*real, *settings], root, make_depth)
                except Unbindable as refused:
                    raise Unbindable(f"{shown}: {refused}") from refused
        target_next = False
        for n, word in enumerate(words):
            if target_next:  # `>> hook.log`: what the command writes, not code it runs (its own log would
                target_next = False  # otherwise change at every run and ask again)
                continue
            if redirect := _WRITE_TO.fullmatch(word):
                target_next = not redirect.group(1)
                continue
            value = substituted(word, own)
            known = _known(value)
            if n == 1 and program in {".", "source"}:
                if not known:
                    raise Unbindable(f"{shown} sources `{word}`, a name computed when it runs")
                yield os.path.join(root, value)
                yield os.path.join(path.parent, value)
            elif known:
                yield value
                if "=" in value:
                    yield value.split("=", 1)[1]
            elif strict and (
                (n == 0 and not assigns) or (n == _operand(words) and _runs_code(program) and not _inline(words, n))
            ):
                raise Unbindable(f"{shown} runs `{word}`, a name computed when it runs")
        yield from _conventional(program)


# What makes bash run text as code later: with `$(…)` kept as text in a script (`x='a[$(cmd)]'`), each of these
# may run it (an awk program's `$(NF)` alone is only text).
_EVALUATES = re.compile(
    r"\beval\b|\(\(|\blet\b|\$\{!|@P\b|\bPS[0-4]\b|PROMPT_COMMAND|\s-v\s|\[\[|\w\[[^\]\n]*\$"
    r"|\b(?:declare|typeset|local)\s++-\w*i|\btrap\b|\bset\s++-\w*x|\bBASH_\w+|\bsource\b|^\s*\.\s",
    re.MULTILINE,
)


# Settings a command may run with that make it load code from elsewhere than the files it names (`PATH=./bin ls`,
# `PYTHONPATH=evil python x.py`, `NODE_OPTIONS=--require ./pre.js`): round 27's verification.
LOADING_SETTINGS = re.compile(
    r"BASH_\w*|ENV|IFS|CDPATH|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|\w*PATH|LD_\w*|DYLD_\w*|PYTHON\w*|NODE_\w*"
    r"|NPM_CONFIG_\w*|npm_config_\w*|PERL\w*|RUBY\w*|GEM_\w*|BUNDLE_\w*|GIT_\w*|JAVA_\w*|_JAVA_OPTIONS|\w*_OPTIONS"
    r"|CLASSPATH|ZDOTDIR|HOME|XDG_\w*|PIP_\w*|UV_\w*|VIRTUAL_ENV|CONDA_\w*|MAKEFLAGS|MAKEFILES|GNUMAKEFLAGS"
)


_SETTING_BUILTINS = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "read", "printf", "mapfile", "readarray", "getopts", "let"}
)


_NAME_VALUED = {
    "read": frozenset({"-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"}),
    "mapfile": frozenset({"-d", "-n", "-O", "-s", "-u", "-C", "-c"}),
    "readarray": frozenset({"-d", "-n", "-O", "-s", "-u", "-C", "-c"}),
}


def _set_names(words: list[str]) -> list[str]:
    """The words a setting builtin takes as variables to set (`printf -v NAME`, `read -r A B`, `export A=1 B`)."""
    program, rest = words[0], words[1:]
    if program == "let":
        return []
    if program == "printf":
        return [rest[n + 1] for n, w in enumerate(rest[:-1]) if w == "-v"]
    if program == "getopts":
        return rest[1:2]
    valued = _NAME_VALUED.get(program, frozenset())
    names, skip = [], False
    for word in rest:
        if skip:
            skip = False
        elif word in valued:
            skip = True
        elif not word.startswith("-"):
            names.append(word)
    return names


def loads_by_setting(words: list[str]) -> str | None:
    """Why the command's settings (`NAME=value` before it, `env NAME=value`, `env -S`) may make it load code from
    files it doesn't name, or None. A builtin that sets a variable for the commands after it (`export PATH=./bin`,
    `read PATH`, `printf -v PYTHONPATH …`) counts as such a setting, its value known or not."""
    if words and words[0] in _SETTING_BUILTINS:
        if words[0] in ("declare", "typeset", "local") and any(re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", w) for w in words):
            return f"`{words[0]} -n` makes a name another variable's (PATH's, BASH_ENV's…)"
        for word in _set_names(words):
            name = re.sub(r"\[.*", "", word.partition("=")[0]).rstrip("+")  # (`BASH_ALIASES[zz]`: the array)
            if "$" in name or "`" in name:
                return f"`{words[0]} {name}` sets a variable named when it runs"
            if re.fullmatch(r"[A-Za-z_]\w*+", name) and LOADING_SETTINGS.fullmatch(name):
                return (
                    f"`{words[0]} {name}` makes the commands after it load code from elsewhere than the files they name"
                )
        return None
    for word in words:
        name, equals, _ = word.partition("=")
        if word in ("-S", "--split-string") or word.startswith(("-S", "--split-string=")):
            return "`env -S` splits a string into the command it runs"
        if equals and re.fullmatch(r"[A-Za-z_]\w*+\+?", name) and LOADING_SETTINGS.fullmatch(name.rstrip("+")):
            return f"`{name}=` makes it load code from elsewhere than the files it names"
        if not equals and not word.startswith("-") and word.rsplit("/", 1)[-1] not in _PLAIN_WRAPPERS:
            break
    return None


def unmodelled(words: list[str]) -> str | None:
    """Why a strict reading can't follow what the command makes the shell do (an alias, a trap, code read through a
    descriptor or a process substitution, `find -exec`, brace expansion of a program), or None."""
    real = unwrapped(words)
    program = real[0].rsplit("/", 1)[-1] if real else ""
    if program in ("alias", "trap", "complete", "bind", "enable", "hash", "declare", "typeset", "readonly"):
        return f"`{program}` makes the shell run code later, which a reading can't follow"
    sourced = [w for w in real[1:] if w != "--"][:1]
    if program in (".", "source") and sourced and re.sub("/+", "/", sourced[0]).startswith(("/dev/", "/proc/")):
        return f"`{' '.join(real[:2])}` runs code read through a descriptor"
    if (program == "exec" or (words and words[0] == "exec")) and any(
        re.fullmatch(r"\d*[<>].*", w) or w == "-a" for w in words[1:]
    ):
        return "`exec` opens a descriptor or renames the program it runs"
    if program in ("find", "fd", "parallel") and any(
        w in ("-exec", "-execdir", "-ok", "-okdir", "-x", "-X") for w in real
    ):
        return f"`{program}` runs a command for each file it finds"
    if "{" in program and "," in program:
        return f"`{program}`: brace expansion names the program"
    if any(w.startswith(("<(", ">(")) or "<(" in w for w in words):
        return "a process substitution gives a command its code"
    # (a here-string is text: read by a shell or an interpreter, `code_it_reads` refuses it as code from its input)
    return None


def read_regular(path: str | Path, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file, never blocking (a FIFO, `/dev/stdin`, `/dev/zero` behind a link
    hung the reading or filled the memory: round 27's verification): OSError for anything else."""
    if "\x00" in str(path):
        raise OSError(errno.EINVAL, "a name with a NUL byte")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return os.read(fd, limit)
    finally:
        os.close(fd)


def code_it_reads(words: list[str], root: Path) -> str | None:
    """Why the command runs code a reading of the files it names can't see, or None: an interpreter given no
    script reads its code from its input (`cat x | sh`, `sh < x`); a workspace file run by an interpreter, or run
    itself, that is text of no language the reading knows (`sh tasks`, `python tools/run`, `./tool` without `#!`);
    make's goals given by xargs."""
    while words and re.match(r"[A-Za-z_]\w*\+?=", words[0]):
        words = words[1:]
    real = unwrapped(words)
    if not real:
        return None
    wrappers = [w.rsplit("/", 1)[-1] for w in words[: len(words) - len(real)]]
    if "xargs" in wrappers and (real[0].rsplit("/", 1)[-1] in ("make", "gmake", *SHELLS) or _runs_code(real[0])):
        return f"`{' '.join(words)}`: what it runs comes from its input"
    program = real[0].rsplit("/", 1)[-1]
    interpreter = program in SHELLS or bool(re.fullmatch(r"(?:python[\d.]*|node|nodejs|ruby|perl|bun|deno)", program))
    if interpreter:
        operands = [w for w in real[1:] if not w.startswith("-")]
        if "-c" in real or "-e" in real or any(re.fullmatch(r"-[A-Za-z]*[cem]\S*", w) for w in real[1:]):
            return None  # its code is on the command line (read there), or a module (`-m`)
        if not operands or operands[0] == "-" or re.match(r"\d*<", operands[0]):  # `sh < x`, `sh <<EOF`
            return f"`{' '.join(real)}` reads the code it runs from its input"
        script = operands[0]
    elif "/" in real[0]:
        script = real[0]  # `./tool`: run itself
    else:
        return None
    path = os.path.join(root, script)
    if re.sub("/+", "/", script).startswith(("/dev/", "/proc/")):
        return f"`{' '.join(real)}` runs code from `{script}`"
    try:
        head = read_regular(path, 256)
    except OSError:
        return None  # not a file of the workspace (bound by its absence when it is named)
    if head.startswith(b"\x7fELF") or (not interpreter and head.startswith(b"#!")):
        return None  # a program (pinned by its digest), or a script whose `#!` says how it is read
    if language(Path(path), head.split(b"\n", 1)[0]) is None:
        return f"`{script}` is run as code of no kind a reading of it knows (no `#!`, no known ending)"
    return None


def unwrapped(words: list[str]) -> list[str]:
    """The command a wrapper runs (`env X=1 nice -n 5 timeout 60s make lint` -> `make lint`), from its program on;
    the words themselves when they start with no wrapper."""
    n = 0
    while n < len(words) and words[n].rsplit("/", 1)[-1] in _PLAIN_WRAPPERS:
        name = words[n].rsplit("/", 1)[-1]
        n += 1
        valued = _WRAPPER_VALUED.get(name, "")
        while n < len(words) and (words[n].startswith("-") or ("=" in words[n] and name == "env")):
            word = words[n]
            n += 1
            if word.startswith("-") and not word.startswith("--") and word[-1:] in valued and len(word) == 2:
                n += 1  # `-n 5`, `-u user`: the option's value
            elif word in _LONG_VALUED.get(name, ()):
                n += 1  # `timeout --signal KILL 60`
        if name in _WRAPPER_POSITIONAL and n < len(words):
            n += 1  # timeout's duration, flock's file, taskset's mask, chrt's priority
    return words[n:]


_PLAIN_WRAPPERS = frozenset(
    {"env", "time", "nice", "nohup", "timeout", "exec", "command", "builtin", "sudo", "doas", "stdbuf", "setsid"}
    | {"coproc", "setpriv", "unshare", "nsenter", "chroot", "sg", "newgrp", "bwrap", "proot", "fakeroot"}
    | {"eval", "chrt", "ionice", "taskset", "flock", "unbuffer", "xargs", "caffeinate", "prlimit", "setarch"}
    | {"linux32", "linux64", "numactl", "cgexec", "systemd-run", "firejail", "strace", "ltrace", "valgrind"}
)
_LONG_VALUED = {
    "timeout": ("--signal", "--kill-after"),
    "xargs": ("--arg-file", "--delimiter", "--max-args", "--max-procs", "--replace"),
    "sudo": ("--user", "--group", "--chdir"),
    "time": ("--format", "--output"),
    "systemd-run": ("--unit", "--property", "--working-directory"),
}
_WRAPPER_VALUED = {"xargs": "IiLnPsdEa", "sudo": "ugCDhpRrTU", "doas": "uC", "env": "uCS", "timeout": "sk"}
_WRAPPER_VALUED |= {"nice": "n", "ionice": "cnpP", "taskset": "", "stdbuf": "ioe", "flock": "wE", "time": "fo"}
_WRAPPER_VALUED |= {"strace": "eoopsuE", "ltrace": "eoopsuE", "numactl": "CNmpi", "cgexec": "g"}
_WRAPPER_POSITIONAL = frozenset({"timeout", "flock", "taskset", "chrt", "setarch", "chroot", "sg"})


def _runs_code(program: str) -> bool:
    """A program whose first operand is code to run: a shell, an interpreter, `eval`, `exec`, `.`/`source`."""
    name = _name(program)
    return (
        name in SHELLS
        or name in {"eval", "exec", "node", "nodejs", "bun", "deno", ".", "source", "perl", "ruby", "php", "lua"}
        or name in {"awk", "gawk", "mawk", "nawk", "Rscript", "tclsh", "osascript", "pwsh"}
        or bool(re.fullmatch(r"python[\d.]*", name))
    )


def _name(program: str) -> str:
    return program.rsplit("/", 1)[-1]


# options whose value is the next word, by program: the operand (the script, or `-c`'s code) comes after them
_OPERAND_VALUED = {
    **dict.fromkeys(SHELLS, frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})),
    "awk": frozenset({"-v", "-F"}),
    "gawk": frozenset({"-v", "-F"}),
    "python": frozenset({"-W", "-X", "-Q"}),
}


def _operand(words: list[str]) -> int:
    """Where a command's first operand is (its options skipped, their values too; `-c`'s text, awk's `-f` file and
    the word after `--` are the operand)."""
    valued = _OPERAND_VALUED.get(re.sub(r"[\d.]+$", "", _name(words[0])) if words else "", frozenset())
    skip = False
    for n, word in enumerate(words[1:], 1):
        if skip:
            skip = False
            continue
        if word in valued:
            skip = True
            continue
        if word == "--":
            return n + 1
        if re.fullmatch(r"-[A-Za-z]*c", word) or (word == "-f" and _name(words[0]).endswith("awk")):
            return n + 1
        if not word.startswith(("-", "+")) or word in ("-", "+"):
            return n
    return len(words)


# Programs that run code given on their command line, or from a file, that no reader here reads: refused where
# the option (or, for `True`, any use) appears (round 28's second verification: awk's system(), sed's `e`, tar's
# checkpoint actions, ssh's ProxyCommand, `git -c alias.x=!…`, `mapfile -C`, `script -c`…).
_CODE_TAKERS: dict[str, frozenset[str] | bool] = {
    "sed": frozenset({"-f", "--file"}),
    "gsed": frozenset({"-f", "--file"}),
    "tclsh": True,
    "wish": True,
    "expect": True,
    "php": True,
    "lua": True,
    "luajit": True,
    "Rscript": True,
    "osascript": True,
    "pwsh": True,
    "powershell": True,
    "vim": True,
    "vi": True,
    "nvim": True,
    "ex": True,
    "view": True,
    "emacs": True,
    "gdb": True,
    "lldb": True,
    "script": True,
    "flock": frozenset({"-c", "--command"}),
    "su": frozenset({"-c", "--command", "-s", "--shell"}),
    "runuser": frozenset({"-c", "--command"}),
    "tar": frozenset(
        {
            "--checkpoint-action",
            "--to-command",
            "-I",
            "--use-compress-program",
            "-F",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
        }
    ),
    "ssh": frozenset({"-o", "-F"}),
    "scp": frozenset({"-o", "-F", "-S"}),
    "sftp": frozenset({"-o", "-F", "-S"}),
    "rsync": frozenset({"-e", "--rsh", "--rsync-path"}),
    "git": frozenset({"-c", "--config-env", "--exec-path"}),
    "mapfile": frozenset({"-C"}),
    "readarray": frozenset({"-C"}),
    "compgen": frozenset({"-C", "-F"}),
    "complete": True,
    "watch": True,
    "at": True,
    "batch": True,
    "crontab": True,
    "tmux": True,
    "screen": True,
    "dtach": True,
    "busybox": True,
    "zip": frozenset({"-TT", "--unzip-command"}),
    "man": frozenset({"-P", "-H"}),
    "less": True,
    "more": True,
    "most": True,
}
_AWK_RUNS = re.compile(r"\bsystem\s*+\(|\bgetline\b|\|\s*+&|\bprintf?\b[^;{}]*?\|")
_SED_RUNS = re.compile(r"(?:^|[;{}\n])\s*+e\b|/[gipmwIM0-9]*+e[gipmwIM0-9]*+\s*+(?:$|[;}\n])")
_INLINE_READERS = {"python": "python", "node": "node", "nodejs": "node", "perl": "perl", "ruby": "ruby"}


def _takes_code(words: list[str]) -> str | None:
    """Why the command runs code a reading here doesn't read (a program or an option that takes code), or None."""
    name = _name(words[0])
    if name.endswith("awk") and name in ("awk", "gawk", "mawk", "nawk", "busybox"):
        if "-f" in words or any(w.startswith(("-f", "--file")) for w in words[1:]):
            return f"`{name} -f` runs an awk program from a file, which is not read"
        if any(_AWK_RUNS.search(w) for w in words[1:]):
            return f"`{name}`'s program starts commands (system(), getline, a pipe)"
        return None
    if name in ("sed", "gsed") and any(_SED_RUNS.search(w) for w in words[1:] if not w.startswith("-")):
        return f"`{name}`'s script runs commands (`e`)"
    rule = _CODE_TAKERS.get(name)
    if rule is True:
        return f"`{name}` runs code or commands a reading here doesn't read"
    if isinstance(rule, frozenset):
        for word in words[1:]:
            option = word.split("=", 1)[0]
            if option in rule or (len(option) > 2 and option[:2] in rule and not option.startswith("--")):
                return f"`{name} {option}` runs code or commands a reading here doesn't read"
    if re.fullmatch(r"(?:php|lua|Rscript)[\d.]*", name) or (
        name in ("node", "nodejs", "deno", "bun")
        and any(w.startswith(("--import", "--require", "-r", "--loader", "--experimental-loader")) for w in words[1:])
    ):
        return f"`{name}` runs code a reading here doesn't read"
    return None


_SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/", "/lib", "/opt/", "/etc/", "/nix/", "/snap/", "/System/", "/Library/")


def _runs_outside(words: list[str], root: Path) -> str | None:
    """Why the command runs a file outside the workspace that isn't an installed program (`sh /tmp/copy.sh`: a
    copy the script made of a workspace file, which the trust can't pin), or None."""
    candidates = [words[0]]
    if _runs_code(words[0]) and (at := _operand(words)) < len(words) and not _inline(words, at):
        candidates.append(words[at])
    for word in candidates:
        if not word.startswith(("/", "~")) or "$" in word:
            continue
        real = os.path.normpath(os.path.expanduser(word))
        if real == str(root) or real.startswith(str(root) + os.sep) or real.startswith(_SYSTEM_DIRS):
            continue
        if real.startswith(("/dev/", "/proc/")):
            continue  # (said elsewhere: code read through a descriptor)
        return f"`{word}` is a file outside the workspace it runs, which the trust can't pin"
    return None


def _inline(words: list[str], at: int) -> bool:
    """Whether the operand at `at` is code written out and read as such (`sh -c '…'`, `python -c '…'`, awk's
    program without `-f`), not the name of a file to run."""
    if _name(words[0]).endswith("awk"):
        return "-f" not in words[:at]
    # a shell's `-c` code, and Python's, Node's, Perl's and Ruby's written-out code, are read themselves (in a
    # script: `_INLINE_READERS`)
    if at >= len(words) or at < 1:
        return False
    name = re.sub(r"[\d.]+$", "", _name(words[0]))
    flags = {"python": ("-c",), "node": ("-e", "-p", "--eval", "--print"), "nodejs": ("-e", "-p", "--eval", "--print")}
    flags |= {"perl": ("-e", "-E"), "ruby": ("-e",)}
    return _gives_code(words) or words[at - 1] in flags.get(name, ())


def _gives_code(words: list[str]) -> bool:
    """`sh -c CODE`, `bash -ec CODE`, `eval WORDS`: the operand is shell code."""
    name = _name(words[0])
    return name == "eval" or (name in SHELLS and any(re.fullmatch(r"-[A-Za-z]*c", w) for w in words[1:]))


def _known(word: str) -> bool:
    """Whether a word is the name it reads as: nothing bash expands in it (a variable, a substitution, a glob,
    braces, `~+`/`~-`/`~user`)."""
    return not (
        "$" in word
        or "`" in word
        or _globbed(word)
        or re.search(r"\{[^{}]*(?:,|\.\.)[^{}]*\}", word) is not None
        or re.match(r"~[^/]", word) is not None
    )


def make_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """A makefile's (or justfile's) includes, and what its recipes' commands mention (read as shell lines). A
    justfile's every recipe is checked as make's goals are (`just` is not followed recipe by recipe)."""
    if path.name in ("justfile", "Justfile", ".justfile"):
        if found := _JUST_UNFOLLOWED.search(text):
            raise Unbindable(f"{shown} uses `{found.group(0).strip()[:40]}`, which a reading of it can't follow")
        for line in text.split("\n"):
            if line[:1] in (" ", "\t"):
                command = re.sub(r"\{\{[^{}]*+\}\}", "$JUST", line.strip().lstrip("@-"))  # `{{x}}`: made as it runs
                yield from shell_names(command, path, root, f"{shown}'s recipe `{line.strip()[:80]}`")
    for match in _MAKE_INCLUDE.finditer(text):
        for word in match.group(1).split("#", 1)[0].split():
            if "$" in word or _globbed(word):
                raise Unbindable(f"{shown} includes `{word}`, a name computed when it runs")
            yield os.path.join(path.parent, word)
    yield from shell_names(text, path, root, shown, strict=False)


# a justfile's own interpreter, imports and modules, environment, working folder, and code run as it is read
_JUST_UNFOLLOWED = re.compile(
    r"^[^\S\n]*+set[^\S\n]++(?:windows-)?(?:shell|script-interpreter|dotenv[\w-]*+|working-directory|export)\b"
    r"|^[^\S\n]++#!|^[^\S\n]*+(?:import|mod|export)\b|\[[^\]\n]*?(?:script|working-directory)|^[^\s#][^\n`]*+`",
    re.MULTILINE,
)


def package_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """What package.json's `scripts` run (each read as a shell command)."""
    try:
        scripts = json.loads(text).get("scripts") or {}
    except (ValueError, AttributeError) as exc:
        raise Unbindable(f"{shown} is not a JSON object: what its scripts run can't be known") from exc
    if not isinstance(scripts, dict):
        return
    for command in scripts.values():
        if isinstance(command, str):
            yield from shell_names(command, path, root, shown, strict=False, posix=True)
            for words in script_commands(
                command, strict=False
            ):  # a script's programs are found in node_modules/.bin first
                real = unwrapped([w for w in words if not re.match(r"[A-Za-z_]\w*\+?=", w)])  # (`nice mytool`)
                program = real[0] if real else ""
                if program and "/" not in program and "$" not in program:
                    yield os.path.join(root, "node_modules", ".bin", program)


PACKAGE_RUNNERS = frozenset({"npm", "yarn", "pnpm", "bun"})
_LIFECYCLE = frozenset({"test", "start", "stop", "restart", "t", "tst"})


_INSTALLS = frozenset({"install", "i", "ci", "add", "rebuild"})
_INSTALL_SCRIPTS = ("preinstall", "install", "postinstall", "prepare")
# options that make a package manager, make or env work in another folder: its package.json or makefile is not the
# one bound (`npm --prefix sub run x`, `cd sub && npm run x`: round 26's verification ran a pulled sub/package.json)
_ELSEWHERE = re.compile(
    r"--prefix(=.*)?|--cwd(=.*)?|--dir(=.*)?|--workspaces?(=.*)?|-w|--filter(=.*)?|-F|-C\S*|--directory(=.*)?"
    r"|--project(=.*)?|--package(=.*)?|--all-packages"
)
_EXECUTORS = {"npx": 1, "pnpx": 1, "bunx": 1}  # and `npm exec`, `pnpm exec`, `yarn exec|dlx`, `npm x`


def package_script_discovers(words: list[str], root: Path, depth: int = 0, seen: set[str] | None = None) -> str | None:
    """Why `npm run NAME` (`yarn NAME`, `npm test`, `npm install`…) runs a script of the folder's package.json that
    finds code by itself (`"fmt": "prettier --check ."`: prettier loads the plugins its config names), directly or
    through another `npm run` in it, or None."""
    words = unwrapped(words)
    if not words or words[0].rsplit("/", 1)[-1] not in PACKAGE_RUNNERS or depth > 4:
        return None
    rest = [w for w in words[1:] if not w.startswith("-")]
    if not rest:
        return None
    from bridge.permissions import make_reads  # (it reads recipes with shell_names, which calls this one)

    ran = rest[0] in ("run", "run-script", "rs", "rum", "urn")
    if any("$" in w or "`" in w for w in rest[:2]):
        return f"`{' '.join(words)}` runs a script named when it runs"
    if not ran and rest[0] in ("pack", "publish", "install-test", "it", "cit", "install-ci-test", "version"):
        return f"`{' '.join(words[:2])}` runs the package's lifecycle scripts (prepare, prepack, test…)"
    name = rest[1] if ran and len(rest) > 1 else rest[0]
    try:
        scripts = _package_scripts(os.path.join(root, "package.json"))
    except OSError:
        return None
    except (ValueError, RecursionError) as exc:
        return f"its package.json can't be read for what its scripts run ({exc.__class__.__name__})"
    if not ran:  # (`npm run t` runs the script `t`; `npm t` runs `test`)
        name = {"t": "test", "tst": "test"}.get(name, name)
    names: tuple[str, ...] = _INSTALL_SCRIPTS if name in _INSTALLS and not ran else (f"pre{name}", name, f"post{name}")
    if name == "start" and not ran and "start" not in scripts and os.path.exists(os.path.join(root, "server.js")):
        return "`npm start` without a start script runs `node server.js`, whose reading is not followed"
    if name == "restart" and not ran and "restart" not in scripts:  # npm restart: stop, then start
        names = ("prerestart", "prestop", "stop", "poststop", "prestart", "start", "poststart", "postrestart")
    seen = set() if seen is None else seen
    for each in names:
        text = scripts.get(each)
        if isinstance(text, str) and each not in seen:  # (each script once: `a` running `npm run a` 200 times)
            seen.add(each)
            for command in script_commands(text, posix=True):  # (npm runs its scripts with `sh`)
                spend(1)
                why = discovers(command) or package_script_discovers(command, root, depth + 1, seen)
                if why is None and make_reads.is_make(real := unwrapped(command)):
                    try:
                        list(make_reads.make_names(real, root, depth + 1))
                    except Unbindable as unbindable:
                        why = str(unbindable)
                if why is not None:
                    return f"its package.json script `{each}`: {why}"
    return None


def _package_scripts(path: str) -> dict[str, Any]:
    """package.json's `scripts`, parsed once per version of the file (a script that runs `npm run a` many times
    read it again each time: n^4, round 27's verification)."""
    st = os.stat(path)
    return _parsed_scripts(path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@lru_cache(maxsize=16)
def _parsed_scripts(path: str, _ino: int, _size: int, _mtime_ns: int, _ctime_ns: int) -> dict[str, Any]:
    data = read_regular(path, 16 * 1024 * 1024 + 1)
    if len(data) > 16 * 1024 * 1024:
        raise ValueError("package.json is over 16 MiB")
    loaded = json.loads(data)
    scripts = loaded.get("scripts") if isinstance(loaded, dict) else None
    return scripts if isinstance(scripts, dict) else {}


def elsewhere(words: list[str], root: Path, *, own: Path | None = None) -> str | None:
    """Why the command runs what another folder's files say (`cd sub && npm run x`, `npm --prefix sub …`, `make -C
    sub`, `env -C sub …`), which the trust did not bind, or None. A `cd` to the workspace (or to `own`, a script's
    folder, however the script names it) is fine."""
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in ("cd", "pushd") and len(words) > 1:
        named = words[-1]
        if own is not None:  # the script's own folder and the workspace by their variables (`cd "$(dirname "$0")"`)
            named = substituted(named, {OWN_FOLDER_VARIABLE: str(own), **dict.fromkeys(PROJECT_VARIABLES, str(root))})
        if "$" in named or "`" in named:  # (`d=sub; cd $d`: bash ran sub/tool, bound to nothing — round 28)
            return f"`{' '.join(words)}` runs what comes next in a folder named when it runs"
        target = os.path.normpath(os.path.join(root, named))
        if target in (os.path.normpath(root), os.path.normpath(own or root)):
            return None
        return f"`{' '.join(words)}` runs what comes next in another folder"
    if program in (*PACKAGE_RUNNERS, *_BUILDING, "make", "gmake", "env", "just") and any(
        _ELSEWHERE.fullmatch(w) for w in words
    ):
        return f"`{program}` is told to work in another folder"
    return None


def executed_program(words: list[str]) -> str | None:
    """The program `npx PROG` (`npm exec PROG`, `yarn dlx PROG`…) runs, which it finds in node_modules/.bin first."""
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    rest = [w for w in words[1:] if not w.startswith("-")]
    if program in _EXECUTORS and rest:
        return rest[0]
    if program in PACKAGE_RUNNERS and len(rest) > 1 and rest[0] in ("exec", "x", "dlx"):
        return rest[1]
    return None


def python_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """The modules a Python script imports, as files beside it (its `sys.path[0]`) or under the workspace: a
    module absent today is bound by its absence, so one that a pull adds (and that would shadow a library's) asks
    again."""
    if found := _PY_DYNAMIC.search(text):
        raise Unbindable(f"{shown} loads code in a way that can't be followed before it runs (`{found.group(0)}`)")
    if why := _literal_runs(text):
        raise Unbindable(f"{shown}: {why}")
    cookie = re.search(r"^[ \t\f]*+#.*?coding[:=][ \t]*+([-\w.]++)", "\n".join(text.split("\n", 2)[:2]), re.M)
    if cookie and cookie.group(1).lower().replace("_", "-") not in ("utf-8", "utf8", "ascii", "latin-1", "iso-8859-1"):
        raise Unbindable(f"{shown} is decoded as {cookie.group(1)}, which a reading of its text can't follow")
    started: list[str] = []
    imports: list[Any] = []
    if why := _python_computes(text, started, imports):
        raise Unbindable(f"{shown}: {why}")
    for node in imports:  # every import, wherever it stands (`import os; import pkg.evil`, `if x: import y`)
        spend(1)
        if node.__class__.__name__ == "Import":
            imported = [("", "", "", ", ".join(alias.name for alias in node.names))]
        else:
            imported = [("." * node.level, node.module or "", ", ".join(a.name for a in node.names), "")]
        for top in (n.split(".")[0] for n in (*(a.name for a in node.names), node.__dict__.get("module") or "")):
            if top in PY_DISCOVERING_IMPORTS:
                raise Unbindable(f"{shown} imports `{top}`, which finds and runs the folder's code by itself")
        yield from _python_import_paths(imported, path, root)
    for command in started:  # `os.system('sh evil.sh')`: what the written-out command runs is read as a shell line
        yield from shell_names(command, path, root, shown, strict=True, posix=True)  # (`/bin/sh -c`)
    if re.search(r"^# /// script\b", text, re.MULTILINE) and _PYPROJECT_ELSEWHERE.search(text):
        raise Unbindable(f"{shown}'s inline metadata builds from files it names, which the trust can't pin")
    for listed, source in _PY_ANY_IMPORT.findall(text):
        # what it imports that finds the folder's code by itself (`pytest.main()`, Django's manage.py importing the
        # settings module and every app it names): the script's binding can't pin what runs (round 27)
        for name in (source, *listed.split(",")):
            top = name.strip().split(".")[0]
            if top in PY_DISCOVERING_IMPORTS:
                raise Unbindable(f"{shown} imports `{top}`, which finds and runs the folder's code by itself")
            if top in _PY_APP_SERVERS and (app := _PY_APP_NAME.search(text)):
                raise Unbindable(f"{shown} has `{top}` load {app.group(0)} by its name")
    if found := re.search(r"\.discover\s*+\(|\bloadTestsFromName", text):  # unittest's discovery
        raise Unbindable(f"{shown} finds tests by itself (`{found.group(0)}`)")
    for name in _PY_CODE_LITERAL.findall(text):
        yield os.path.join(root, name)
        yield os.path.join(path.parent, name)
    # (the imports were read above, from Python's own parse: `_PY_IMPORT`'s line-start reading missed some)


def _python_import_paths(found: list[tuple[str, str, str, str]], path: Path, root: Path) -> Iterator[str]:
    """The files a module named by an import may be, beside the script (and from the workspace)."""
    for dots, base, names, plain in found:
        modules: list[str] = []
        if plain:
            modules = [part.split(" as ")[0].strip() for part in plain.split(",")]
        else:
            imported = [part.split(" as ")[0].strip() for part in names.strip("()").replace("\n", " ").split(",")]
            modules = [base] if base else []
            modules += [f"{base}.{name}" if base else name for name in imported if name and name != "*"]
        folders = [path.parent] if not dots else [path.parents[min(len(dots) - 1, len(path.parents) - 1)]]
        if not dots:
            folders.append(root)
        for module in (m for m in modules if re.fullmatch(r"[\w.]+", m)):
            parts = module.split(".")
            spend(len(parts) + 1)
            for folder in folders:  # the module, and each package above it (their `__init__` runs too)
                yield os.path.join(folder, *parts) + ".py"
                for n in range(1, len(parts) + 1):
                    yield os.path.join(folder, *parts[:n], "__init__.py")


_SUBPROCESS_CALLS = frozenset({"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"})
_OS_CALLS = frozenset(
    {"system", "popen", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe", "spawnl"}
    | {"spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp"}
)
_SPAWNING = {
    "subprocess": _SUBPROCESS_CALLS,
    "sp": _SUBPROCESS_CALLS,
    "os": _OS_CALLS,
    "posix": _OS_CALLS,
    "pty": frozenset({"spawn"}),
    "asyncio": frozenset({"create_subprocess_exec", "create_subprocess_shell"}),
}
_REFLECTIVE = frozenset({"__builtins__", "builtins", "importlib", "sys", "os", "subprocess", "runpy", "pkgutil"})


def _python_computes(text: str, commands: list[str] | None = None, imports: list[Any] | None = None) -> str | None:
    """Why a Python script starts a command, or reaches an import, that is computed when it runs (read with Python's
    own parser: `subprocess.run(["py" + "test"])`, `os.system(open("cmd").read())`, `getattr(__builtins__, …)`:
    round 27's verification), or None. A script Python can't parse can't be read for sure."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "Python can't parse it, so what it runs can't be read"
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    spawning = dict(_SPAWNING)  # and the names the script gives them (`import subprocess as s`, `run as r`)
    renamed: dict[str, str] = {}
    for node in ast.walk(tree):
        for alias in node.names if isinstance(node, (ast.Import, ast.ImportFrom)) else ():
            if isinstance(node, ast.Import) and alias.asname and alias.name in _SPAWNING:
                spawning[alias.asname] = _SPAWNING[alias.name]
            elif (
                isinstance(node, ast.ImportFrom) and alias.asname and alias.name in _SPAWNING.get(node.module or "", ())
            ):
                renamed[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                top = (module or alias.name).split(".")[0]
                if (top in _SPAWNING or top in _REFLECTIVE) and alias.name == "*":
                    return f"`from {module} import *` hides what starts commands"
            if imports is not None:
                imports.append(node)
            continue
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and id(node) not in called
            and node.attr in spawning.get(node.value.id, ())  # `map(os.system, …)`
        ):
            return f"`{node.value.id}.{node.attr}` is passed around, not called: what it starts can't be read"
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = (
            function.attr
            if isinstance(function, ast.Attribute)
            else function.id
            if isinstance(function, ast.Name)
            else ""
        )
        owner = (
            function.value.id if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) else ""
        )
        if name == "getattr" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in _REFLECTIVE:
            return f"`getattr({node.args[0].id}, …)` reaches what it runs by a name"
        imported = not owner and (
            name in renamed
            or any(
                name in calls and re.search(rf"\bfrom\s+{module}\s+import\b[^\n]*\b{name}\b", text)
                for module, calls in _SPAWNING.items()
            )
        )
        if name in spawning.get(owner, ()) or imported:
            first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
            if any(k.arg in ("executable", "preexec_fn", "env") or k.arg is None for k in node.keywords):
                return f"`{name}(…)` is given the program, a hook or the environment it starts with"
            shell = any(
                k.arg == "shell" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                for k in node.keywords
            )
            if shell and isinstance(first, (ast.List, ast.Tuple)) and first.elts:
                first = first.elts[0]  # (with shell=True a list's first item is the shell line)
            if first is None or not _literal_command(first):
                return f"`{owner + '.' if owner else ''}{name}(…)` starts a command computed when it runs"
            if commands is not None:  # the command written out, as a shell line (a list's words quoted)
                import shlex

                if isinstance(first, ast.Constant):
                    commands.append(str(first.value))
                elif isinstance(first, (ast.List, ast.Tuple)):
                    commands.append(shlex.join(str(e.value) for e in first.elts if isinstance(e, ast.Constant)))
    return None


def _literal_command(node: object) -> bool:
    """A command written out: a string, or a list or tuple of strings."""
    import ast

    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return False


def _package_name(root: Path) -> str | None:
    """The workspace package.json's `name` (a script requiring it by that name gets what its `exports` say)."""
    try:
        name = json.loads(read_regular(root / "package.json", 1 << 20)).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def node_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """The files a Node script requires or imports by a relative name, as Node resolves them."""
    if _JS_DYNAMIC.search(text):
        raise Unbindable(f"{shown} requires or imports a module named when it runs")
    if why := _literal_runs(text):
        raise Unbindable(f"{shown}: {why}")
    if found := _JS_UNREAD.search(text):
        raise Unbindable(f"{shown} loads code in a way that can't be followed before it runs (`{found.group(0)}`)")
    own = _package_name(root)
    for name in _JS_SPECIFIER.findall(text):
        spend(1)
        folder = os.path.join(path.parent, name)
        bare = not name.startswith((".", "/", "node:"))
        top = "/".join(name.split("/")[: 2 if name.startswith("@") else 1])
        if (
            re.search(r"[?#%]", name)
            or (os.path.isdir(folder) and os.path.exists(os.path.join(folder, "package.json")))
            or (bare and own is not None and top == own)
        ):
            raise Unbindable(f"{shown} requires `{name}`, which Node resolves through what a folder's files say")
    if found := _JS_SPELLED.search(text):
        raise Unbindable(f"{shown} spells text in escapes or codes (`{found.group(0)}`): what it names can't be read")
    if found := _JS_STARTS.search(text):
        raise Unbindable(f"{shown} can start processes or run code (`{found.group(0)}`): what it starts can't be read")
    for name in _JS_LITERAL.findall(text):
        spend(8)  # (the names a relative specifier may be)
        base = os.path.join(path.parent, name)
        yield base
        for suffix in (*NODE_SUFFIXES, ".json"):
            yield base + suffix
            yield os.path.join(base, "index" + suffix)


def _code_lines(text: str) -> str:
    """A Ruby or Perl script without its comment lines (`# require the key first` is not a `require`) and,
    for Perl, without its documentation (POD) and what follows `__END__`/`__DATA__`."""
    out: list[str] = []
    pod = False
    for line in text.splitlines():
        if line.startswith(("__END__", "__DATA__")):
            break
        if line.startswith("=") and line[1:2].isalpha():
            pod = not line.startswith("=cut")
            continue
        if not pod and not line.lstrip().startswith("#"):
            out.append(line)
    return "\n".join(out)


def _to_last_semicolon(code: str) -> str:
    """`code` up to its last `;`: `use lib …;` and `use parent …;` end at one, so nothing after it is theirs. Without
    what follows, each scan from a `use` that reaches past the line ends in a match, which consumes what it scanned
    (a run of `use lib a` lines with no `;` made them O(n^2): attack round 22)."""
    return code[: code.rfind(";") + 1]


def _code_words(text: str, path: Path, root: Path) -> Iterator[str]:
    for word in [*_CODE_WORD.findall(text), *_AFTER_VARIABLE.findall(text)]:
        yield os.path.join(root, word)
        yield os.path.join(path.parent, word)


def ruby_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """What a Ruby script loads by a literal name: `require_relative` beside it, `require`/`load` of a path from
    the workspace (where a hook starts) or beside it, a library's name as `lib/` would hold it (`ruby -Ilib`), and
    the files of code its strings name."""
    code = _code_lines(text)
    if found := _RB_DYNAMIC.search(code):
        raise Unbindable(f"{shown} loads code in a way that can't be followed before it runs (`{found.group(0)}`)")
    started: list[str] = []
    if why := _starts_unread(code, _RB_STARTS, started):
        raise Unbindable(f"{shown}: {why}")
    for command in started:  # `system("sh scripts/a.sh")`: read as a shell line, its names bound
        yield from shell_names(command, path, root, shown, strict=True, posix=True)
    literal = {m.start() for m in _RB_LOAD.finditer(code)}
    if any(m.start() not in literal for m in _RB_ANY_LOAD.finditer(code)):
        raise Unbindable(f"{shown} requires or loads a file named when it runs")
    for m in _RB_LOAD.finditer(code):
        kind, name = (m.group(1), m.group(3)) if m.group(1) else ("require", m.group(5))
        names = [name] if name.endswith((".rb", ".so")) else [name + ".rb", name + ".so", name]
        for each in names:
            if kind == "require_relative":
                yield os.path.join(path.parent, each)
            elif each.startswith(("./", "../", "/")) or kind == "load":
                yield os.path.join(root, each)
                yield os.path.join(path.parent, each)
            else:
                yield os.path.join(root, "lib", each)
    yield from _code_words(code, path, root)


def perl_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """What a Perl script loads: `require`/`do` of a file, a module it uses as a file under each `use lib`
    folder (FindBin's `$Bin` is the script's own), `lib/`, and the script's folder, and the files of code its
    strings name."""
    code = _code_lines(text)
    if found := _PL_DYNAMIC.search(code):
        raise Unbindable(f"{shown} loads code in a way that can't be followed before it runs (`{found.group(0)}`)")
    started: list[str] = []
    if found := _PL_UNREAD.search(text):
        raise Unbindable(f"{shown} loads code in a way that can't be followed before it runs (`{found.group(0)}`)")
    if why := _starts_unread(code, _PL_STARTS, started):
        raise Unbindable(f"{shown}: {why}")
    for command in started:  # `system("sh scripts/a.sh")`: read as a shell line, its names bound
        yield from shell_names(command, path, root, shown, strict=True, posix=True)
    folders = [path.parent, Path(root) / "lib", Path(root)]
    for spec in _PL_LIB.findall(_to_last_semicolon(code)):
        spec = _PL_FINDBIN.sub(lambda _: str(path.parent), spec)
        if "$" in spec or "@" in spec:
            raise Unbindable(f"{shown} adds a library folder named when it runs (`use lib {spec.strip()}`)")
        for literal in re.findall(r"""['"]([^'"]+)['"]|qw\(([^)]*)\)""", spec):
            for folder in (literal[0], *literal[1].split()):
                if folder:
                    folders.append(Path(root) / folder if not os.path.isabs(folder) else Path(folder))
    for _quote, name in _PL_FILE.findall(code):
        yield os.path.join(root, name)
        yield os.path.join(path.parent, name)
    modules = _PL_MODULE.findall(code)
    for names in _PL_PARENT.findall(_to_last_semicolon(code)):  # `use parent 'My::Base'` loads it
        modules += re.findall(r"[A-Za-z_]\w*(?:::\w+)+|(?<=['\s(])[A-Z]\w*(?=['\s),;])", names)
    for module in modules:
        if module in ("lib", "strict", "warnings", "utf8", "constant", "parent", "base", "vars", "feature"):
            continue
        relative = module.replace("::", "/") + ".pm"
        for folder in folders:
            yield os.path.join(folder, relative)
    yield from _code_words(code, path, root)


_PYPROJECT_ELSEWHERE = re.compile(
    r"^[^\S\n]*+(?:cache-keys|backend-path|members)[^\S\n]*+=|^[^\S\n]*+\[tool\.uv\.workspace\]"
    r"|(?<![\w-])path[^\S\n]*+=|(?<![\w-])editable[^\S\n]*+=[^\S\n]*+true|file://",
    re.MULTILINE,
)


_NPMRC_RUNS = re.compile(
    r"^\s*+[\"']?(?:script[-_]shell|node[-_]options|onload[-_]script|init[-_]module|shell|globalconfig|userconfig"
    r"|yarnPath|plugins)\b",
    re.MULTILINE,
)


def npmrc_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """An .npmrc or .yarnrc: unbindable when it names a shell or code the package manager runs (`script-shell`,
    `node-options`, `yarnPath`…): what they name is not followed."""
    if found := _NPMRC_RUNS.search(text):
        raise Unbindable(f"{shown} sets `{found.group(0).strip()}`, which makes the package manager run code it names")
    return iter(())


def python_version_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """`.python-version`: a version is uv's to find; a path is an interpreter the folder chooses."""
    if "/" in text or "\\" in text:
        raise Unbindable(f"{shown} names an interpreter by its path")
    return iter(())


def pyproject_names(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    """A pyproject.toml a package manager builds from (bound itself): unbindable when what it builds, or when it
    builds again, is named in other files (`cache-keys`, an in-tree `backend-path`, a path or workspace source)."""
    if found := _PYPROJECT_ELSEWHERE.search(text):
        raise Unbindable(f"{shown} builds from files it names (`{found.group(0).strip()}`), which the trust can't pin")
    return iter(())


def _mixed(text: str, path: Path, root: Path, shown: str) -> Iterator[str]:
    raise Unbindable(f"{shown}'s name and its `#!` line are two languages: run by name or run itself, it reads apart")
    yield ""  # (a generator, as the other readers)


_READERS = {
    "mixed": _mixed,
    "shell": shell_names,
    "make": make_names,
    "package": package_names,
    "python": python_names,
    "node": node_names,
    "ruby": ruby_names,
    "perl": perl_names,
    "pyproject": pyproject_names,
    "npmrc": npmrc_names,
    "python-version": python_version_names,
}


def _conventional(program: str) -> Iterator[str]:
    yield from CONVENTIONAL.get(program.rsplit("/", 1)[-1], ())


def script_commands(text: str, *, strict: bool = True, posix: bool = False) -> list[list[str]]:
    return script_read(text, strict=strict, posix=posix).commands


def script_read(text: str, *, strict: bool = True, posix: bool = False) -> Read:
    """A script's simple commands as words (script_lexer.py: split where bash splits them, across lines; the
    commands inside substitutions and expanding here-documents included). `strict`: what can't be placed as bash
    places it makes the text unbindable; otherwise (names a makefile's or package.json's text mentions) such a text
    is read line by line, a line that can't be read as its words split at blanks."""
    try:
        return _lexed(text, posix)
    except ScriptSyntax as why:
        if strict:
            raise Unbindable(f"its shell code {why}, which a reading can't place as bash does") from why
    commands: list[list[str]] = []
    for line in text.split("\n"):
        try:
            commands += _lexed(line, posix).commands
        except ScriptSyntax:
            commands.append(line.split())
    return Read(commands)


@lru_cache(maxsize=512)
def _lexed(text: str, posix: bool = False) -> Read:
    """(Read once per text: a package script reached from 2,000 `npm run a` lines was lexed 2,000 times.)"""
    return lexed_read(text, posix=posix)


def substituted(value: str, variables: dict[str, str]) -> str:
    for name, real in variables.items():
        value = value.replace(f"${{{name}}}", real).replace(f"${name}", real)
    return value
