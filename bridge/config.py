"""Bridge settings: fully defaulted, from the environment and the editor's initializationOptions.
Invalid values are reported (as data) and the defaults used — never a crash."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal, TypeVar

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.errors import validation_problems

DEFAULT_MODEL = "claude-sonnet-4-5"
M = TypeVar("M", bound=BaseModel)


def default_data_dir() -> Path:
    return Path(os.environ.get("AGENT_BRIDGE_DATA_DIR") or platformdirs.user_data_dir("agent-bridge"))


class BridgeConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    model: str = DEFAULT_MODEL
    api_key: str | None = Field(default=None, alias="apiKey")
    base_url: str | None = Field(default=None, alias="baseUrl")
    max_turns: int = Field(default=50, ge=1, le=1000, alias="maxTurns")
    max_tokens: int = Field(default=16_000, ge=256, alias="maxTokens")
    max_retries: int = Field(default=4, ge=0, le=20, alias="maxRetries")
    max_retry_wait: float = Field(default=20.0, ge=0, alias="maxRetryWait")
    # Seconds without a byte of the model's streamed answer before it is given up as stalled.
    stall_timeout: float = Field(default=90.0, gt=0, alias="stallTimeout")
    data_dir: Path = Field(default_factory=default_data_dir, alias="dataDir")
    permission_mode: str | None = Field(default=None, alias="permissionMode")  # None: settings' defaultMode
    # Session-level rules (editor options / CLI flags): the highest-ranked permission source.
    allow: list[str] = Field(default=[])
    ask: list[str] = Field(default=[])
    deny: list[str] = Field(default=[])
    # Directories outside the cwd that count as the workspace (as the settings files' additionalDirectories).
    additional_directories: list[str] = Field(default=[], alias="additionalDirectories")
    context_window: int = Field(default=200_000, ge=1_000, alias="contextWindow")
    compact_threshold: float = Field(default=0.8, ge=0, le=1, alias="compactThreshold")
    mcp: dict[str, Any] = Field(default={})  # MCP settings (bridge/mcp/settings.py), checked there
    # Whether a folder's own settings may take effect (bridge/permissions/trust.py): "ask" the user (default),
    # "restricted" (never; VS Code's Restricted Mode), "trusted" (CI: --trust-folder). The environment's
    # AGENT_BRIDGE_TRUST_FOLDER wins over it.
    folder_trust: Literal["ask", "restricted", "trusted"] | None = Field(default=None, alias="folderTrust")

    @property
    def offline(self) -> bool:
        """The model is the offline demo model this process serves (`--offline`), not Claude."""
        server = sys.modules.get("bridge.offline.server")  # loaded only when this process serves one
        return server is not None and self.base_url in server.OfflineServer.running

    @classmethod
    def load(cls, overrides: dict[str, Any] | None = None) -> tuple[BridgeConfig, list[str]]:
        """Environment first, then the editor's options on top. Returns the config and the problems found."""
        values: dict[str, Any] = {}
        env = {
            "model": "AGENT_BRIDGE_MODEL",
            "api_key": "ANTHROPIC_API_KEY",
            "base_url": "ANTHROPIC_BASE_URL",
            "max_turns": "AGENT_BRIDGE_MAX_TURNS",
            "max_retries": "AGENT_BRIDGE_MAX_RETRIES",
            "max_retry_wait": "AGENT_BRIDGE_MAX_RETRY_WAIT",
            "stall_timeout": "AGENT_BRIDGE_STALL_TIMEOUT",
            "context_window": "AGENT_BRIDGE_CONTEXT_WINDOW",
            "compact_threshold": "AGENT_BRIDGE_COMPACT_THRESHOLD",
        }
        for field, var in env.items():
            if os.environ.get(var):
                values[field] = os.environ[var]
        problems: list[str] = []
        for key, value in (overrides or {}).items():
            name = _field_for(key)
            if name is None:
                continue
            values[name] = value
        config, invalid = defaulted(cls, values)
        return config, problems + invalid


def _field_for(key: str) -> str | None:
    for name, info in BridgeConfig.model_fields.items():
        if key in (name, info.alias):
            return name
    return None


def defaulted(model: type[M], values: dict[str, Any], *, prefix: str = "") -> tuple[M, list[str]]:
    """`model` from `values`, each field pydantic refuses left at its default: the settings and the problems found,
    as `setting PREFIX.FIELD: why (using the default)` (fully defaulted settings: a bad value never crashes)."""
    problems: list[str] = []
    while True:
        try:
            return model.model_validate(values), problems
        except ValidationError as error:
            bad = {str(item["loc"][0]) for item in error.errors() if item["loc"]}
            problems += [f"setting {prefix}{where} (using the default)" for where in validation_problems(error)]
            kept = {k: v for k, v in values.items() if k not in bad and _alias(model, k) not in bad}
            if kept == values:
                return model(), problems
            values = kept


def _alias(model: type[BaseModel], name: str) -> str:
    info = model.model_fields.get(name)
    return info.alias if info and info.alias else name
