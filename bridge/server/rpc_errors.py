"""How the handlers answer what goes wrong: ACP's error codes (`auth_required`, `resource_not_found`), invalid
params that name the field, and any other failure as one clear message (its traceback goes to the log)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError

from bridge.server import wire
from bridge.server.handshake import AUTH_METHODS

if TYPE_CHECKING:
    from bridge.model.types import ModelError

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000  # ACP's `auth_required`
RESOURCE_NOT_FOUND = -32002  # ACP's `resource_not_found`


def unknown_session(error: Exception) -> JsonRpcServerError:
    from bridge.server.fast_initialize import FAILED_EARLY

    text = str(error)
    session_id = error.args[0] if error.args and isinstance(error.args[0], str) else None
    failed = next((why for sid, why in FAILED_EARLY.items() if sid == session_id or sid in text), None)
    if failed is not None:  # answered before the server loaded, then not made after all
        text = f"{text} It was answered before the bridge had loaded, but could not be made: {failed}"
    return JsonRpcServerError(text, RESOURCE_NOT_FOUND)  # type: ignore[no-untyped-call]


def auth_required(message: str, data: dict[str, Any] | None = None) -> JsonRpcServerError:
    """ACP's `auth_required`, with the method the editor can offer (how to set the key is in its `_meta`)."""
    data = {**(data or {}), "authMethods": AUTH_METHODS}
    return JsonRpcServerError(message, AUTH_REQUIRED, data)  # type: ignore[no-untyped-call]


NO_API_KEY = (
    "No Anthropic API key is set: set ANTHROPIC_API_KEY for agent-bridge (or apiKey in its settings; "
    "in VS Code: “Agent Bridge: Set API Key”), or try it without one on the offline model "
    "(--offline playground)."
)


def model_failure(error: ModelError) -> JsonRpcException:
    data = {"kind": error.kind, "status": error.status}
    if error.kind == "authentication" and error.status != 403:  # a bad or missing key; 403: a key without access
        return auth_required(str(error), data)
    return JsonRpcInternalError(str(error), data=data)


def parse_params(model: type[wire.WireModel], params: Any) -> Any:
    try:
        return wire.parse(model, params)
    except ValueError as error:
        raise JsonRpcInvalidParams(str(error)) from None


def directory(value: str, field: str) -> Path:
    """`value` as an absolute path to an existing directory, else invalid params naming `field` (a name too
    long or with a NUL byte is simply not one)."""
    path = Path(value)
    try:
        exists = path.is_absolute() and path.is_dir()
    except (OSError, ValueError):
        exists = False
    if not exists:
        raise JsonRpcInvalidParams(
            f"Invalid params: {field}: must be an absolute path to an existing directory, got {value!r}"
        )
    return path


def directories(values: list[str]) -> list[Path]:
    """ACP's `additionalDirectories`: each an absolute path to an existing directory."""
    return [directory(value, f"additionalDirectories.{index}") for index, value in enumerate(values)]


Handler = TypeVar("Handler", bound=Callable[..., Any])


def internal_error(error: Exception) -> JsonRpcException:
    """An unexpected failure as the editor sees it: one clear message (no group, class name or traceback,
    which go to the log). A model failure keeps its kind and status as data."""
    from bridge.errors import for_person, root_cause
    from bridge.model.types import ModelError

    cause = root_cause(error)
    if isinstance(cause, ModelError):  # an ordinary failure of the API (401, 529, ...): one line, no traceback
        log.warning("model request failed: %s", cause)
        return model_failure(cause)
    log.error("request failed", exc_info=error)
    return JsonRpcInternalError(for_person(error))


def answering_errors(handler: Handler) -> Handler:
    """`handler`, with any exception that is not already a JSON-RPC error answered as `internal_error`
    (pygls would send its class name and traceback)."""
    if asyncio.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async(*args: Any) -> Any:
            try:
                return await handler(*args)
            except JsonRpcException:
                raise
            except Exception as error:
                raise internal_error(error) from None

        return run_async  # type: ignore[return-value]

    @functools.wraps(handler)
    def run(*args: Any) -> Any:
        try:
            return handler(*args)
        except JsonRpcException:
            raise
        except Exception as error:
            raise internal_error(error) from None

    return run  # type: ignore[return-value]
