"""pydantic as the bridge uses it: no plugins.

pydantic looks for plugins (the `pydantic` entry-point group) when the first model or adapter is made: a scan of
every installed distribution's metadata (~5 ms with this venv's 71), on `run`'s path to its first tool result, at
every start. The bridge uses none, and wants none: a plugin is code from whatever else is installed in the
environment that is handed every value the bridge validates (tool inputs, the settings files, their tokens
included). So the bridge's processes start with pydantic's plugin table already made, and empty.
`PYDANTIC_DISABLE_PLUGINS` would do the same, but an environment variable would reach every command the bridge
runs and change the user's own programs.
"""

from __future__ import annotations

import contextlib
import logging

log = logging.getLogger(__name__)


def no_plugins() -> None:
    """Before the bridge's first model class: pydantic's plugin table made and left empty (a later pydantic that
    keeps it elsewhere only costs the scan again)."""
    try:
        from pydantic.plugin import _loader
    except ImportError:  # pragma: no cover - a pydantic without plugins
        return
    with contextlib.suppress(AttributeError):
        if getattr(_loader, "_plugins", None) is None:
            _loader._plugins = {}
            return
    log.debug("pydantic's plugins were looked up before the bridge could say it wants none")
