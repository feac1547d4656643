"""The environment the bridge hands out — to commands (Bash, background shells), hooks and MCP servers — and
what settings `env` may set.

- **The bridge's own credentials never leave it.** `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`,
  `CLAUDE_CODE_OAUTH_TOKEN`, `ANTHROPIC_CUSTOM_HEADERS` (a gateway's `Authorization` goes with every model
  request: the SDK reads it) and any value registered with `register_secret` (the key an editor handed over, each
  custom header's value) are removed from every environment handed out, under any name that holds them —
  `passEnv` can't bring them back.
- **Variables that look like secrets** (bridge/secrets.py: names; and URLs with a password in them) are not
  handed to commands unless a setting's `passEnv` names them (`GH_TOKEN`, or a pattern `NPM_*`).
- **Settings `env` never sets a variable that changes how programs load or start**: the dynamic loader's
  (`LD_*`, `DYLD_*`, `GCONV_PATH`...), the shells' start-up (`BASH_ENV`, `ENV`, `PROMPT_COMMAND`, `BASH_FUNC_*`,
  `SHELLOPTS`...), language runtimes' preload and search paths (`PYTHONPATH`, `PYTHONSTARTUP`, `NODE_OPTIONS`,
  `PERL5OPT`, `RUBYOPT`, `JAVA_TOOL_OPTIONS`...), where programs read their configuration (`HOME`,
  `XDG_CONFIG_HOME`, git's `GIT_*` other than identity), and programs other programs start (`PAGER`,
  `EDITOR`, `LESSOPEN`, `GIT_SSH_COMMAND`...), build tools' wrappers and flags that load code (`CARGO_*`,
  `RUSTC*`, any `*_WRAPPER`, `GOFLAGS`, `CFLAGS`, `LDFLAGS`...), and editors' and interpreters' start-up files
  (`VIMINIT`, `LUA_INIT`, `PHPRC`, `EMACSLOADPATH`...).
- **A folder's own file may set even less**: not `PATH` (it would turn every auto-allowed `ls` into the
  repository's own program), nor where commands' network traffic goes and whom it trusts (proxies, CA bundles,
  package indexes, `DOCKER_HOST`), nor `AWS_CONFIG_FILE` (whose `credential_process` runs a program), nor `SHELL`
  or `CDPATH`. The user's own settings may: a corporate proxy is theirs to set.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from collections.abc import Iterable, Mapping

from bridge.private_process import BRIDGE_CREDENTIALS
from bridge.secrets import looks_secret


def credential_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the bridge's credentials in `environ`, and on its own the value of each custom header named
    like a secret (`Authorization: Bearer …`, `X-Api-Key: …`: the SDK reads `ANTHROPIC_CUSTOM_HEADERS` as
    `Name: value` lines), a bearer's token alone, and the password in ANTHROPIC_BASE_URL: what must show nowhere."""
    values = [environ[name] for name in BRIDGE_CREDENTIALS if environ.get(name)]
    values += [p for p in url_password(environ.get("ANTHROPIC_BASE_URL", "")) if len(p) >= 8]
    for line in environ.get("ANTHROPIC_CUSTOM_HEADERS", "").splitlines():
        header, colon, value = (part.strip() for part in line.partition(":"))
        if not colon or not looks_secret(header.upper().replace("-", "_")):
            continue
        scheme, _, token = value.partition(" ")
        values += [v for v in (value, token.strip() if scheme.isalpha() else "") if len(v) >= 8]
    return values


