"""A server's elicitation (`elicitation/create`) as a permission-style question, and the answer back.

Form mode: the question's `_meta.elicitation` carries `{server, mode: "form", message, requestedSchema}`; an
editor that renders the form answers `{outcome: {outcome: "selected", optionId: "accept"}, _meta: {content:
{...}}}`. An editor that knows nothing of forms still shows the message with Submit / Decline: Submit then
sends the schema's defaults, or — when a required field has none — cancels (the server is told the user did
not answer). URL mode: `_meta.elicitation` is `{server, mode: "url", message, url}`; accept means the user
agreed to open it. Values are checked against the schema (strings given for numbers and booleans are
converted); a bad value cancels and says why in the log.
"""

from __future__ import annotations

import logging
from typing import Any

from bridge.mcp.host import Choice, Question, Reply

log = logging.getLogger(__name__)

ACCEPT, DECLINE = "accept", "decline"


def question_for(server: str, params: dict[str, Any], question_id: str) -> Question:
    message = str(params.get("message", ""))
    if params.get("mode") == "url":
        url = str(params.get("url", ""))
        return Question(
            question_id,
            f"MCP server {server!r} asks you to open a page",
            f"{message}\n\n{url}",
            (Choice(ACCEPT, f"Open {url}", "allow_once"), Choice(DECLINE, "Decline", "reject_once")),
            {"elicitation": {"server": server, "mode": "url", "message": message, "url": url}},
        )
    schema = _dict(params.get("requestedSchema"))
    lines = [message, ""] + [
        f"- {name}: {_describe(spec, name in schema.get('required', []))}"
        for name, spec in (schema.get("properties") or {}).items()
    ]
    return Question(
        question_id,
        f"MCP server {server!r} asks: {message}",
        "\n".join(lines).strip(),
        (Choice(ACCEPT, "Submit", "allow_once"), Choice(DECLINE, "Decline", "reject_once")),
        {"elicitation": {"server": server, "mode": "form", "message": message, "requestedSchema": schema}},
    )


def result_of(reply: Reply, params: dict[str, Any]) -> dict[str, Any]:
    """The `ElicitResult` (as a dict) for the editor's reply."""
    if reply.choice == DECLINE:
        return {"action": "decline"}
    if reply.choice != ACCEPT:
        return {"action": "cancel"}
    if params.get("mode") == "url":
        return {"action": "accept"}
    content, problem = form_content(_dict(params.get("requestedSchema")), _dict(reply.meta.get("content")))
    if problem:
        log.warning("elicitation answer not sent: %s", problem)
        return {"action": "cancel"}
    return {"action": "accept", "content": content}


def form_content(schema: dict[str, Any], given: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    properties = _dict(schema.get("properties"))
    required = [r for r in schema.get("required", []) if isinstance(r, str)]
    content: dict[str, Any] = {}
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        if name in given and given[name] is not None and given[name] != "":
            value, problem = _coerce(given[name], spec)
            if problem:
                return {}, f"{name}: {problem}"
            content[name] = value
        elif "default" in spec:
            content[name] = spec["default"]
        elif name in required:
            return {}, f"the required field {name!r} has no value"
    return content, None


def _coerce(value: Any, spec: dict[str, Any]) -> tuple[Any, str | None]:
    kind = spec.get("type")
    if isinstance(spec.get("enum"), list) and value not in spec["enum"]:
        return value, f"{value!r} is not one of {spec['enum']}"
    if kind == "string":
        return (value, None) if isinstance(value, str) else (value, "must be a string")
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        if isinstance(value, bool):
            return value, f"must be {noun}"
        if isinstance(value, str):
            try:
                value = int(value) if kind == "integer" else float(value)
            except ValueError:
                return value, f"{value!r} is not {noun}"
        if kind == "integer" and not isinstance(value, int):
            return value, "must be an integer"
        if not isinstance(value, int | float):
            return value, "must be a number"
        return value, None
    if kind == "boolean":
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true", None
        return (value, None) if isinstance(value, bool) else (value, "must be true or false")
    if kind == "array":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return (value, None) if ok else (value, "must be a list of strings")
    return value, None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _describe(spec: Any, required: bool) -> str:
    spec = spec if isinstance(spec, dict) else {}
    parts = [str(spec.get("type", "value"))]
    if spec.get("enum"):
        parts.append("one of " + ", ".join(map(str, spec["enum"])))
    if "default" in spec:
        parts.append(f"default {spec['default']!r}")
    if required:
        parts.append("required")
    about = f" — {spec['description']}" if spec.get("description") else ""
    return ", ".join(parts) + about
