"""The one place an exception becomes a person's message: exception groups unwrapped to their cause, no class
name or traceback."""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter, ValidationError

from bridge.errors import for_person, root_cause, validation_problems
from bridge.model.types import ModelError
from bridge.server.rpc_errors import internal_error as _internal_error


def _grouped(error: Exception) -> ExceptionGroup:
    return ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [error])])


def test_a_group_is_unwrapped_to_its_first_cause() -> None:
    cause = ValueError("the frobnicator is out of range")
    assert root_cause(_grouped(cause)) is cause
    assert root_cause(cause) is cause
    message = for_person(_grouped(cause))
    assert "the frobnicator is out of range" in message
    assert "Group" not in message and "ValueError" not in message and "Traceback" not in message
    assert "internal error" in for_person(_grouped(KeyError()))


def test_the_editor_gets_the_cause_and_a_model_failure_keeps_its_data() -> None:
    answer = _internal_error(_grouped(RuntimeError("disk on fire")))
    assert "disk on fire" in answer.message and "Group" not in answer.message and answer.data is None
    model = _internal_error(
        _grouped(ModelError("Rate limited (429). Try again in 3 s.", kind="rate_limited", status=429))
    )
    assert model.message == "Rate limited (429). Try again in 3 s."
    assert model.data == {"kind": "rate_limited", "status": 429}


def test_invalid_values_read_the_same_everywhere() -> None:
    class Inner(BaseModel):
        depth: int

    class Outer(BaseModel):
        name: str
        inner: Inner

    try:
        Outer.model_validate({"name": 1, "inner": {"depth": "deep"}})
    except ValidationError as error:
        found = validation_problems(error)
        assert found == [
            "name: Input should be a valid string",
            "inner.depth: Input should be a valid integer, unable to parse string as an integer",
        ]
        assert validation_problems(error, limit=1) == found[:1]
    try:
        TypeAdapter(list[str]).validate_python("not a list")
    except ValidationError as error:
        assert validation_problems(error, whole="value") == ["value: Input should be a valid list"]
