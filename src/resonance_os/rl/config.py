"""JSON round-trip shared by the algorithms' hyperparameter dataclasses (PPO, SAC, GP control, GRPO).

A config class is ``@dataclass class XConfig(JsonConfig)`` with ``config_name = "X"``; it gets
``to_dict``, ``to_json``, ``from_dict`` (an unknown key is a ``ConfigError`` naming it and the known
settings) and ``from_json`` (malformed JSON or a non-object is a ``ConfigError`` too).
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any, ClassVar, TypeVar

from resonance_os.rl.errors import ConfigError

C = TypeVar("C", bound="JsonConfig")


class JsonConfig:
    """Mixin for a dataclass of settings: dict and JSON forms, with errors that name the bad key."""

    config_name: ClassVar[str] = "config"
    """How errors name the config ("PPO" -> "unknown PPO settings [...]")."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls: type[C], data: dict[str, Any]) -> C:
        """Build from a dict, naming any unknown key."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"unknown {cls.config_name} settings {unknown}; known settings are {sorted(known)}"
            )
        return cls(**data)

    @classmethod
    def from_json(cls: type[C], text: str) -> C:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{cls.config_name} config is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{cls.config_name} config JSON must be an object of settings")
        return cls.from_dict(data)
