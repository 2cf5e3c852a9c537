"""What a language-model backend provides, the error it raises, and backend lookup by name."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from resonance_os.core.errors import ResonanceError, ValidationError

BACKEND_NAMES = ("builtin", "openai", "local")


class BackendError(ResonanceError):
    """A text backend failed: the LLM server is unreachable, timed out, refused the key or the model."""

    http_status = 502


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model: ``complete(messages)`` returns the assistant's reply text.

    ``messages`` are OpenAI-style ``{"role": "system"|"user"|"assistant", "content": str}`` dicts;
    ``seed`` is passed on where the model supports it (same seed, same text on deterministic servers).
    """

    name: str

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str: ...


def get_backend(backend: object = None):
    """A backend from a name (``builtin``, ``openai``, ``local``), an instance, or ``None`` (built-in)."""
    from resonance_os.generation.backends.builtin import BuiltinComposer

    if backend is None or backend == "builtin":
        return BuiltinComposer()
    if backend == "openai":
        from resonance_os.generation.backends.openai_backend import OpenAIBackend

        return OpenAIBackend()
    if backend == "local":
        from resonance_os.generation.backends.local import LocalBackend

        return LocalBackend()
    if isinstance(backend, (BuiltinComposer, ChatBackend)):
        return backend
    raise ValidationError(
        f"unknown backend {backend!r}; use one of {', '.join(BACKEND_NAMES)} or pass a backend object "
        "with a complete(messages, seed) method"
    )
