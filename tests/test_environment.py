"""What the bridge hands to commands, hooks and servers (bridge/environment.py): never its own credentials, no
secret-looking variable unless `passEnv` names it."""

from __future__ import annotations

from bridge.environment import handed_out, register_secret, withheld


def test_the_bridges_credentials_never_leave_under_any_name() -> None:
    register_secret("sk-ant-registered-0123456789")
    base = {
        "ANTHROPIC_API_KEY": "sk-ant-x",
        "ANTHROPIC_AUTH_TOKEN": "t",
        "CLAUDE_CODE_OAUTH_TOKEN": "o",
        "MY_COPY": "prefix sk-ant-registered-0123456789",
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
    }
    assert handed_out(base, pass_env=["*"]) == {"PATH": "/usr/bin", "LANG": "C.UTF-8"}


def test_secret_looking_variables_pass_only_when_a_setting_names_them() -> None:
    base = {
        "GITHUB_TOKEN": "ghp_x",
        "NPM_TOKEN": "n",
        "AWS_SECRET_ACCESS_KEY": "a",
        "DB_PASSWORD": "p",
        "DATABASE": "postgres://me:hunter2@db/app",
        "PWD": "/w",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "HOME": "/h",
    }
    assert handed_out(base) == {"PWD": "/w", "SSH_AUTH_SOCK": "/tmp/agent", "HOME": "/h"}
    assert handed_out(base, pass_env=["GITHUB_TOKEN", "NPM_*"]).keys() == {
        "GITHUB_TOKEN",
        "NPM_TOKEN",
        "PWD",
        "SSH_AUTH_SOCK",
        "HOME",
    }
    assert withheld(base) == ["AWS_SECRET_ACCESS_KEY", "DATABASE", "DB_PASSWORD", "GITHUB_TOKEN", "NPM_TOKEN"]


def test_path_is_handed_out_without_its_empty_and_relative_entries() -> None:
    """Each would name a directory of the folder the command runs in (`:` first: the folder itself)."""
    base = {"PATH": ":/usr/local/bin:.:node_modules/.bin:/usr/bin::/work/proj/bin:", "LANG": "C"}
    assert handed_out(base) == {"PATH": "/usr/local/bin:/usr/bin:/work/proj/bin", "LANG": "C"}
