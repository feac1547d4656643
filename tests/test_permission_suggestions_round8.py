"""An always-option saves exactly the rule it names, and that rule allows no more than the question was about
(attack round 8).

- A file at the project's root offered `Edit(notes.txt)`: a slash-free path pattern matches at any depth
  (gitignore), so once saved, a write to `deep/x/notes.txt` ran unasked. The rule offered now names that one file.
- `sed`, `tar`, `zip`, `scp`, `vim` and their kind offered `Bash(sed *)`: once saved, `sed -n '1e touch P' f`
  ran anything. A program whose arguments can make it run a command or code of their choosing is offered its exact
  command, as `flock`, `watch`, `awk` and `xargs` were after round 6.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.types import Decision, PermissionRequest, RuleSuggestion
from bridge.server import questions
from tests.attacks.workspace import Workspace, engine, run_bash
from tests.permission_calls import decide
from tests.scripted_run import scripted_run


def write(judge: PermissionEngine, path: Path) -> Decision:
    return decide(judge, "Write", {"file_path": str(path), "content": "x\n"})


def always(decision: Decision) -> RuleSuggestion:
    [offered] = [s for s in decision.suggestions if s.behavior == "allow"]
    return offered


def choose_always(judge: PermissionEngine, decision: Decision) -> tuple[str, ...]:
    """Choose the question's always-option as an editor would (by its id) and save what the answer carries;
    the rules its label named."""
    request = PermissionRequest(
        "toolu_1", "Write", "t", "edit", {}, [], [], decision.reason, decision.suggestions, shown=decision.shown
    )
    [option] = [o for o in questions.permission_params("s1", request)["options"] if o["kind"] == "allow_always"]
    answer = questions.permission_answer({"outcome": {"outcome": "selected", "optionId": option["optionId"]}}, request)
    assert answer.suggestion is not None
    rules = ", ".join(answer.suggestion.rules)
    assert option["name"] == f"Always allow {rules} (saved to settings.local.json)"
    judge.save_rule(answer.suggestion)
    return answer.suggestion.rules


def saved_rules(found: Workspace) -> list[str]:
    data = json.loads((found.ws / ".agent-bridge" / "settings.local.json").read_text())
    return list(data["permissions"]["allow"])


# --- A: a path rule names the one place it was asked about ----------------------------------------------------


def test_the_rule_offered_for_a_file_at_the_root_allows_that_file_and_no_namesake_below(found: Workspace) -> None:
    judge = engine(found)
    rules = choose_always(judge, write(judge, found.ws / "notes.txt"))
    assert saved_rules(found) == list(rules), "the label shows the rule text as saved"
    assert write(judge, found.ws / "notes.txt").behavior == "allow"
    for namesake in ("deep/x/notes.txt", "a/notes.txt", "src/notes.txt"):
        assert write(judge, found.ws / namesake).behavior == "ask", (namesake, rules)


def test_the_rule_offered_for_a_nested_file_is_its_folder_from_the_root(found: Workspace) -> None:
    """`a/notes.txt` is offered its folder (`Edit(a/**)`): a pattern with a slash is anchored, so the same names
    elsewhere (`b/a/notes.txt`) and the root's namesake still ask."""
    judge = engine(found)
    rules = choose_always(judge, write(judge, found.ws / "a" / "notes.txt"))
    assert rules == ("Edit(a/**)",)
    assert write(judge, found.ws / "a" / "notes.txt").behavior == "allow"
    for namesake in ("notes.txt", "b/a/notes.txt", "deep/x/notes.txt", "deep/a/notes.txt"):
        assert write(judge, found.ws / namesake).behavior == "ask", (namesake, rules)


@pytest.mark.parametrize(
    ("name", "lookalikes"),
    [
        ("[ab]*.txt", ["a.txt", "b1.txt", "deep/[ab]*.txt"]),
        ("n?tes.txt", ["notes.txt", "deep/n?tes.txt"]),
        ("#notes", ["deep/#notes"]),
        ("!notes", ["deep/!notes"]),
        ("a(b).txt", ["deep/a(b).txt"]),
        ("back\\slash.txt", ["deep/back\\slash.txt"]),
        ("trailing ", ["trailing", "deep/trailing "]),  # gitignore drops an unescaped trailing space
    ],
)
def test_a_name_with_pattern_characters_is_saved_as_that_name(
    found: Workspace, name: str, lookalikes: list[str]
) -> None:
    judge = engine(found)
    rules = choose_always(judge, write(judge, found.ws / name))
    assert saved_rules(found) == list(rules), "the label shows the rule text as saved"
    assert write(judge, found.ws / name).behavior == "allow", rules
    for other in lookalikes:
        assert write(judge, found.ws / other).behavior == "ask", (other, rules)


def test_a_folder_with_pattern_characters_is_saved_as_that_folder(found: Workspace) -> None:
    judge = engine(found)
    rules = choose_always(judge, write(judge, found.ws / "d*" / "x.txt"))
    assert write(judge, found.ws / "d*" / "y.txt").behavior == "allow", rules
    assert write(judge, found.ws / "dd" / "x.txt").behavior == "ask", rules


