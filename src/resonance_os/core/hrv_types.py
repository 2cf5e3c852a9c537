"""HRV vector and profile types, and the validation every boundary uses."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from resonance_os.core.errors import InvalidHRVError
from resonance_os.core.hrv_constants import DEFAULT_TARGET_HRV, HRV_DIM, HRV_DIMENSIONS


def mean_gap(target: Iterable[float], measured: Iterable[float]) -> float:
    """Mean absolute difference between two HRVs, ``mean_d |target_d - measured_d|`` (the writer's
    "mean |gap|"; the style term is ``1 -`` this)."""
    gaps = [abs(t - m) for t, m in zip(target, measured, strict=True)]
    return sum(gaps) / len(gaps)


def validate_hrv(values: Iterable[float] | Mapping[str, float], *, what: str = "HRV") -> list[float]:
    """Return ``values`` as a list of 8 floats in ``HRV_DIMENSIONS`` order, or raise ``InvalidHRVError``.

    Accepts a sequence of 8 numbers or a mapping from every dimension name to a number. The error
    names the offending dimension and value and says what is accepted.
    """
    if isinstance(values, str):
        raise InvalidHRVError(f"{what} must be 8 numbers, got the string {values!r}")
    if isinstance(values, Mapping):
        missing = [d for d in HRV_DIMENSIONS if d not in values]
        extra = [k for k in values if k not in HRV_DIMENSIONS]
        if missing or extra:
            raise InvalidHRVError(
                f"{what} mapping must have exactly the keys {HRV_DIMENSIONS}; "
                f"missing {missing}, unknown {extra}"
            )
        values = [values[d] for d in HRV_DIMENSIONS]
    try:
        items = list(values)
    except TypeError:
        raise InvalidHRVError(
            f"{what} must be a sequence of {HRV_DIM} numbers, got {type(values).__name__}"
        ) from None
    if len(items) != HRV_DIM:
        raise InvalidHRVError(
            f"{what} must have {HRV_DIM} values ({', '.join(HRV_DIMENSIONS)}), got {len(items)}"
        )
    result: list[float] = []
    for name, raw in zip(HRV_DIMENSIONS, items):
        if isinstance(raw, bool):
            raise InvalidHRVError(f"{what} {name} must be a number in [0, 1], got {raw!r}")
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise InvalidHRVError(f"{what} {name} must be a number in [0, 1], got {raw!r}") from None
        if not math.isfinite(value):
            raise InvalidHRVError(
                f"{what} {name} is {value}; every dimension must be a finite number in [0, 1]"
            )
        if not 0.0 <= value <= 1.0:
            raise InvalidHRVError(f"{what} {name} = {value} is outside [0, 1]; rescale it into [0, 1]")
        result.append(value)
    return result


def default_target() -> list[float]:
    """The documented default target (``DEFAULT_TARGET_HRV``, the built-in ``professional`` profile's
    vector) as 8 floats in ``HRV_DIMENSIONS`` order; a fresh list each call."""
    return validate_hrv(DEFAULT_TARGET_HRV, what="default target HRV")


@dataclass(frozen=True)
class HRVVector:
    """An immutable, validated HRV: 8 floats in [0, 1] in ``HRV_DIMENSIONS`` order."""

    values: tuple[float, ...]

    def __init__(self, values: Iterable[float] | Mapping[str, float]) -> None:
        object.__setattr__(self, "values", tuple(validate_hrv(values)))

    def __getitem__(self, key: int | str) -> float:
        if isinstance(key, str):
            return self.values[HRV_DIMENSIONS.index(key)]
        return self.values[key]

    def __iter__(self):
        return iter(self.values)

    def __len__(self) -> int:
        return HRV_DIM

    def to_list(self) -> list[float]:
        return list(self.values)

    def to_dict(self) -> dict[str, float]:
        return dict(zip(HRV_DIMENSIONS, self.values))

    def to_numpy(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.float64)


@dataclass
class HRVProfile:
    """A named target HRV for a tenant, with optional description and version metadata."""

    name: str
    vector: HRVVector
    tenant: str = "default"
    description: str | None = None
    version: int = 1
    metadata: dict[str, object] = field(default_factory=dict)
    created_at: datetime | None = None
    """When version 1 was saved (UTC); None for profiles that were never stored."""
    updated_at: datetime | None = None
    """When this version was saved (UTC); None for profiles that were never stored."""

    def __post_init__(self) -> None:
        if not isinstance(self.vector, HRVVector):
            self.vector = HRVVector(self.vector)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form: the vector as a name -> value map, times as ISO 8601 strings."""
        return {
            "tenant": self.tenant,
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "hrv": self.vector.to_dict(),
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "metadata": dict(self.metadata),
        }

    @property
    def key(self) -> str:
        """``"tenant/name"``, the form the CLI and API accept."""
        return f"{self.tenant}/{self.name}"
