"""Errors of the LM RL layer: user mistakes (bad config, prompt too long, broken checkpoint).

They subclass ``rl``'s error family, so the CLI and API report them like any ``RLError``: one clear
line, no traceback. Bad hyperparameters raise ``resonance_os.rl.errors.ConfigError`` directly.
"""

from __future__ import annotations

from resonance_os.rl.errors import CheckpointError, ConfigError, RLError

__all__ = ["CheckpointError", "ConfigError", "LLMError", "PromptTooLongError", "ReferenceUnavailableError"]


class LLMError(RLError):
    """Base class of user-caused errors in ``resonance_os.llm``."""


class PromptTooLongError(LLMError, ValueError):
    """A prompt plus the completion budget does not fit the model's context window."""

    http_status = 422


class ReferenceUnavailableError(LLMError):
    """The reference policy was asked for but the policy keeps none (full fine-tuning without a copy)."""

    http_status = 409
