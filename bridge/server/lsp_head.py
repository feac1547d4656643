"""An LSP message's head as the server reads it (bridge/server/jsonrpc.py), in one place with light imports: the
early reader (bridge/server/fast_initialize.py, before pygls loads) reads a head only where the server would read
the same message from the same bytes, and leaves every other head to the server (attack round 23a: a line of
spaces ended the head for the server and not for the early reader, which then answered a `session/new` for one
folder while the server made that session in another)."""

from __future__ import annotations

import re

CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\S*)[ \t]*$", re.IGNORECASE)  # searched in a line
HEADER = re.compile(rb"^[!-9;-~]+[ \t]*:")  # a token, then a colon: a header line (else noise between messages)
PLAIN_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([0-9]{1,9})[ \t]*$", re.IGNORECASE)  # the whole line


OTHER_HEADER = -1  # `plain_length`: a header line, not the length
UNSURE = -2  # `plain_length`: a line the server may read otherwise


def plain_length(line: bytes) -> int:
    """A head's line (without its line break) as the early reader may read it: its Content-Length when it is one,
    OTHER_HEADER for another header, UNSURE when the server could read it otherwise (a blank line of spaces, a line
    that is no header, a Content-Length the server finds elsewhere in the line or reads as a bad value)."""
    if not line.strip():
        return UNSURE
    found = CONTENT_LENGTH.search(line)
    if found is None:
        return OTHER_HEADER if HEADER.match(line) is not None else UNSURE
    plain = PLAIN_LENGTH.match(line)
    return int(plain.group(1)) if plain is not None and found.start() == 0 else UNSURE
