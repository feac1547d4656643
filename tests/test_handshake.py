"""LSP's `initialize` answer given before the server loads (bridge/server/handshake.py) rests on two claims, checked
here against pygls and lsprotocol themselves, on any JSON: `position_encoding` names the encoding pygls picks
(when it names one at all), and `readable_initialize` is always something pygls's types can read."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder

from bridge.server.handshake import ENCODINGS, position_encoding, readable_initialize
from bridge.server.jsonrpc import dict_converter

CONVERTER = dict_converter()

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
ENCODING_NAMES = st.sampled_from([*ENCODINGS, "latin-1", "", "UTF-8"])
NAMES = st.lists(ENCODING_NAMES, min_size=1, max_size=4)
GENERAL = (
    st.fixed_dictionaries({"positionEncodings": NAMES})
    | st.fixed_dictionaries({"positionEncodings": NAMES}, optional={"markdown": JSON})
    | st.fixed_dictionaries({"positionEncodings": st.lists(ENCODING_NAMES | JSON, max_size=4) | JSON})
    | st.none()
    | JSON
)
CAPABILITIES = (
    st.fixed_dictionaries(
        {},
        optional={
            "general": GENERAL,
            "textDocument": JSON | st.fixed_dictionaries({"synchronization": JSON}),
            "workspace": JSON | st.fixed_dictionaries({"fileOperations": JSON}),
            "notebookDocument": JSON,
            "window": JSON,
        },
    )
    | JSON
)
PARAMS = st.fixed_dictionaries(
    {"capabilities": CAPABILITIES},
    optional={
        "processId": JSON,
        "rootUri": JSON,
        "rootPath": JSON,
        "initializationOptions": JSON,
        "clientInfo": JSON | st.fixed_dictionaries({"name": JSON}, optional={"version": JSON}),
        "locale": JSON,
        "trace": JSON | st.sampled_from(["off", "messages", "verbose"]),
        "workspaceFolders": JSON | st.lists(st.fixed_dictionaries({"uri": JSON, "name": JSON}), max_size=2),
        "workDoneToken": JSON,
    },
)


def structured(params: dict[str, Any]) -> Any:
    request = {"jsonrpc": "2.0", "id": 1, "method": types.INITIALIZE, "params": params}
    return CONVERTER.structure(request, types.InitializeRequest).params


def picked(params: Any) -> str:
    encoding = ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities)
    return str(getattr(encoding, "value", encoding))


@settings(max_examples=400, deadline=None)
@given(PARAMS)
def test_the_encoding_named_early_is_the_one_pygls_picks(params: dict[str, Any]) -> None:
    predicted = position_encoding(params["capabilities"])
    if predicted is None:
        return
    try:
        read = structured(params)
    except Exception:  # the server goes on with the readable part (BridgeProtocol.structure_message)
        read = structured(readable_initialize(params))
    assert picked(read) == predicted


@settings(max_examples=400, deadline=None)
@given(PARAMS)
def test_the_readable_part_of_any_params_is_read(params: dict[str, Any]) -> None:
    read = structured(readable_initialize(params))
    predicted = position_encoding(params["capabilities"])
    assert picked(read) == (predicted or "utf-16")


@given(st.lists(ENCODING_NAMES, max_size=4), st.booleans())
def test_plain_encodings_are_picked_as_pygls_picks_them(encodings: list[str], markdown: bool) -> None:
    general: dict[str, Any] = {"positionEncodings": encodings}
    if markdown:
        general["markdown"] = {"parser": "marked", "version": "1.1.0"}
    params = {"processId": None, "rootUri": None, "capabilities": {"general": general}}
    assert picked(structured(params)) == position_encoding(params["capabilities"])


def test_plain_capabilities() -> None:
    assert position_encoding({}) == "utf-16"
    assert position_encoding({"general": {"positionEncodings": ["utf-32", "utf-8"]}}) == "utf-32"
    assert position_encoding({"general": {"positionEncodings": []}}) == "utf-16"
    assert position_encoding({"general": {"positionEncodings": "utf-8"}}) is None
    assert position_encoding([]) is None