def test_the_rule_offered_for_a_redirection_to_a_root_file_allows_only_that_file(found: Workspace) -> None:
    judge = engine(found, allow=("Bash(echo *)",))
    asked = decide(judge, "Bash", {"command": "echo y > notes.txt"})
    judge.save_rule(always(asked))
    assert decide(judge, "Bash", {"command": "echo y > notes.txt"}).behavior == "allow"
    assert decide(judge, "Bash", {"command": "echo y > deep/x/notes.txt"}).behavior == "ask"


# --- B: a program that runs what its arguments say is saved as the exact command -----------------------------

# a harmless use of each program that asks (so a question offers an always-option); the program's name first
HARMLESS = [
    # stream editors and text tools with a command language or a helper program
    "sed -i s/a/b/ a.txt",
    "gsed -i s/a/b/ a.txt",
    "sort -o b.txt a.txt",
    "rg -z alpha",
    "sdiff a.txt b.txt",
    "diff3 a.txt b.txt a.txt",
    "m4 a.txt",
    "dc a.txt",
    "pandoc a.txt -o a.html",
    "fzf",
    # archivers
    "tar -cf x.tar a.txt",
    "gtar -cf x.tar a.txt",
    "bsdtar -cf x.tar a.txt",
    "zip z.zip a.txt",
    "unzip z.zip",
    "cpio -o",
    # remote shells and copies over them
    "ssh host ls",
    "scp a.txt host:b",
    "sftp host",
    "rsync -a src/ dst/",
    "sshfs host: mnt",
    "mosh host",
    "autossh host",
    # editors and pagers
    "vi a.txt",
    "vim a.txt",
    "nvim a.txt",
    "view a.txt",
    "vimdiff a.txt b.txt",
    "gvim a.txt",
    "ex a.txt",
    "ed a.txt",
    "emacs a.txt",
    "emacsclient a.txt",
    "nano a.txt",
    "less a.txt",
    "more a.txt",
    "most a.txt",
    "man ls",
    # network and crypto tools with a hook, a script or a library option
    "tcpdump -i lo",
    "tshark -i lo",
    "nmap localhost",
    "nc host 80",
    "ncat host 80",
    "netcat host 80",
    "openssl version",
    "gpg --list-keys",
    "gpg2 --list-keys",
    "wget http://x",
    "ssh-keygen -l -f x",
    # build and package tools that take code or hooks on the command line, runners of any package
    "make",
    "make test",
    "gmake test",
    "dpkg -l",
    "apt install x",
    "apt-get install x",
    "aptitude install x",
    "npx x",
    "pnpx x",
    "bunx x",
    "uvx x",
    "pipx run x",
    "bundle exec rspec",
    # runners of a command they are given
    "tmux new -d ls",
    "screen -dm ls",
    "hyperfine ls",
    "entr ls",
    "watchexec ls",
    "nodemon x.js",
    "rlwrap ls",
    "fd -x ls",
    "fdfind -x ls",
    "crontab x",
    "xdg-open x",
    "open x",
    "dbus-run-session ls",
    "ssh-agent ls",
    "ansible localhost -m ping",
    # interpreters and consoles the interpreter rule does not know
    "sqlite3 x.db",
    "psql -l",
    "mysql -e x",
    "java -jar x.jar",
    "jshell",
    "julia x.jl",
    "R -f x.R",
    "tclsh x.tcl",
    "wish x.tcl",
    "ghci x.hs",
    "runghc x.hs",
    "osascript x.scpt",
    "pwsh x.ps1",
    "magick a.png b.png",
    "convert a.png b.png",
    # subcommands that run a command given in their options
    "git rebase main",
    "git bisect run make",
    "git submodule update",
    "git fetch origin",
    "git pull",
    "git push",
    "git clone x y",
    "git ls-remote x",
    "git archive HEAD",
    "git grep -O less alpha",
    "git difftool HEAD",
    "git mergetool",
    "docker run x",
    "docker exec x ls",
    "podman run x",
    "kubectl exec x -- ls",
    "kubectl run x --image=y",
]


@pytest.mark.parametrize("command", HARMLESS)
def test_a_program_that_runs_what_its_arguments_say_is_offered_its_exact_command(
    found: Workspace, command: str
) -> None:
    asked = decide(engine(found), "Bash", {"command": command})
    assert asked.behavior == "ask", asked.reason
    offered = [s.rules for s in asked.suggestions if s.behavior == "allow"]
    assert offered in ([], [(f"Bash({command})",)]), offered
    program = shlex.split(command)[0]
    assert not any(r.startswith(f"Bash({program} ") and r.endswith(" *)") for rules in offered for r in rules)


@pytest.mark.parametrize(
    "command",
    ["git -C src commit -m x", "git --no-pager commit -m x", "npm -w pkg test", "docker --context x run y"],
)
def test_a_tool_whose_subcommand_is_not_kept_is_offered_its_exact_command(found: Workspace, command: str) -> None:
    """`git -C src commit` offered `Bash(git *)`: the option where the subcommand is looked for ended the prefix,
    and the tool's bare name allows every subcommand (`git rebase -x …`, `npm exec …`)."""
    asked = decide(engine(found), "Bash", {"command": command})
    assert [s.rules for s in asked.suggestions if s.behavior == "allow"] == [(f"Bash({command})",)]