def url_password(url: str) -> list[str]:
    """The password in `url`'s userinfo (`https://user:secret@gateway/`: a credential like the key), as written
    and as decoded."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url.strip()).password
    except ValueError:
        return []
    return list(dict.fromkeys([password, unquote(password)])) if password else []


_REFUSED_PREFIXES = (
    "LD_",
    "DYLD_",
    "BASH_FUNC_",
    "GIT_",
    "PYTHON",
    "PERL",
    "RUBY",
    "NODE_",
    "NPM_CONFIG_",
    "JAVA_",
    "_JAVA_",
    "JDK_JAVA_",
    "LESS",
    "XDG_CONFIG",
    "GCONV",
    "MALLOC_",
    "GLIBC_",
    # build tools that run wrappers, linkers and runners named in variables; runtimes' start-up and search paths
    "CARGO_",
    "RUSTC",
    "RUSTDOC",
    "RUSTUP_",
    "LUA_",
    "PHP_INI",
    "TCL",
    "DOTNET_",
    "COMPLUS_",
    "CORECLR_",
    "BUNDLE_",
    "GEM_",
    "EMACS",
    "VIM",
)
_USER_PROGRAM_ENV = frozenset(
    {"PATH", "TMPDIR", "SHELL", "CDPATH", "AWS_CONFIG_FILE", "KUBECONFIG"}
)  # the user's to set
_REFUSED_SUFFIXES = ("_WRAPPER",)  # RUSTC_WORKSPACE_WRAPPER, CARGO_BUILD_RUSTC_WRAPPER, CCACHE-style wrappers
_REFUSED = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "PS0",
        "PS1",
        "PS2",
        "PS4",
        "IFS",
        "ZDOTDIR",
        "HOME",
        "CLASSPATH",
        "NLSPATH",
        "LOCPATH",
        "HOSTALIASES",
        "RESOLV_HOST_CONF",
        "TERMINFO",
        "TERMINFO_DIRS",
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "INPUTRC",
        "CURL_HOME",
        "WGETRC",
        "GNUPGHOME",
        "DOTNET_STARTUP_HOOKS",
        "CORECLR_PROFILER",
        "OPENSSL_CONF",
        "OPENSSL_ENGINES",
        "GETCONF_DIR",
        "TZDIR",
        "DOCKER_CONFIG",
        "KUBECONFIG",
        "PIP_CONFIG_FILE",
        "CARGO_HOME",
        "RUSTC_WRAPPER",
        "CC",
        "CXX",
        "LDSHARED",
        "MAKEFLAGS",
        "MFLAGS",
        "CMAKE_TOOLCHAIN_FILE",
        "R_PROFILE_USER",
        "R_ENVIRON_USER",
        "RUSTFLAGS",
        "GOFLAGS",
        "GOENV",
        "GOROOT",
        "GOTOOLCHAIN",
        "PHPRC",
        "EXINIT",
        "MYVIMRC",
        "CPP",
        "LD",
        "AR",
        "AS",
        "FC",
        "CFLAGS",
        "CXXFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "PKG_CONFIG_PATH",
        "MAVEN_OPTS",
        "GRADLE_OPTS",
        "GRADLE_USER_HOME",
        "SBT_OPTS",
        "ANT_OPTS",
    }
)
# Where commands' traffic goes and whom it trusts, and programs picked by name: the user may set these, a folder not.
_REFUSED_IN_PROJECT_PREFIXES = ("PIP_", "UV_", "POETRY_", "CONDA_", "GOPROXY", "GONOSUM", "GOPRIVATE", "GOINSECURE")
_REFUSED_IN_PROJECT = frozenset(
    {
        "PATH",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "FTP_PROXY",
        "NO_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "DOCKER_HOST",
        "DOCKER_CONTEXT",
        "SHELL",
        "CDPATH",
        "TMPDIR",
    }
)
# git identity and harmless switches: the rest of GIT_* can point git at configuration, hooks or programs
_GIT_HARMLESS = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_TERMINAL_PROMPT",
        "GIT_OPTIONAL_LOCKS",
        "GIT_FLUSH",
        "GIT_TRACE",
    }
)
_HARMLESS = _GIT_HARMLESS | {
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONWARNINGS",
    "NODE_ENV",
    "NODE_NO_WARNINGS",
    "LESS",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_INCREMENTAL",
    "CARGO_TARGET_DIR",
    "CARGO_NET_OFFLINE",
}
# Environment variables that change which program runs or make one run code: set before a command (the checker,
# bridge/permissions/command_parts.py), or in settings `env`, where they would change what every command runs
# unseen (attack round 24: a trusted `RIPGREP_CONFIG_PATH=.ripgreprc`, then a pull's `--pre=./x` in that file made
# every read-only `rg` run the folder's program).
PROGRAM_ENV = re.compile(
    r"^(PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|CDPATH|HOME|GIT_\w+|"
    r"PAGER|MANPAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|NODE_OPTIONS|"
    r"PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|BASH_FUNC_\w+.*|GLOBIGNORE|RIPGREP_CONFIG_PATH|TMPDIR|SHELL|"
    # files whose content says what runs: configuration homes, loader and plugin paths, debugger hooks
    r"XDG_CONFIG_HOME|XDG_CONFIG_DIRS|GCONV_PATH|OPENSSL_CONF|OPENSSL_ENGINES|OPENSSL_MODULES|JAVA_TOOL_OPTIONS|"
    r"_JAVA_OPTIONS|JDK_JAVA_OPTIONS|LESSKEY\w*|LESSEDIT|MANOPT|TAR_OPTIONS|RSYNC_RSH|RSYNC_CONNECT_PROG|"
    r"SSH_ASKPASS|SUDO_ASKPASS|ZDOTDIR|PERL5DB|PERLDB_OPTS|PYTHONBREAKPOINT|PYTHONWARNINGS|NODE_PATH|"
    r"(?i:npm_config_\w+)|FZF_DEFAULT_\w+|SYSTEMD_PAGER|GH_PAGER|AWS_PAGER|PSQL_PAGER|BROWSER|"
    r"KUBECONFIG|DOCKER_CONFIG|AWS_CONFIG_FILE|CARGO_HOME|RUSTC_WRAPPER|GOFLAGS|MAKEFLAGS|GNUMAKEFLAGS|MFLAGS|"
    r"MAKEFILES|INPUTRC|"
    # build tools' own configuration by environment (attack round 9: `CARGO_BUILD_RUSTC_WRAPPER=./x cargo test`
    # under `Bash(cargo test *)`): runners, wrappers, compilers and linkers, flags that load plugins
    r"CARGO_\w+|RUSTC\w*|RUSTFLAGS|RUSTDOCFLAGS|\w+_WRAPPER|GOENV|GOROOT|GOTOOLCHAIN|CC|CXX|CPP|LD|AR|"
    r"CFLAGS|CXXFLAGS|CPPFLAGS|LDFLAGS|PYTEST_ADDOPTS|PYTEST_PLUGINS|(?i:yarn_\w+|pnpm_config_\w+|bun_\w+)|DENO_\w+|MAVEN_OPTS|"
    r"GRADLE_OPTS|JAVA_OPTS|SBT_OPTS|MAVEN_ARGS|GOCACHEPROG|GOWORK|RUSTUP_\w+|TF_CLI_CONFIG_FILE|TF_PLUGIN_CACHE_DIR)$"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PASSWORD_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)

_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """A credential of the bridge's (the key the editor gave): never handed out under any variable name."""
    if value and len(value) >= 8:
        with _secrets_lock:
            _secrets.add(value)


