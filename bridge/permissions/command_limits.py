"""`sandbox.limits`: the bounds each sandboxed command runs in, as the settings files state them.

`{"sandbox": {"limits": {"memory": "8GB", "processes": 4096, "fileSize": "4GB", "cpuSeconds": 600}}}`: a
number (bytes, a count, seconds), a size with a unit (`"512MiB"`, `"8GB"`), for memory a share of the RAM
(`"50%"`), or `"unlimited"` (also `0`). Unset: the defaults below; invalid: reported, and the default used.
How the bounds are put on a command is bridge/execution/limits.py's business.
"""

from __future__ import annotations

import enum
import math
import os
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

LimitName = Literal["memory", "processes", "fileSize", "cpuSeconds"]
DEFAULT_PROCESSES = 4096  # tasks: processes and threads
DEFAULT_FILE_SIZE = 4 * 1024**3
CPU_GRACE = 5  # seconds between SIGXCPU and SIGKILL, and beyond the timeout's CPU seconds


class LimitsModel(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    memory: int | str | None = None
    processes: int | str | None = None
    fileSize: int | str | None = None
    cpuSeconds: int | float | str | None = None


@dataclass(frozen=True)
class Limits:
    """One command's bounds; None: none."""

    memory: int | None
    processes: int | None
    file_size: int | None
    cpu_seconds: int | None

    def value(self, name: LimitName) -> int | None:
        return {
            "memory": self.memory,
            "processes": self.processes,
            "fileSize": self.file_size,
            "cpuSeconds": self.cpu_seconds,
        }[name]

    def describe(self, name: LimitName) -> str:
        value = self.value(name)
        if value is None:
            return "unlimited"
        if name in ("memory", "fileSize"):
            return human_bytes(value)
        return f"{value} s" if name == "cpuSeconds" else f"{value} processes and threads"


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1000**4,
    "tib": 1024**4,
}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*+([a-zA-Z]*)")  # over stripped text (`\s*\s*` around an empty unit: O(n^2))


class Unset(enum.Enum):
    UNSET = "default"


UNSET = Unset.UNSET
Amount = int | Unset | None


def parse_amount(value: int | float | str | None, *, name: str, ram: int | None = None) -> Amount:
    """A setting's value: an int, None (unlimited) or UNSET (not set: the default). Raises ValueError."""
    if value is None:
        return UNSET
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected a number or a size, got {value!r}")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):  # NaN or Infinity: no amount (and no int)
            raise ValueError(f"{name}: not a number, got {value!r}")
        if value < 0:
            raise ValueError(f"{name}: must not be negative, got {value!r}")
        return None if value == 0 else math.ceil(value)
    text = value.strip().lower()
    if text in ("unlimited", "none", "off"):
        return None
    if text.endswith("%"):
        if ram is None:
            raise ValueError(f"{name}: a share (%) is for memory only, got {value!r}")
        try:
            share = float(text[:-1])
        except ValueError:
            raise ValueError(f"{name}: not a share of the RAM ({value!r}; e.g. 50%)") from None
        if not 0 < share <= 100:
            raise ValueError(f"{name}: a share of the RAM between 0 and 100%, got {value!r}")
        return int(ram * share / 100)
    match = _SIZE.fullmatch(text)
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"{name}: not a number or a size ({value!r}; e.g. 8GB, 512MiB, unlimited)")
    return math.ceil(float(match.group(1)) * _UNITS[match.group(2)])


def ram_bytes() -> int:
    """The machine's physical memory (8 GiB where it can't be read)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


_DEFAULT_CEILING: dict[str, int | None] = {
    "memory": None,
    "processes": DEFAULT_PROCESSES,
    "fileSize": DEFAULT_FILE_SIZE,
    "cpuSeconds": None,
}


def widening_limits(raw: object, *, ram: int) -> list[tuple[str, str]]:
    """The limits of a `sandbox.limits` object that let a command use more than the defaults — unlimited, memory
    over half the RAM, processes or file size over the defaults — as (key, the text a trust question shows). A
    folder's own settings file may lower limits at once; these wait until the user trusts the folder."""
    if not isinstance(raw, dict):
        return []
    out: list[tuple[str, str]] = []
    for key, ceiling in _DEFAULT_CEILING.items():
        value = raw.get(key)
        try:
            amount = parse_amount(value, name=key, ram=ram if key == "memory" else None)
        except ValueError:
            continue  # invalid: the policy reports it and uses the default
        limit = ram // 2 if key == "memory" else ceiling
        if amount is None or (isinstance(amount, int) and limit is not None and amount > limit):
            out.append((key, f"limits.{key}: {value} (commands may use more than the default)"))
    return out


def human_bytes(value: int) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{value} bytes"


@dataclass(frozen=True)
class LimitSettings:
    """What the settings say: each UNSET (the default), None (unlimited) or a value."""

    memory: Amount = UNSET
    processes: Amount = UNSET
    file_size: Amount = UNSET
    cpu_seconds: Amount = UNSET

    @classmethod
    def of(cls, model: LimitsModel | None, problems: list[str], where: str, *, ram: int) -> LimitSettings:
        if model is None:
            return cls()
        values: list[Amount] = []
        for key, share in (("memory", ram), ("processes", None), ("fileSize", None), ("cpuSeconds", None)):
            try:
                values.append(parse_amount(getattr(model, key), name=f"sandbox.limits.{key}", ram=share))
            except ValueError as error:
                problems.append(f"{where}: {error}; the default is used")
                values.append(UNSET)
        return cls(*values)

    def without(self, keys: list[str]) -> LimitSettings:
        """These settings with the limits named (settings keys: memory, processes, fileSize, cpuSeconds) unset."""
        return LimitSettings(
            *(
                UNSET if key in keys else value
                for key, value in (
                    ("memory", self.memory),
                    ("processes", self.processes),
                    ("fileSize", self.file_size),
                    ("cpuSeconds", self.cpu_seconds),
                )
            )
        )

    def merged_over(self, lower: LimitSettings) -> LimitSettings:
        """These values where set, else `lower`'s (files are read highest precedence first)."""
        mine = (self.memory, self.processes, self.file_size, self.cpu_seconds)
        theirs = (lower.memory, lower.processes, lower.file_size, lower.cpu_seconds)
        return LimitSettings(*(a if a is not UNSET else b for a, b in zip(mine, theirs, strict=True)))

    def resolve(self, *, timeout_s: float | None, default_memory: int, cpus: int) -> Limits:
        """The bounds of one command. `timeout_s` None: a background shell, with no CPU bound by default (a
        server runs for as long as the session)."""
        cpu = math.ceil(timeout_s * cpus) + CPU_GRACE if timeout_s is not None else None
        return Limits(
            memory=default_memory if self.memory is UNSET else self.memory,
            processes=DEFAULT_PROCESSES if self.processes is UNSET else self.processes,
            file_size=DEFAULT_FILE_SIZE if self.file_size is UNSET else self.file_size,
            cpu_seconds=cpu if self.cpu_seconds is UNSET else self.cpu_seconds,
        )
