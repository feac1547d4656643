"""Which variable names look secret (`bridge.secrets.looks_secret`): the one definition the permission check
and the environment filter share."""

from __future__ import annotations

import pytest

from bridge.secrets import looks_secret

SECRET = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "NPM_TOKEN",
    "npm_config__authToken",
    "NPM_CONFIG__AUTH",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AZURE_CLIENT_SECRET",
    "DB_PASSWORD",
    "PGPASSWORD",
    "MYSQL_PWD",
    "SMTP_PASS",
    "LDAP_PASSWD",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "MY_CREDENTIALS",
    "STRIPE_SECRET",
    "client_secret",
    "DATABASE_URL",
    "SENTRY_DSN",
    "JWT_SIGNING_KEY",
    "SSH_PRIVATE_KEY",
    "VAULT_TOKEN",
    "HF_TOKEN",
    "SLACK_WEBHOOK_URL",
    "KEY",
    "API_KEY",
    "TF_TOKEN_app_terraform_io",
    "GPG_PASSPHRASE",
    "SESSION_COOKIE",
    "HTTP_AUTHORIZATION",
    "REDIS_URL",
    "TWINE_PASSWORD",
]
PLAIN = [
    "PATH",
    "HOME",
    "PWD",
    "OLDPWD",
    "LANG",
    "TERM",
    "SHELL",
    "USER",
    "EDITOR",
    "SSH_AUTH_SOCK",
    "TOKENIZERS_PARALLELISM",
    "KEYMAP",
    "MONKEY_PATCH",
    "PYTHONPATH",
    "CI",
    "HF_HOME",
    "NODE_ENV",
    "XDG_SESSION_ID",
    "ANTHROPIC_BASE_URL",
    "AGENT_BRIDGE_MODEL",
    "COLUMNS",
    "PASSAGE",
    "PINNED",
]


@pytest.mark.parametrize("name", SECRET)
def test_a_secret_looking_name(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", PLAIN)
def test_an_ordinary_name(name: str) -> None:
    assert not looks_secret(name)
