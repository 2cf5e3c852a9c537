"""OpenAI-compatible chat backend through the official ``openai`` SDK (extra ``llm``).

Works with any server that speaks the chat-completions API (OpenAI, vLLM, llama.cpp, Ollama, ...).
Configuration: arguments, else ``RESONANCE_LLM_BASE_URL`` / ``RESONANCE_LLM_MODEL`` /
``RESONANCE_LLM_API_KEY`` (or ``OPENAI_API_KEY``), else OpenAI's endpoint and ``gpt-4o-mini``;
``RESONANCE_LLM_TIMEOUT`` (seconds per request) and ``RESONANCE_LLM_MAX_TOKENS`` (reply limit) for a
slower server, such as ``resonance serve`` on a CPU (docs/serving.md).
Each request has a timeout; connection errors, timeouts, 429 and 5xx responses are retried with
exponential backoff by the SDK (``max_retries``). Failures become a ``BackendError`` naming the
server and the fix.
"""

from __future__ import annotations

import os

from resonance_os.generation.backends.base import BackendError

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_TOKENS = 400


def _positive_env(name: str, default: float, kind: type) -> float:
    """``$name`` as a positive ``kind`` (int or float), ``default`` when unset; ``BackendError`` otherwise."""
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise BackendError(f"${name}={raw!r} must be a positive {'whole ' if kind is int else ''}number")
    return value


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible server.

    Args:
        base_url: server root including ``/v1``; default ``$RESONANCE_LLM_BASE_URL`` or OpenAI.
        model: model name; default ``$RESONANCE_LLM_MODEL`` or ``gpt-4o-mini``.
        api_key: default ``$RESONANCE_LLM_API_KEY`` or ``$OPENAI_API_KEY``; servers without auth
            (a local vLLM or llama.cpp) get the placeholder ``"none"``.
        timeout: seconds per request (default ``$RESONANCE_LLM_TIMEOUT`` or 30). max_retries: retries
            with backoff (default 2). temperature: sampling temperature (default 0.7). max_tokens: reply
            limit (default ``$RESONANCE_LLM_MAX_TOKENS`` or 400).
    """

    name = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
        temperature: float = 0.7,
        max_tokens: int | None = None,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise BackendError(
                "the openai backend needs the `openai` package; install it with pip install 'resonance-os[llm]'"
            ) from None
        self._openai = openai
        self.base_url = base_url or os.environ.get("RESONANCE_LLM_BASE_URL") or DEFAULT_BASE_URL
        self.model = model or os.environ.get("RESONANCE_LLM_MODEL") or DEFAULT_MODEL
        key = api_key or os.environ.get("RESONANCE_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url == DEFAULT_BASE_URL:
                raise BackendError(
                    "no API key for the OpenAI API; set OPENAI_API_KEY or RESONANCE_LLM_API_KEY, or point "
                    "RESONANCE_LLM_BASE_URL at your own OpenAI-compatible server"
                )
            key = "none"
        if timeout is None:
            timeout = _positive_env("RESONANCE_LLM_TIMEOUT", DEFAULT_TIMEOUT_S, float)
        self.temperature = temperature
        self.max_tokens = max_tokens or _positive_env("RESONANCE_LLM_MAX_TOKENS", DEFAULT_MAX_TOKENS, int)
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=timeout, max_retries=max_retries
        )

    def sample(
        self,
        messages: list[dict[str, str]],
        n: int = 1,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """``n`` replies to ``messages``: one request with ``n=`` where the server honours it, else one
        request per missing reply (seeds ``seed + i``), each at most ``max_tokens`` tokens (default the
        backend's ``max_tokens``). Raises ``BackendError`` on any server failure."""
        limit = self.max_tokens if max_tokens is None else max_tokens
        replies = self._request(messages, n, seed, limit)
        while len(replies) < n:  # servers such as llama.cpp answer n > 1 with one choice
            replies += self._request(messages, 1, None if seed is None else seed + len(replies), limit)
        return replies[:n]

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The assistant's reply to ``messages``; raises ``BackendError`` on any server failure or an
        empty reply."""
        content = self._request(messages, 1, seed, self.max_tokens)[0]
        if not content:
            raise BackendError(
                f"the LLM server at {self.base_url} returned an empty reply for model {self.model!r}"
            )
        return content

    def _request(
        self, messages: list[dict[str, str]], n: int, seed: int | None, max_tokens: int
    ) -> list[str]:
        """The stripped contents of one chat-completions response (at least one, possibly ``""``)."""
        openai = self._openai
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                max_tokens=max_tokens,
                seed=seed,
                **({"n": n} if n > 1 else {}),
            )
        except openai.APITimeoutError:
            raise BackendError(
                f"the LLM server at {self.base_url} did not answer in time (after retries); "
                "check that it is running and not overloaded, or raise the timeout"
            ) from None
        except openai.APIConnectionError:
            raise BackendError(
                f"cannot reach the LLM server at {self.base_url}; start it or set RESONANCE_LLM_BASE_URL "
                "to a server that speaks the OpenAI chat-completions API"
            ) from None
        except openai.AuthenticationError:
            raise BackendError(
                f"the LLM server at {self.base_url} rejected the API key; set RESONANCE_LLM_API_KEY or OPENAI_API_KEY"
            ) from None
        except openai.NotFoundError:
            raise BackendError(
                f"the LLM server at {self.base_url} has no model {self.model!r}; set RESONANCE_LLM_MODEL "
                "to a model it serves"
            ) from None
        except openai.APIStatusError as exc:
            raise BackendError(
                f"the LLM server at {self.base_url} answered HTTP {exc.status_code}: {exc.message}"
            ) from None
        return [(choice.message.content or "").strip() for choice in response.choices or []] or [""]
