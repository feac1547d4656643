"""Which environment variable names look like they hold a secret: one definition, asked by the permission
check (reading such a variable is not read-only: `echo $ANTHROPIC_API_KEY` asks) and by the environment
filter (such variables are not handed to commands unless a setting names them).

The test is on the name only (values are never inspected: a value can't be told from random text). It is
deliberately broad — a false positive costs a question or a variable a setting must name; a false negative
hands a credential to the model. Case does not matter (`npm_config__authToken` is `NPM_CONFIG__AUTHTOKEN`).
"""

from __future__ import annotations

import re

# Any of these anywhere in the name (TOKEN but not TOKENIZERS_PARALLELISM and kin).
_ANYWHERE = re.compile(
    r"SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE_?KEY|ACCESS_?KEY|APIKEY|TOKEN(?!IZ)|"
    r"COOKIE|AUTHORIZATION|SIGNING_?KEY|CONNECTION_?STRING|DATABASE_URL|WEBHOOK_URL"
)
# A whole `_`-separated part of the name: `API_KEY`, `KEY_ID`, `SMTP_PASS`, `MYSQL_PWD`, `NPM_CONFIG__AUTH`.
_PART = re.compile(r"(?:^|_)(?:KEYS?|PASS|PWD|AUTH|DSN|OTP|PIN|SALT|HMAC|JWT|SAS|BEARER|LICENSE)(?:$|_)")
# Whole families: cloud and service credentials live under these prefixes (their non-secret members, like
# AWS_REGION, are a fair price for not missing AWS_SECRET_ACCESS_KEY's next spelling).
_PREFIXES = (
    "AWS_",
    "AZURE_",
    "ARM_CLIENT",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GCP_",
    "GCLOUD_",
    "DIGITALOCEAN_",
    "HEROKU_API",
    "VAULT_",
    "OP_SERVICE_ACCOUNT",
    "CLOUDFLARE_API",
    "NETLIFY_AUTH",
    "VERCEL_",
    "TF_TOKEN_",
    "TWILIO_",
    "SENDGRID_",
    "STRIPE_",
    "SLACK_",
    "DOCKER_AUTH",
    "KAGGLE_",
    "HUGGING",
    "OPENAI_",
    "ANTHROPIC_API",
    "ANTHROPIC_AUTH",
    "CLAUDE_CODE_OAUTH",
    "GEMINI_API",
    "MISTRAL_API",
    "COHERE_API",
    "GROQ_API",
    "REPLICATE_API",
    "PGPASS",
    "MYSQL_PWD",
    "REDIS_URL",
    "MONGODB_URI",
    "MONGO_URL",
    "NETRC",
    "GH_",
    "GITHUB_TOKEN",
    "GITLAB_",
    "NPM_TOKEN",
    "NODE_AUTH",
    "PYPI_",
    "TWINE_",
    "CARGO_REGISTRY",
)
# The shell's own variables that only look like it (`PWD` is the working directory).
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK", "GPG_TTY", "KEYTIMEOUT", "TOKENIZERS_PARALLELISM"})


def looks_secret(name: str) -> bool:
    """Whether an environment variable called `name` probably holds a secret (an API key, a token, a
    password, cloud credentials, a connection string with a password in it)."""
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    return bool(_ANYWHERE.search(upper) or _PART.search(upper) or upper.startswith(_PREFIXES))


# A process's environment as a file: /proc/PID/environ (self, thread-self, a task's), and its memory, where the
# environment is too.
_ENVIRONMENT_FILE = re.compile(r"/proc/(?:self|thread-self|[0-9]+)(?:/task/(?:[0-9]+))?/(?:environ|mem)")
_HOLDS_ENVIRONMENT = re.compile(r"/|/proc|/proc/(?:self|thread-self|[0-9]+)(?:/task(?:/[0-9]+)?)?")


def environment_file(path: str) -> bool:
    """Whether reading the file at `path` (resolved: `/proc/self` is `/proc/PID`) reads a process's environment,
    the bridge's own included (its API key)."""
    return _ENVIRONMENT_FILE.fullmatch(path.rstrip("/") or "/") is not None


def holds_environment_files(path: str) -> bool:
    """Whether a directory read recursively (`grep -r x /proc/self`) holds such files."""
    return _HOLDS_ENVIRONMENT.fullmatch(path.rstrip("/") or "/") is not None
