"""A session's selectors as the wire gives them (`modes`, `models`, `configOptions`): what `session/new` answers
about a session besides its id. Light on purpose (no pydantic, no domain): `session/new` can then be answered
before the server is loaded (bridge/server/early_session.py) with the very functions the server answers with;
bridge/server/wire.py re-exports them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridge.model.pricing import MODELS
from bridge.model.thinking import LEVELS
from bridge.permissions.modes import MODE_DESCRIPTIONS, MODE_NAMES, MODES

MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION = "mode", "model", "thought_level"


def config_options(mode_id: str, models: dict[str, Any], thought_level: str) -> list[dict[str, Any]]:
    """The session's selectors with their current values: permission mode, model (`models`: a `models_state`,
    the models the user can pick), thinking budget."""

    def select(
        option_id: str, name: str, description: str, current: str, options: Sequence[tuple[str, str, str]]
    ) -> dict[str, Any]:
        return {
            "id": option_id,
            "name": name,
            "description": description,
            "category": option_id,
            "type": "select",
            "currentValue": current,
            "options": [{"value": value, "name": label, "description": about} for value, label, about in options],
        }

    modes = [(m, MODE_NAMES[m], MODE_DESCRIPTIONS[m]) for m in MODES]
    choices = [(m["modelId"], m["name"], m["description"]) for m in models["availableModels"]]
    return [
        select(MODE_OPTION, "Mode", "What the agent may do without asking", mode_id, modes),
        select(
            MODEL_OPTION, "Model", "The model that answers, from the next prompt on", models["currentModelId"], choices
        ),
        select(
            THOUGHT_OPTION,
            "Thinking",
            "How much the model thinks before it answers, from the next prompt on",
            thought_level,
            list(LEVELS),
        ),
    ]


def models_state(current: str) -> dict[str, Any]:
    """ACP's (unstable) session model state: the picker's models, with the current one listed first when it is
    not one of them (a model set by settings)."""
    listed = [{"modelId": m, "name": name, "description": about} for m, name, about in MODELS]
    if current not in {m for m, _, _ in MODELS}:
        listed.insert(0, {"modelId": current, "name": current, "description": "Set by the bridge's settings"})
    return {"currentModelId": current, "availableModels": listed}


OFFLINE_MODEL = {
    "modelId": "offline-demo",
    "name": "Offline demo model",
    "description": "The bridge's built-in offline model: scripted answers, no network, no cost",
}


def offline_models_state() -> dict[str, Any]:
    """The models of a bridge on its offline demo model: that one (an editor must not show a Claude model and
    a price for it)."""
    return {"currentModelId": OFFLINE_MODEL["modelId"], "availableModels": [OFFLINE_MODEL]}


def modes_state(current: str) -> dict[str, Any]:
    """`session/new`'s `modes`: the current mode and every mode, named and described."""
    return {
        "currentModeId": current,
        "availableModes": [
            {"id": mode_id, "name": MODE_NAMES[mode_id], "description": MODE_DESCRIPTIONS[mode_id]} for mode_id in MODES
        ],
    }


def session_answer(mode_id: str, models: dict[str, Any], thought_level: str, *, lsp: bool) -> dict[str, Any]:
    """What `session/new`, `session/load` and `session/resume` answer about a session: its modes (for older
    clients), its config options and, over LSP, its models (the VS Code extension's model picker and header; ACP
    1's schema has no `models`)."""
    answer: dict[str, Any] = {
        "modes": modes_state(mode_id),
        "configOptions": config_options(mode_id, models, thought_level),
    }
    if lsp:
        answer["models"] = models
    return answer
