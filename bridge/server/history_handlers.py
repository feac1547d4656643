"""What the checkpoint and history methods share (`session/fork`, `_bridge/fork`, `_bridge/rewind`,
`_bridge/changes`, `_bridge/undo`, `_bridge/keep`): a prompt named by turn id or index, a fork from before it, and
the history's own refusals (no such prompt, a stale hunk, checkpoints off) as invalid params that say why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from bridge.server import wire_history

if TYPE_CHECKING:
    from bridge.history import RewindPreview
    from bridge.server.app import BridgeServer
    from bridge.session import Session

# The rewind previews each session's client was shown, by prompt (turn) and mode: a confirm applies the plan of its
# own preview. The last few a session (a dialog previews again as its mode changes).
SHOWN: dict[str, dict[tuple[str, str], RewindPreview]] = {}
SHOWN_PER_SESSION = 8


async def served(work: Any) -> Any:
    """`work` (a coroutine) awaited; a request the history or the review can't serve (no such prompt, a stale
    hunk, checkpoints off) is an invalid-params error that says why."""
    from bridge.checkpoints.review import ReviewError
    from bridge.checkpoints.rewind import RewindError
    from bridge.history import HistoryError

    try:
        return await work
    except (HistoryError, ReviewError, RewindError) as error:
        raise JsonRpcInvalidParams(str(error)) from None


async def turn_of(session: Session, target: str | int | None) -> str | None:
    """The turn id of the prompt a request names (None: none named — the whole session)."""
    from bridge import history

    async def find() -> str:
        assert target is not None
        return history.find_prompt(session, target).turn

    return None if target is None else str(await served(find()))


async def fork(
    ls: BridgeServer, source: Session, target: str | int | None, cwd: Path | None, servers: list[dict[str, Any]]
) -> dict[str, Any]:
    """`session/fork` and `_bridge/fork`: a new session from `source` (before prompt `target`, or all of it)."""
    before = await turn_of(source, target)
    session = await ls.agent.fork_session(source, ls.frontend, before_turn=before, cwd=cwd)
    ls.agent.connect_mcp(session, servers, ls.mcp_host(session))
    session.toolset.refresh_commands()
    ls.bridge_protocol.after_reply(lambda: ls.session_started(session, []))
    return {"sessionId": session.id, **ls.session_answer(session)}


def register(feature: Callable[[str], Callable[[Any], Any]]) -> None:
    """The checkpoint and history methods, registered on the server `feature` belongs to."""

    @feature("_bridge/prompts")
    async def bridge_prompts(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """The prompts a rewind or a fork can go back to, with how many files changed since each."""
        from bridge import history

        _parsed, session = ls.session(params)

        async def listed() -> list[dict[str, Any]]:
            return [wire_history.prompt(p, history.changed_after(session, p.turn)) for p in history.prompts(session)]

        return {"prompts": await served(listed())}

    @feature("_bridge/rewind")
    async def bridge_rewind(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """What a rewind to before a prompt will do (`confirm: false`), or doing it (`confirm: true`)."""
        from bridge import history

        parsed, session = ls.session(params, wire_history.RewindParams)
        if parsed.target is None:
            raise JsonRpcInvalidParams("Invalid params: turnId or prompt: name the prompt to rewind to")
        if session.busy:
            raise JsonRpcInternalError("A turn is running: cancel it (session/cancel) before rewinding.")
        preview = await served(history.preview_rewind(session, parsed.target, parsed.mode))
        shown = SHOWN.setdefault(session.id, {})
        key = (preview.prompt.turn, preview.mode)
        if not parsed.confirm:
            shown.pop(key, None)
            shown[key] = preview
            while len(shown) > SHOWN_PER_SESSION:
                del shown[next(iter(shown))]
            return wire_history.rewind_preview(preview)
        # what the client was shown is what is done: the plan of its preview (a file the plan holds now and did
        # not then is kept and said: bridge/checkpoints/rewind.py's apply_rewind)
        previewed = shown.pop(key, None)
        if previewed is None:
            raise JsonRpcInvalidParams(
                "Invalid params: preview this rewind first (the same prompt and mode, confirm: false): a confirm "
                "does what its preview showed"
            )
        outcome = await served(history.rewind(session, previewed, parsed.resolutions))
        return wire_history.rewind_outcome(previewed, outcome)

    @feature("_bridge/fork")
    async def bridge_fork(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire_history.PromptParams)
        return await fork(ls, session, parsed.target, None, [])

    @feature("session/fork")
    async def session_fork(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """ACP's unstable `session/fork`; `_meta.turnId` / `_meta.prompt` forks from before that prompt."""
        parsed, session = ls.session(params, wire_history.ForkParams)
        cwd = Path(parsed.cwd) if parsed.cwd else None
        if cwd is not None and (not cwd.is_absolute() or not cwd.is_dir()):
            raise JsonRpcInvalidParams(
                f"Invalid params: cwd: must be an absolute path to an existing directory, got {parsed.cwd!r}"
            )
        meta = parsed.meta or {}
        return await fork(ls, session, meta.get("turnId") or meta.get("prompt"), cwd, parsed.mcp_servers)

    @feature("_bridge/changes")
    async def bridge_changes(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """The session's pending changes, or a prompt's, per file with hunks."""
        from bridge.checkpoints.review import view

        parsed, session = ls.session(params, wire_history.PromptParams)
        turn = await turn_of(session, parsed.target)
        reviews = await served(view(session.checkpoints, turn))
        return {
            "scope": "session" if turn is None else "turn",
            "turnId": turn,
            "files": [wire_history.file_review(review) for review in reviews],
        }

    @feature("_bridge/undo")
    async def bridge_undo(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.checkpoints.review import Address, undo

        parsed, session = ls.session(params, wire_history.ReviewParams)
        turn = await turn_of(session, parsed.target)
        address = Address(parsed.path, parsed.hunk, parsed.hunk_id)
        return wire_history.review_result(
            await served(undo(session.checkpoints, turn, address, overwrite=parsed.overwrite))
        )

    @feature("_bridge/keep")
    async def bridge_keep(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.checkpoints.review import Address, keep

        parsed, session = ls.session(params, wire_history.ReviewParams)
        turn = await turn_of(session, parsed.target)
        address = Address(parsed.path, parsed.hunk, parsed.hunk_id)
        return wire_history.review_result(await served(keep(session.checkpoints, turn, address)))
