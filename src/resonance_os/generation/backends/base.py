"""What a language-model backend provides and the error it raises (lookup by name: ``lookup.py``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from resonance_os.core.errors import ResonanceError


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
