"""A generation worker: samples G completions per prompt with its own copy of the policy.

``AsyncGRPO`` starts its generation workers as actors (``resonance_os.distributed``: a local process
by default, a Ray actor on a cluster) and sends every request the trainable weights to sample with,
so each batch is sampled by exactly the snapshot it was launched with (the trainer counts the lag).
Tensors come back on the CPU; the trainer moves them to its device.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

import torch

from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sampling import Samples, sample_ids


def samples_to(samples: Samples, device: torch.device | str) -> Samples:
    """``samples`` with every tensor moved to ``device`` (the same object when nothing moves)."""
    moved = {
        f.name: getattr(samples, f.name).to(device)
        for f in fields(samples)
        if isinstance(getattr(samples, f.name), torch.Tensor)
        and getattr(samples, f.name).device != torch.device(device)
    }
    return replace(samples, **moved) if moved else samples


class GenerationWorker:
    """Samples completions of the training prompts with the weights each request brings.

    Args:
        policy: a copy of the trained ``LMPolicy`` (pickled to the worker once).
        prompt_ids: the tokenized training prompts (requests name them by index).
        sampling: ``sample_ids`` keywords: ``n``, ``max_new_tokens``, ``temperature``, ``top_p``, ``stop``,
            ``dtype``.
    """

    def __init__(
        self, policy: LMPolicy, prompt_ids: Sequence[Sequence[int]], sampling: dict[str, Any]
    ) -> None:
        self.policy = policy
        self.prompt_ids = [list(ids) for ids in prompt_ids]
        self.sampling = dict(sampling)

    def generate(
        self, weights: Sequence[torch.Tensor], indices: Sequence[int], seed: int
    ) -> tuple[Samples, float]:
        """Load ``weights`` (the trainable parameters, in ``trainable_parameters()`` order), sample
        ``sampling["n"]`` completions of each prompt in ``indices`` with ``seed``; returns the samples
        (on the CPU) and the seconds this took."""
        start = time.perf_counter()
        with torch.no_grad():
            for parameter, value in zip(self.policy.trainable_parameters(), weights, strict=True):
                parameter.copy_(value)
        samples = sample_ids(self.policy, [self.prompt_ids[i] for i in indices], seed=seed, **self.sampling)
        return samples_to(samples, "cpu"), time.perf_counter() - start

    def cpu_seconds(self) -> float:
        """CPU time this worker's process has used so far (all its threads)."""
        return time.process_time()
