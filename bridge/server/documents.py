"""The editor's view of files, for the file tools (`DocumentSource`): the text of documents an LSP client
synced (`serve`), or every text file through an ACP client that offers `fs/read_text_file` and
`fs/write_text_file` (Zed and others), so unsaved changes are what the agent reads and edits, and its
writes land in the editor's buffer (undo, no "changed on disk").

Which files go to an ACP client: ACP has no "which buffers are open" query, and a client answers a read for
any path (Zed from its buffer if the file is open, else from disk). So every read of a regular text file up to
`CLIENT_MAX_BYTES` asks the client, as Zed's own agent does; the rest stays on disk because a text API cannot
carry it: binary files and images (a NUL in the first block), FIFOs and devices, huge files (the editor would
load them whole). Writes go to the client on the same terms. A read the client cannot answer (an error, no
answer within `CLIENT_READ_TIMEOUT_S`) falls back to the disk; a write it refuses fails the tool, and nothing is
written to disk behind the editor's back.

The editor is asked only after the permission step allowed the call (the tools ask in `validate_target` or
`call`), and only while the name still leads to the real path the permission step judged (the tools check
that before and after, `fileio.editor_text`). What is looked at here to decide (a regular text file, small
enough) is opened the way the tools open files (`bridge.safefs`: no link followed on the way), never by name
after a check. The editor resolves the name itself when it reads or writes: the bridge cannot hand it an open
file, so that last step is the editor's."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from pygls.lsp.server import LanguageServer

from bridge import safefs
from bridge.tools.base import DocumentSource, ToolError
from bridge.tools.paths import looks_binary

log = logging.getLogger(__name__)

CLIENT_MAX_BYTES = 8 * 1024 * 1024
CLIENT_READ_TIMEOUT_S = 10.0

AskClient = Callable[[str, dict[str, Any], float | None], Awaitable[Any]]
"""`ask(method, params, timeout)`: the client's result; raises `ClientRequestFailed` when it answered an error or
not in time."""


class ClientRequestFailed(Exception):
    """The editor answered a request of ours with an error, or did not answer in time."""


class SyncedDocuments(DocumentSource):
    """The unsaved text of documents an LSP client keeps in sync (`textDocument/didOpen`/`didChange`)."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server

    def get_text(self, path: Path) -> str | None:
        try:
            documents = self._server.workspace.text_documents
        except RuntimeError:
            return None
        document = documents.get(path.as_uri())
        return document.source if document is not None else None


class ClientFiles(SyncedDocuments):
    """Files through an ACP client's `fs/*` methods, for one session (see the module docstring)."""

    asks_editor = True

    def __init__(self, server: LanguageServer, ask: AskClient, session_id: str, *, read: bool, write: bool) -> None:
        super().__init__(server)
        self._ask = ask
        self._session_id = session_id
        self._read = read
        self._write = write

    async def read_text(self, path: Path) -> str | None:
        if not self._read or not await anyio.to_thread.run_sync(_text_file, path):
            return self.get_text(path)
        params = {"sessionId": self._session_id, "path": str(path)}
        try:
            result = await self._ask("fs/read_text_file", params, CLIENT_READ_TIMEOUT_S)
        except ClientRequestFailed as error:
            log.warning("fs/read_text_file %s failed, reading the disk: %s", path, error)
            return None
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            log.warning("fs/read_text_file %s: no text in the answer, reading the disk", path)
            return None
        if await anyio.to_thread.run_sync(_same_as_disk, path, content):
            return None  # what the editor has is the file on disk: the tool reads it as such (no "unsaved" label)
        return content

    async def write_text(self, path: Path, text: str) -> bool:
        if not self._write or len(text) > CLIENT_MAX_BYTES or not await anyio.to_thread.run_sync(_writable, path):
            return False
        params = {"sessionId": self._session_id, "path": str(path), "content": text}
        try:  # the caller bounds the wait (fileio.EDITOR_WRITE_TIMEOUT_S)
            await self._ask("fs/write_text_file", params, None)
        except ClientRequestFailed as error:
            raise ToolError(f"The editor did not write {path}: {error}. Nothing was written.") from None
        return True


def _text_file(path: Path) -> bool:
    """A regular file, small enough, that does not look binary: the client's text API can carry it. Opened
    where the name leads now, following no link after it is resolved, without blocking."""
    try:
        opened = safefs.open_beneath(path, safefs.ANYWHERE, safefs.READ_FLAGS)
    except (OSError, ValueError):
        return False
    try:
        st = opened.stat
        if not stat.S_ISREG(st.st_mode) or st.st_size > CLIENT_MAX_BYTES:
            return False
        return not looks_binary(os.read(opened.fd, 8192))
    except OSError:
        return False
    finally:
        opened.close()


def _same_as_disk(path: Path, text: str) -> bool:
    """Whether the editor's `text` is byte for byte the file's content on disk (as UTF-8)."""
    encoded = text.encode("utf-8", "surrogatepass")
    try:
        fd = os.open(path, safefs.READ_FLAGS)  # O_NONBLOCK, O_NOCTTY where the OS has them (not Windows)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "rb") as file:
            return stat.S_ISREG(os.fstat(fd).st_mode) and file.read(len(encoded) + 1) == encoded
    except OSError:
        return False


def _writable(path: Path) -> bool:
    """A new file, or an existing one the client could also have read."""
    try:
        safefs.stat_exact(safefs.resolve(path, safefs.ANYWHERE))
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False
    return _text_file(path)