def refused_reason(name: str, *, project: bool) -> str | None:
    """Why settings `env` may not set `name` (None: it may). `project`: the setting is a folder's own file."""
    if not _NAME.fullmatch(name):
        return "it is not a variable name (letters, digits and _, not starting with a digit)"
    upper = name.upper()
    if upper in _HARMLESS:
        return None
    if upper in _REFUSED or upper.startswith(_REFUSED_PREFIXES) or upper.endswith(_REFUSED_SUFFIXES):
        return (
            "it changes how programs load or start, or where they read their configuration; set it in a "
            "command itself if it is needed"
        )
    if upper == "PATH" and project:
        return "a folder's own settings may not change which programs commands run"
    if project and (upper in _REFUSED_IN_PROJECT or upper.startswith(_REFUSED_IN_PROJECT_PREFIXES)):
        return (
            "a folder's own settings may not change where commands' network traffic goes or whom it trusts, or "
            "which programs run by name; your own settings may set it"
        )
    if upper not in _USER_PROGRAM_ENV and (PROGRAM_ENV.match(name) or PROGRAM_ENV.match(upper)):
        return (
            "it changes what commands run, unseen by the permission check (which judges a command as if it were "
            "not set); set it in a command itself if it is needed"
        )
    if upper in BRIDGE_CREDENTIALS:
        return "the bridge's own credentials are never handed to commands"
    return None


