"""Errors the RL engine raises for user mistakes (bad config, mismatched env, broken checkpoint).

The engine imports nothing of ResonanceOS, so it has its own base class; the CLI and API treat
``RLError`` exactly like ``ResonanceError``: one clear line, no traceback.
"""

from __future__ import annotations


class RLError(Exception):
    """Base class of user-caused errors in ``resonance_os.rl`` and the packages built on it."""

    http_status: int = 400

    @property
    def type_name(self) -> str:
        return type(self).__name__


class ConfigError(RLError, ValueError):
    """A hyperparameter or config file is invalid; the message names the field and the fix."""

    http_status = 422


class EnvMismatchError(RLError):
    """An environment is incompatible (spaces do not match the model) or misbehaves (NaN, wrong shape)."""


class CheckpointError(RLError):
    """A checkpoint folder is missing, corrupt, or written by an incompatible format version."""


class LogDirError(RLError):
    """The metrics or checkpoint directory cannot be created or written."""


class CurveFitError(RLError, ValueError):
    """A compute curve cannot be fitted: too few points, a metric that does not rise, bad bounds or columns."""

    http_status = 422
