"""`session/new` answered, and the first prompt's model request sent, before the server is loaded.

An editor starts the bridge and, as soon as the protocol lets it, sends `initialize`, `session/new` and
`session/prompt`. Answering `session/new` takes the server framework (pygls, lsprotocol) and the core: most of a
second. Yet for a new session in a plain setting the answer is known beforehand: its id is minted here, and the
rest (modes, config options, models) is what bridge/server/session_state.py makes of the defaults. So it goes out
at once, the server later creates the session under that very id (`BridgeServer.early_ids`) and its own answer —
the same bytes — is held back (`fast_initialize.AnswerFilter`); and the first prompt's model request is sent ahead
(bridge/first_request.py, as `run` does), the session's model client taking it over.

"Plain" is decided on what could change the answer, never guessed: no settings file of the session's exists (the
folder's own, the user's, Claude Code's: nothing is read from the folder before trust, so nothing can widen), no
editor options (LSP `initializationOptions`) or command-line settings beyond the model, the API key and URL and
the folder trust (fast_initialize.EDITOR_OPTIONS), no offline model, the params exactly a new session's with no
MCP servers and no extra directories. Anything else is left to the server, which answers it as always.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bridge.first_request import settings_files
from bridge.first_request import settings_of as first_request_settings
from bridge.model.thinking import DEFAULT as DEFAULT_THOUGHT_LEVEL
from bridge.server.session_state import models_state, session_answer
from bridge.session_id import new_session_id

START_MODE = "default"  # a session's mode when no settings file names one (PermissionEngine's own default)


def answer_new_session(
    params: Any, overrides: Mapping[str, Any], environ: Mapping[str, str], *, lsp: bool
) -> tuple[dict[str, Any], Path] | None:
    """The result the server would give this `session/new` (a fresh session id in it) and its working
    directory; None when it cannot be told for sure without the server."""
    if not isinstance(params, dict) or not set(params) <= {"cwd", "mcpServers", "additionalDirectories"}:
        return None
    if params.get("mcpServers", []) != [] or params.get("additionalDirectories", []) != []:
        return None
    cwd = params.get("cwd")
    if not isinstance(cwd, str) or "\0" in cwd:
        return None
    path = Path(cwd)
    try:
        if not (path.is_absolute() and path.is_dir()):
            return None
        if any(os.path.lexists(file) for file in settings_files(path, environ)):
            return None
    except (OSError, ValueError):
        return None
    if not set(overrides) <= {"model", "api_key", "base_url", "folderTrust"}:
        return None
    settings = first_request_settings(overrides, environ)
    if settings is None or not isinstance(settings["model"], str):
        return None
    result = {
        "sessionId": new_session_id(),
        **session_answer(START_MODE, models_state(settings["model"]), DEFAULT_THOUGHT_LEVEL, lsp=lsp),
    }
    return result, path
