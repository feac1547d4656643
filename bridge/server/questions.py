"""The questions the bridge asks an editor, in ACP's form and back: a permission (`session/request_permission`
with the whole truth of what runs in `_meta.question`, and the "always" options naming the rules they save), an
MCP server's question (elicitation) and the folder-trust question (`_meta.trust`)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from bridge.mcp.host import Question, Reply
from bridge.permissions.trust import TRUST_CHOICES, TrustAnswer, TrustQuestion
from bridge.permissions.types import OptionKind, PermissionAnswer, PermissionRequest, RuleSuggestion
from bridge.server.wire import agent_label, location, text_content, tool_content
from bridge.visible import capped, code_span, fits, has_hidden, one_line, visible, visible_spans


def permission_params(session_id: str, request: PermissionRequest) -> dict[str, Any]:
    """`session/request_permission` for a tool call: the title alone tells the whole truth (a client may show
    only it: the whole command, every line; a path and where it really leads), the first content block says it
    again with the reason, `_meta.question` carries it as data (the marked parts, the paths), and an always-
    option names every rule it saves. Every text a person sees is made visible (`bridge.visible`)."""
    options: list[dict[str, Any]] = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    options += _always_options("allow_always", "Always allow", _suggested(request, "allow"))
    options.append({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
    options += _always_options("reject_always", "Always reject", _suggested(request, "deny"))
    content = [text_content(_question_text(request)), *(tool_content(item) for item in request.display)]
    meta: dict[str, Any] = {"reason": visible(request.reason), "question": _question(request)}
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": request.tool_call_id,
            "title": _question_title(request),
            "kind": request.kind,
            "status": "pending",
            "rawInput": request.raw_input,
            "content": content,
            "locations": [location(item) for item in request.locations],
        },
        "options": options,
        "_meta": meta | ({"agent": agent_label(request.agent)} if request.agent else {}),
    }


def _question_title(request: PermissionRequest) -> str:
    shown = request.shown
    if shown.command is not None:
        background = " (background)" if request.raw_input.get("run_in_background") else ""
        title = code_span(one_line(shown.command)) + background
        if not fits(shown.command) and shown.marks:  # what asks may be past the cut: name it
            asked = ", ".join(code_span(one_line(shown.command[m.start : m.end], 300)) for m in shown.marks[:5])
            title += f" — it asks about {asked}"
        return title
    title = one_line(request.title)
    if shown.paths:
        title += " → " + ", ".join(one_line(p.resolved) for p in shown.paths)
    return title


def _question_text(request: PermissionRequest) -> str:
    shown = request.shown
    if shown.command is not None:
        body, more = capped(shown.command)
        head = visible(body, keep_newlines=True) + more
    elif shown.paths:
        head = "\n".join(f"{visible(p.named)} → {visible(p.resolved)}" for p in shown.paths)
    else:
        head = "\n".join(visible(item.path) for item in request.locations) or visible(request.title)
    return f"{head}\n\n{visible(request.reason)}" if request.reason else head


def _question(request: PermissionRequest) -> dict[str, Any]:
    shown = request.shown
    command: str | None = None
    marks: list[dict[str, Any]] = []
    body = ""
    if shown.command is not None:
        body, more = capped(shown.command)
        command, spans = visible_spans(body, [(m.start, m.end) for m in shown.marks])
        command += more
        marks = [
            {"start": start, "end": end, "why": visible(mark.why)}
            for (start, end), mark in zip(spans, shown.marks, strict=True)
            if end > start
        ]
    return {
        "command": command,
        "marks": marks,
        "reason": visible(request.reason),
        "paths": [{"named": visible(p.named), "resolved": visible(p.resolved)} for p in shown.paths],
        "escaped": any(
            has_hidden(text) for text in (body, request.reason, request.title, *(p.named for p in shown.paths))
        ),
    }


def _always_options(kind: OptionKind, verb: str, suggestions: list[RuleSuggestion]) -> list[dict[str, Any]]:
    """One option per suggestion (ids `allow_always`, `allow_always:2`…); its name lists every rule it saves
    and where."""
    out = []
    for option_id, suggestion in _always_ids(kind, suggestions):
        where = Path(suggestion.destination).name
        rules = ", ".join(visible(rule) for rule in suggestion.rules)
        out.append(
            {
                "optionId": option_id,
                "name": f"{verb} {rules} (saved to {where})",
                "kind": kind,
                "_meta": {
                    "rule": suggestion.rule,
                    "rules": list(suggestion.rules),
                    "destination": suggestion.destination,
                },
            }
        )
    return out


def _suggested(request: PermissionRequest, behavior: str) -> list[RuleSuggestion]:
    return [s for s in request.suggestions if s.behavior == behavior]


def _always_ids(kind: str, suggestions: list[RuleSuggestion]) -> list[tuple[str, RuleSuggestion]]:
    return [(kind if index == 0 else f"{kind}:{index + 1}", s) for index, s in enumerate(suggestions)]


def permission_answer(result: Any, request: PermissionRequest) -> PermissionAnswer:
    """The editor's answer; anything unrecognized denies (never allows by accident). An always-option saves
    exactly the rules its option listed."""
    if not isinstance(result, dict):
        return PermissionAnswer("cancelled")
    outcome = result.get("outcome") or {}
    meta = result.get("_meta") or {}
    feedback = meta.get("feedback") if isinstance(meta, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return PermissionAnswer("cancelled", feedback=feedback)
    option = outcome.get("optionId")
    edited = meta.get("editedText") if isinstance(meta, dict) else None
    edited = edited if isinstance(edited, str) else None
    if option == "allow_once":
        return PermissionAnswer("allow_once", edited_text=edited)
    for option_id, chosen in _always_ids("allow_always", _suggested(request, "allow")):
        if option == option_id:
            return PermissionAnswer("allow_always", feedback=feedback, suggestion=chosen, edited_text=edited)
    for option_id, chosen in _always_ids("reject_always", _suggested(request, "deny")):
        if option == option_id:
            return PermissionAnswer("reject_always", feedback=feedback, suggestion=chosen)
    if option == "reject_once":
        return PermissionAnswer("reject_once", feedback=feedback)
    return PermissionAnswer("cancelled", feedback=feedback)


def question_params(session_id: str, question: Question) -> dict[str, Any]:
    """An MCP question (approve a project's server, a server's form) as `session/request_permission`: the
    question's own choices as options, its data (e.g. `elicitation` with the schema) in `_meta` and `rawInput`."""
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": question.id,
            "title": one_line(question.title),
            "kind": "other",
            "status": "pending",
            "rawInput": question.meta,
            "content": [
                {"type": "content", "content": {"type": "text", "text": visible(question.text, keep_newlines=True)}}
            ],
            "locations": [],
        },
        "options": [{"optionId": c.id, "name": one_line(c.name), "kind": c.kind} for c in question.choices],
        "_meta": question.meta,
    }


