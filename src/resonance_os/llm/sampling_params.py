"""What one generation request asks for (``SamplingParams``) and what it gets back (``Completion``).

The names and ranges are the OpenAI API's (``max_tokens``, ``temperature`` in [0, 2], ``top_p`` in
(0, 1], ``n``, ``stop``, ``seed``, ``logprobs``/``top_logprobs`` up to 20, ``presence_penalty`` and
``frequency_penalty`` in [-2, 2]) plus vLLM's ``top_k``, ``stop_token_ids``, ``ignore_eos`` and ``repetition_penalty`` (CTRL's, over prompt and completion, as
transformers' ``generate``) and transformers' ``no_repeat_ngram_size``, and vLLM's/Tinker's prompt
log-probs (``prompt_logprobs``: ``log p(prompt[i] | prompt[:i])`` under the plain model, no temperature;
``prompt_logprobs_last_n``: only the last N prompt tokens, so the start may come from the prefix store).
Log-probabilities are ``log softmax(z / T)`` of the sampled token (after temperature and penalties,
before the top-k/top-p cut; ``T = 0`` reports ``T = 1``), the number ``LMPolicy.token_logprobs(...,
temperature=T)`` recomputes, so an RL trainer can use them as the sampler's log-probs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resonance_os.llm.errors import ConfigError

MAX_TOP_LOGPROBS = 20
MAX_STOP_STRINGS = 16


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


@dataclass(frozen=True)
class SamplingParams:
    """How to sample a request's ``n`` completions. Bad values raise ``ConfigError`` naming the field."""

    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    n: int = 1
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    prompt_logprobs: bool = False
    prompt_logprobs_last_n: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "stop_token_ids", tuple(self.stop_token_ids))
        checks = [
            ("max_tokens", _is_int(self.max_tokens) and self.max_tokens >= 1, "an integer >= 1"),
            (
                "temperature",
                _is_number(self.temperature) and 0 <= self.temperature <= 2,
                "a number in [0, 2] (0 = greedy)",
            ),
            ("top_p", _is_number(self.top_p) and 0 < self.top_p <= 1, "a number in (0, 1]"),
            ("top_k", _is_int(self.top_k) and self.top_k >= 0, "an integer >= 0 (0 = no cut)"),
            ("n", _is_int(self.n) and self.n >= 1, "an integer >= 1"),
            (
                "stop",
                len(self.stop) <= MAX_STOP_STRINGS and all(isinstance(s, str) and s for s in self.stop),
                f"at most {MAX_STOP_STRINGS} non-empty strings",
            ),
            (
                "stop_token_ids",
                all(_is_int(t) and t >= 0 for t in self.stop_token_ids),
                "token ids (integers >= 0)",
            ),
            ("seed", self.seed is None or _is_int(self.seed), "an integer"),
            (
                "top_logprobs",
                _is_int(self.top_logprobs) and 0 <= self.top_logprobs <= MAX_TOP_LOGPROBS,
                f"an integer in [0, {MAX_TOP_LOGPROBS}]",
            ),
            (
                "presence_penalty",
                _is_number(self.presence_penalty) and -2 <= self.presence_penalty <= 2,
                "a number in [-2, 2]",
            ),
            (
                "frequency_penalty",
                _is_number(self.frequency_penalty) and -2 <= self.frequency_penalty <= 2,
                "a number in [-2, 2]",
            ),
            (
                "repetition_penalty",
                _is_number(self.repetition_penalty) and 0 < self.repetition_penalty <= 2,
                "a number in (0, 2] (1 = none)",
            ),
            (
                "no_repeat_ngram_size",
                _is_int(self.no_repeat_ngram_size) and self.no_repeat_ngram_size >= 0,
                "an integer >= 0 (0 = off)",
            ),
        ]
        checks.append(
            (
                "prompt_logprobs_last_n",
                self.prompt_logprobs_last_n is None
                or (
                    self.prompt_logprobs
                    and _is_int(self.prompt_logprobs_last_n)
                    and self.prompt_logprobs_last_n >= 1
                ),
                "an integer >= 1, with prompt_logprobs=True (None: the whole prompt)",
            )
        )
        for name, ok, expected in checks:
            if not ok:
                raise ConfigError(f"{name}={getattr(self, name)!r} must be {expected}")

    @property
    def penalised(self) -> bool:
        return self.presence_penalty != 0 or self.frequency_penalty != 0

    @property
    def needs_history(self) -> bool:
        """Whether sampling looks at the tokens so far (prompt included): repetition penalty or n-gram ban."""
        return self.repetition_penalty != 1 or self.no_repeat_ngram_size > 0


@dataclass
class TokenLogprob:
    """One completion token's log-probability and, when asked, the ``top_logprobs`` most likely tokens."""

    token_id: int
    logprob: float
    top: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class ChoiceDelta:
    """What one step added to choice ``index``: token ids, the newly visible text, their log-probs,
    and ``finish_reason`` (``"stop"`` or ``"length"``) on the choice's last delta."""

    index: int
    token_ids: list[int]
    text: str
    logprobs: list[TokenLogprob]
    finish_reason: str | None = None


@dataclass
class Choice:
    """One completion: its token ids (EOS or the stop-completing token included, as sampled), its text
    (special tokens skipped, cut before a stop string), log-probs (when asked) and why it ended."""

    index: int
    token_ids: list[int] = field(default_factory=list)
    text: str = ""
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finish_reason: str | None = None

    def add(self, delta: ChoiceDelta) -> None:
        self.token_ids += delta.token_ids
        self.text += delta.text
        self.logprobs += delta.logprobs
        self.finish_reason = delta.finish_reason or self.finish_reason


@dataclass
class Completion:
    """A finished request: its prompt's token ids and its ``n`` choices; ``ttft_s`` is the time from
    submission to the first token, ``prefill_tokens`` the prompt tokens computed for it (the rest
    came from the prefix store); ``prompt_logprobs`` (when asked) one entry per prompt token, None
    where not scored (the first token, and those before ``prompt_logprobs_last_n``)."""

    prompt_token_ids: list[int]
    choices: list[Choice]
    ttft_s: float | None = None
    prefill_tokens: int = 0
    prompt_logprobs: list[float | None] | None = None

    @property
    def completion_tokens(self) -> int:
        return sum(len(c.token_ids) for c in self.choices)
