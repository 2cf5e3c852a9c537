"""A chat backend over a trained ``llm.policy.LMPolicy``: the writer drafts with a fine-tuned model.

The replies are sampled with the engine's own loop (``llm.sampling.sample``: chat template, KV cache,
the LoRA update folded into temporary weights), the way GRPO sampled the model while training it, so
the drafts come from the distribution that was trained; a blank line ends a reply (one paragraph), as
in the local backend. HR-GRPO run folders (``evolution.hr_grpo_run``) build one with the run's
sampling settings.
"""

from __future__ import annotations

import secrets
from typing import Any

from resonance_os.generation.backends.base import BackendError
from resonance_os.generation.backends.local import STOP_STRINGS


class PolicyBackend:
    """Chat completions from an ``LMPolicy`` (base model + adapter) in this process.

    Args:
        policy: the ``LMPolicy`` to sample (its tokenizer needs a chat template).
        name: what ``Article.backend`` reports (default ``"policy"``).
        max_new_tokens: reply limit per candidate (default 100). temperature, top_p: sampling (0.8, 0.95,
            HR-GRPO's training values).
    """

    def __init__(
        self,
        policy: Any,
        name: str = "policy",
        max_new_tokens: int = 100,
        temperature: float = 0.8,
        top_p: float = 0.95,
    ) -> None:
        self.policy, self.name = policy, name
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p

    def sample(
        self,
        messages: list[dict[str, str]],
        n: int = 1,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """``n`` sampled replies to ``messages`` in one batch (empty replies included, as ``""``); the
        same ``seed`` gives the same replies (``None``: a fresh seed); ``max_tokens`` overrides
        ``max_new_tokens`` for this call."""
        from resonance_os.llm.sampling import sample

        if seed is None:
            seed = secrets.randbelow(2**31)

        out = sample(
            self.policy, [messages], n=n, max_new_tokens=self.max_new_tokens if max_tokens is None else max_tokens, temperature=self.temperature,
            top_p=self.top_p, stop=list(STOP_STRINGS), seed=int(seed),
        )  # fmt: skip
        return [text.strip() for text in out.texts]

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The policy's reply to ``messages``; the same ``seed`` gives the same reply."""
        reply = self.sample(messages, 1, seed)[0]
        if not reply:
            raise BackendError("the policy returned an empty reply; try another seed")
        return reply