def question_reply(result: Any, question: Question) -> Reply:
    """The editor's answer: one of the question's options (and the answer's `_meta`, e.g. a form's `content`)."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    option = outcome.get("optionId") if isinstance(outcome, dict) and outcome.get("outcome") == "selected" else None
    if option not in {c.id for c in question.choices}:
        return Reply(None)
    meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
    return Reply(str(option), dict(meta))


_TRUST_KINDS: dict[TrustAnswer, OptionKind] = {
    "trust": "allow_always",
    "session": "allow_once",
    "not_now": "reject_once",
    "keep_off": "reject_always",
}


def trust_params(session_id: str, question: TrustQuestion) -> dict[str, Any]:
    """The folder-trust question as `session/request_permission`: every item verbatim in the content (a client
    that shows only text shows them all) and as data in `_meta.trust` (an editor that renders a list)."""
    trust = question.as_meta()
    return {
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": f"trust_{uuid.uuid4().hex[:12]}",
            "title": question.title,
            "kind": "other",
            "status": "pending",
            "rawInput": trust,
            "content": [{"type": "content", "content": {"type": "text", "text": question.text}}],
            "locations": [],
        },
        "options": [{"optionId": answer, "name": name, "kind": _TRUST_KINDS[answer]} for answer, name in TRUST_CHOICES],
        "_meta": {"trust": trust},
    }


def trust_answer(result: Any) -> TrustAnswer | None:
    """The editor's answer to the trust question; anything unrecognized trusts nothing."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    option = outcome.get("optionId") if isinstance(outcome, dict) and outcome.get("outcome") == "selected" else None
    return next((answer for answer in _TRUST_KINDS if answer == option), None)
