"""A new session's id: minted by the session, or before the server is loaded (bridge/server/early_session.py)."""

from __future__ import annotations

import uuid


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex[:20]}"
