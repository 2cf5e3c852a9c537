"""Asynchronous GRPO: the next steps' generation and scoring overlap this step's training.

The synchronous trainer (``llm.grpo.GRPO``) runs each step as generate -> score -> train, so while it
trains the generator and the verifiers (``verify.VerifierPool`` behind a reward callable) wait, and
while they work the trainer waits. ``AsyncGRPO`` keeps an inference copy of the policy and two
workers, PipelineRL / Atropos style (NousCoder's pipeline): a generator thread samples batch after
batch and hands each to a scorer thread (the verifiers), and goes on with the next one:

    step s:  take batch s (generated with the weights of step s - k, scored meanwhile)
             queue batch s + k with a snapshot of the current weights
             advantages, filters, K epochs of updates on batch s   (while batches s+1..s+k are worked on)

Bounded staleness: at most ``max_policy_lag`` = k batches are in flight, so every batch trains the
policy exactly k updates after the one that sampled it (``policy_lag``; the first steps, with less
in flight, have smaller lags, the very first is on-policy). The loss uses the sampling log-probs as
pi_old, so the lag is corrected as any off-policy PPO/GRPO update is, bounded by the clip. Overlong
filtering, DAPO's soft punishment and dynamic sampling come from ``GRPOConfig`` as in ``GRPO``
(dynamic sampling's extra rounds run synchronously, on the current policy).

Extra metrics per step: ``policy_lag``, ``time_wait_batch`` (the trainer waiting for its batch),
``time_generate_background`` / ``time_score_background`` (the workers' time on the batch trained),
``generator_busy_fraction``. Same seed, same metrics (apart from timing); a run resumed from a
checkpoint restarts the pipeline (its first step is on-policy), so it differs from there on.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch

from resonance_os.llm.grpo import GRPO, GRPOConfig
from resonance_os.llm.policy import LMPolicy
from resonance_os.rl.errors import ConfigError

Batch = tuple[Any, torch.Tensor, dict[str, torch.Tensor], list[float]]


class AsyncGRPO(GRPO):
    """GRPO with generation and scoring up to ``max_policy_lag`` steps ahead of training.

    Same arguments as ``GRPO``, plus ``max_policy_lag`` (1: PipelineRL's one step; k: k batches in
    flight, each generated with the weights k updates old). Call ``close()`` when done.
    """

    def __init__(
        self,
        policy: LMPolicy,
        reward_fn: Any,
        prompts: Sequence[Any],
        config: GRPOConfig | dict[str, Any] | None = None,
        *,
        max_policy_lag: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(policy, reward_fn, prompts, config, **kwargs)
        if isinstance(max_policy_lag, bool) or not isinstance(max_policy_lag, int) or max_policy_lag < 1:
            raise ConfigError(
                f"max_policy_lag={max_policy_lag!r} must be an integer >= 1 (batches in flight)"
            )
        self.max_policy_lag = max_policy_lag
        self._inference_policy = copy.deepcopy(policy)
        self._generator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="generator")
        self._scorer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorer")
        self._in_flight: dict[int, tuple[tuple[tuple[int, ...], int], int, Future[Batch]]] = {}
        self._step_metrics: dict[str, float] = {}

    def close(self) -> None:
        """Stop the generation and scoring workers (batches in flight are finished, then dropped)."""
        self._generator.shutdown(wait=True)
        self._scorer.shutdown(wait=True)
        self._in_flight.clear()

    # -- the workers: generation on the inference copy, then scoring, each on its own thread
    def _generate_with(self, indices: list[int], seed: int, weights: list[torch.Tensor]) -> tuple[Any, float]:
        start = time.perf_counter()
        with torch.no_grad():
            for parameter, value in zip(self._inference_policy.trainable_parameters(), weights, strict=True):
                parameter.copy_(value)
        samples = self._generate(indices, seed, self._inference_policy)
        return samples, time.perf_counter() - start

    def _score_when_generated(self, indices: list[int], generated: Future[tuple[Any, float]]) -> Batch:
        samples, generate_seconds = generated.result()
        start = time.perf_counter()
        rewards, per_function = self._score(indices, samples)
        return samples, rewards, per_function, [generate_seconds, time.perf_counter() - start]

    def _launch(self, step: int) -> None:
        """Queue ``step``'s batch with the weights as they are now (before this step's update)."""
        indices, seed = self._prompt_indices(step), self._stream_seed(step, 0)
        weights = [parameter.detach().clone() for parameter in self.policy.trainable_parameters()]
        generated = self._generator.submit(self._generate_with, indices, seed, weights)
        scored = self._scorer.submit(self._score_when_generated, indices, generated)
        self._in_flight[step] = ((tuple(indices), seed), self.num_timesteps, scored)

    # -- the trainer's side
    def _generate_and_score(self, indices: list[int], seed: int) -> Batch:
        step = self.num_timesteps
        if seed != self._stream_seed(step, 0):  # dynamic sampling's extra rounds: on the current policy
            return super()._generate_and_score(indices, seed)
        entry = self._in_flight.pop(step, None)
        if entry is not None and entry[0] == (tuple(indices), seed):
            waited = time.perf_counter()
            samples, rewards, per_function, times = entry[2].result()
            waited = time.perf_counter() - waited
            lag, background = step - entry[1], times
            batch: Batch = (samples, rewards, per_function, [waited, 0.0])
        else:  # nothing in flight (the first step, or after a resume): generate on-policy now
            batch = super()._generate_and_score(indices, seed)
            waited, lag, background = sum(batch[3]), 0, [0.0, 0.0]
        self._step_metrics = {
            "policy_lag": float(lag),
            "time_wait_batch": waited,
            "time_generate_background": background[0],
            "time_score_background": background[1],
        }
        for ahead in range(step + 1, step + 1 + self.max_policy_lag):
            if ahead not in self._in_flight:
                self._launch(ahead)
        return batch

    def _train_step(self, step: int) -> dict[str, float]:
        metrics = super()._train_step(step)
        metrics.update(self._step_metrics)
        generating = self._step_metrics["time_generate_background"]
        metrics["generator_busy_fraction"] = min(1.0, generating / max(metrics["time_step"], 1e-9))
        return metrics
