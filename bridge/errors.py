"""Errors as a person reads them: the one place an exception becomes a message. A task group wraps what
failed inside it in an exception group; a person gets the cause's own words, never a group, a class name or
a traceback (those go to the log)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing pydantic is not free; the ground's callers have an error in hand
    from pydantic import ValidationError


def root_cause(error: BaseException) -> BaseException:
    """The first leaf of nested exception groups; `error` itself when it is not a group."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def cause_text(error: BaseException) -> str:
    """The cause's own message (without its class name), or a plain phrase when it has none."""
    return str(root_cause(error)).strip() or "an unexpected internal error"


def for_person(error: BaseException) -> str:
    """What a front end shows for a turn that failed with `error` (other than a `ModelError`, which
    already speaks to a person)."""
    return f"The turn failed: {cause_text(error)}. The details are in the bridge's log; the session goes on."


def validation_problems(error: ValidationError, *, whole: str = "", limit: int | None = None) -> list[str]:
    """Each problem pydantic found, as `where: what` — `where` the dotted path of the field, `whole` when it is
    the value itself — the first `limit` of them: how invalid settings, tool input and params read everywhere."""
    return [f"{'.'.join(str(part) for part in item['loc']) or whole}: {item['msg']}" for item in error.errors()[:limit]]