def test_the_prefix_rules_of_ordinary_commands_stay(found: Workspace) -> None:
    """The control: what is not in the class keeps its useful prefix."""
    for command, rule in [
        ("npm test", "Bash(npm test *)"),
        ("npm run build", "Bash(npm run build *)"),
        ("git commit -m x", "Bash(git commit *)"),
        ("mkdir out", "Bash(mkdir *)"),
        ("curl http://x", "Bash(curl *)"),
    ]:
        asked = decide(engine(found), "Bash", {"command": command})
        assert [s.rules for s in asked.suggestions if s.behavior == "allow"] == [(rule,)], command


# the attacks of round 8: the harmless form asked about, and what ran once its always-option was saved
ATTACKS = [
    ("sed -i s/a/b/ a.txt", "sed -n '1e touch pwned' a.txt"),
    ("tar -cf x.tar a.txt", "tar -cf x.tar a.txt --checkpoint=1 --checkpoint-action=exec='touch pwned'"),
    ("zip z.zip a.txt", "zip -T -TT 'touch pwned #' z.zip a.txt"),
    ("scp a.txt host:b", "scp -o ProxyCommand='touch pwned' a:b ."),
    ("vim a.txt", "vim -es -c '!touch pwned' -c q"),
]


@pytest.mark.parametrize(("harmless", "attack"), ATTACKS)
def test_after_the_always_option_the_attack_still_asks(found: Workspace, harmless: str, attack: str) -> None:
    judge = engine(found)
    offered = always(decide(judge, "Bash", {"command": harmless}))
    # what the rule allows, as a rule of the session (saved, a rule naming a workspace file is bound to it as trusted)
    as_given = engine(found, allow=offered.rules)
    assert decide(as_given, "Bash", {"command": harmless}).behavior == "allow", "it allows what was asked"
    assert decide(as_given, "Bash", {"command": attack}).behavior == "ask", offered.rules
    judge.save_rule(offered)
    assert decide(judge, "Bash", {"command": attack}).behavior == "ask", saved_rules(found)
    program = harmless.split()[0]
    prefix = engine(found, allow=(f"Bash({program} *)",))
    assert decide(prefix, "Bash", {"command": attack}).behavior == "allow", "the control: the old rule let it run"


@pytest.mark.parametrize(
    ("harmless", "attack", "made"),
    [
        (*ATTACKS[0], lambda ws: not (ws / "a.txt").read_text().startswith("alpha")),
        (*ATTACKS[1], lambda ws: (ws / "x.tar").exists()),
    ],
)
async def test_a_real_run_with_the_offered_rule_runs_the_harmless_form_and_not_the_attack(
    found: Workspace, tmp_path: Path, harmless: str, attack: str, made: Callable[[Path], bool]
) -> None:
    """End to end: `agent-bridge run --offline` given the rule the question offered runs the harmless form and not
    the attack; given the old prefix rule, the attack leaves its marker (and does without the bridge)."""
    offered = always(decide(engine(found), "Bash", {"command": harmless})).rules
    env = {"HOME": str(found.home), "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg")}
    allow = [flag for rule in offered for flag in ("--allow", rule)]
    old = ["--allow", f"Bash({harmless.split()[0]} *)"]
    for n, (rules, expect) in enumerate([(allow, False), (old, True)]):
        env["AGENT_BRIDGE_DATA_DIR"] = str(tmp_path / f"data{n}")
        calls = [("Bash", {"command": harmless}), ("Bash", {"command": attack})]
        scripted_run(found.ws, calls, *rules, env=env, scenario=tmp_path / f"{n}.json")
        assert made(found.ws), ("the harmless form ran", rules)
        assert (found.ws / "pwned").exists() is expect, (rules, attack)
        (found.ws / "pwned").unlink(missing_ok=True)
    await run_bash(found, attack)
    assert (found.ws / "pwned").exists(), "the control: the attack is real"


@pytest.mark.parametrize(
    ("command", "attack"),
    [
        ("rm -f 'x*.tmp'", "rm -f x/../important.tmp"),
        ("sed -i 's/a*/b/' f.txt", "sed -i s/a/b/w/tmp/x/b/ f.txt"),
    ],
)
def test_a_command_with_a_star_in_a_word_is_offered_no_always_option(
    found: Workspace, command: str, attack: str
) -> None:
    """The rule language reads every `*` as a wildcard and has no escape: the exact rule for `rm -f 'x*.tmp'` would,
    saved, allow `rm -f x/../important.tmp`. No always-option is offered for such a command; the control: the rule
    it would have saved does allow the other command."""
    decision = decide(engine(found, "default"), "Bash", {"command": command})
    assert decision.behavior == "ask"
    assert not [s for s in decision.suggestions if s.behavior == "allow"], decision.suggestions
    literal = f"Bash({command})"
    assert decide(engine(found, "default", allow=(literal,)), "Bash", {"command": attack}).behavior == "allow"
