"""Attack round 20: the sandbox's watcher (the bridge itself, unsandboxed) followed a symbolic link a sandboxed command
made on the way to a protected path that did not exist yet (`mise/config.toml`, `.config/mise…`), and moved what the
link led to — files anywhere the bridge's user can write, `~/.cargo/config.toml`, `~/.config/mise/` — into the
quarantine. A link on the way is what appeared: it is set aside itself, and nothing beyond it is ever touched.
Real bwrap, real commands; outcomes checked on the host's file system."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.execution.test_sandbox import AVAILABLE, Project, output

pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")


def _victims(outside: Path) -> dict[Path, str]:
    """Files outside the workspace named as the protected paths beyond a link would be."""
    files = {
        outside / "victim" / "config.toml": "the user's cargo config\n",
        outside / "cfg" / "mise.toml": "the user's mise.toml\n",
        outside / "cfg" / "mise" / "config.toml": "the user's global mise config\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def _untouched(files: dict[Path, str]) -> None:
    for path, text in files.items():
        assert path.read_text() == text, f"{path} was moved or changed"


def _quarantined(project: Project) -> list[Path]:
    return sorted(p for p in (project.root / "data").rglob("*") if "quarantine" in p.parts)


@pytest.mark.parametrize(
    "command",
    [
        "ln -s {out}/victim mise; ln -s {out}/cfg .config",  # links made where nothing was
        "mkdir .config && rmdir .config && ln -s {out}/cfg .config",  # a folder first, then a link in its place
        "mkdir -p a && ln -s {out}/cfg a/b && mv a/b .config",  # a link moved in
    ],
)
async def test_a_link_on_the_way_to_a_protected_path_is_set_aside_and_never_followed(
    project: Project, command: str
) -> None:
    victims = _victims(project.outside)
    result = await project.run(command.format(out=project.outside) + "; echo ran > control.txt; exit 0")
    assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
    _untouched(victims)
    for made in ("mise", ".config"):
        path = project.ws / made
        assert not os.path.islink(path), f"{made}: a link on the way to a protected path stays: {output(result)}"
    kept = _quarantined(project)
    assert all(not p.is_file() or p.is_symlink() for p in kept), f"only links are set aside: {kept}"
    assert "symbolic link on the way to" in output(result), output(result)


async def test_the_users_own_link_on_the_way_is_left_alone(project: Project) -> None:
    """A link that was there before the command is the user's: nothing beyond it is the workspace's to move."""
    victims = _victims(project.outside)
    (project.ws / ".config").symlink_to(project.outside / "cfg")
    result = await project.run("echo ran > control.txt; exit 0")
    assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
    _untouched(victims)
    assert (project.ws / ".config").is_symlink()
    assert "set aside" not in output(result), output(result)


async def test_a_protected_path_made_inside_a_new_real_folder_is_still_set_aside(project: Project) -> None:
    """The check that follows no link still sees what a command makes for real."""
    result = await project.run("mkdir -p .config && echo '[env]' > .config/mise.toml; exit 0")
    assert not (project.ws / ".config" / "mise.toml").exists(), output(result)
    assert "[sandbox] The sandbox set aside" in output(result)


async def test_a_protected_path_made_through_the_users_own_link_is_still_set_aside(project: Project) -> None:
    """The user's own link on the way (there before the command) is followed as before: what a command makes
    beyond it, at a protected name, is set aside where it really is."""
    (project.ws / "dotfiles").mkdir()
    (project.ws / ".config").symlink_to("dotfiles")
    result = await project.run("echo '[env]' > .config/mise.toml; echo ran > control.txt; exit 0")
    assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
    assert not (project.ws / "dotfiles" / "mise.toml").exists(), output(result)
    assert (project.ws / ".config").is_symlink(), "the user's link stays"
    assert "[sandbox] The sandbox set aside" in output(result)
    assert [p.read_text() for p in _quarantined(project) if p.name == "mise.toml"] == ["[env]\n"]


async def test_a_link_a_command_replaced_in_a_chain_of_the_users_links_is_not_followed(project: Project) -> None:
    """Attack round 21: `.config -> cfglink -> dotfiles`, both links the user's; the command points the middle one
    outside. `realpath` followed it, and the bridge moved the outside `mise.toml` into the quarantine. The way is
    now walked one link at a time: the replaced link is new, and it is what is set aside."""
    victims = _victims(project.outside)
    (project.ws / "dotfiles").mkdir()
    (project.ws / "cfglink").symlink_to("dotfiles")
    (project.ws / ".config").symlink_to("cfglink")
    result = await project.run(f"ln -sfn {project.outside}/cfg cfglink; echo ran > control.txt; exit 0")
    assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
    _untouched(victims)
    assert not os.path.lexists(project.ws / "cfglink"), f"the replaced link is set aside: {output(result)}"
    assert (project.ws / ".config").is_symlink(), "the user's first link stays"


async def test_a_protected_path_made_through_a_chain_of_the_users_links_is_set_aside(project: Project) -> None:
    (project.ws / "dotfiles").mkdir()
    (project.ws / "cfglink").symlink_to("dotfiles")
    (project.ws / ".config").symlink_to("cfglink")
    result = await project.run("echo '[env]' > .config/mise.toml; exit 0")
    assert not (project.ws / "dotfiles" / "mise.toml").exists(), output(result)
    assert [p.read_text() for p in _quarantined(project) if p.name == "mise.toml"] == ["[env]\n"]


async def test_a_file_an_edit_deny_pattern_forbids_made_through_the_users_link_is_set_aside(project: Project) -> None:
    """The check after a command for what an `Edit(...)` pattern forbids sets it aside where it really is (the move
    follows no link; the user's link on the way is resolved first)."""
    (project.ws / "keys").mkdir()
    (project.ws / "linked").symlink_to("keys")
    project.settings({"permissions": {"deny": ["Edit(./linked/*.pem)"]}})
    result = await project.run("echo secret > linked/new.pem; echo ran > control.txt; exit 0")
    assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
    assert not (project.ws / "keys" / "new.pem").exists(), output(result)
    assert "[sandbox] The sandbox set aside" in output(result), output(result)