def is_bridge_credential(name: str, value: str) -> bool:
    """Whether `name=value` is (or holds) one of the bridge's own credentials."""
    return _holds_bridge_secret(name, value)


def _holds_bridge_secret(name: str, value: str) -> bool:
    if name.upper() in BRIDGE_CREDENTIALS:
        return True
    with _secrets_lock:
        return any(secret in value for secret in _secrets)


def _passed(name: str, pass_env: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in pass_env)


def handed_out(base: Mapping[str, str], *, pass_env: Iterable[str] = ()) -> dict[str, str]:
    """`base` (the bridge's environment) as a command, hook or server may see it: without the bridge's
    credentials, without secret-looking variables that `pass_env` does not name, and without PATH's empty and
    relative entries (in the folder, each would make an auto-allowed `ls` the repository's own program)."""
    names = tuple(pass_env)
    own = [base[n] for n in BRIDGE_CREDENTIALS if len(base.get(n, "")) >= 8]  # copied under another name too
    out: dict[str, str] = {}
    for name, value in base.items():
        if _holds_bridge_secret(name, value) or any(secret in value for secret in own):
            continue
        if (looks_secret(name) or _PASSWORD_URL.search(value)) and not _passed(name, names):
            continue
        out[name] = without_relative(value) if name == "PATH" else value
    return out


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without anything that looks like a secret, whatever named it (a name `looks_secret` or `_HIDDEN_NAME`, a
    value with a password in it): what code that runs unasked (a folder's own hook) is handed of the user's settings'
    `env`. Broader than what commands are refused (`handed_out`): a false positive costs a hook a variable."""
    return {
        name: value
        for name, value in env.items()
        if not (looks_secret(name) or _HIDDEN_NAME.search(name) or _HIDDEN_VALUE.search(value))
    }


# what `looks_secret` leaves to commands and a hook that runs unasked gets none of (attack round 31: `SSHPASS`,
# `DBPASS`, `PRIVKEY`, `redis://:pw@host`, `jdbc:…?password=`, a connection string's `Password=`)
_HIDDEN_NAME = re.compile(r"PASS|PW|PRIV|MNEMONIC|SEED|CONN|WEBHOOK|CERT|PEM|JSON|CRED|SIGN", re.IGNORECASE)
_HIDDEN_VALUE = re.compile(
    r"[a-z][a-z0-9+.-]*://[^/\s@]*:[^/\s@]*@|(?:password|passwd|pwd|secret|token|api_?key|auth)\s*=",
    re.IGNORECASE,
)


def withheld(base: Mapping[str, str], *, pass_env: Iterable[str] = ()) -> list[str]:
    """The names `handed_out` leaves out (for a notice)."""
    kept = handed_out(base, pass_env=pass_env)
    return sorted(name for name in base if name not in kept)


def absolute_entries(path: str) -> list[str]:
    """PATH's entries without the empty and relative ones (each means a directory under the current one, which
    is the folder: bridge/execution/programs.py)."""
    return [entry for entry in path.split(os.pathsep) if entry and os.path.isabs(entry)]


def without_relative(path: str) -> str:
    """PATH as given to what the bridge starts: its absolute entries, in their order."""
    return os.pathsep.join(absolute_entries(path))
