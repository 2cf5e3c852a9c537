"""Asynchronous GRPO: generation and scoring on workers, up to k steps ahead of training.

The synchronous trainer (``llm.grpo.GRPO``) runs each step as generate -> score -> train in one
process, so while it trains the generator and the verifiers wait, and while they work the trainer
waits. ``AsyncGRPO`` moves generation to **generation workers** (``llm.generation_worker``), each
an actor with its own copy of the policy, and keeps up to ``max_policy_lag`` batches in flight,
PipelineRL / Atropos style (NousCoder's pipeline): a batch is sampled on a worker with a snapshot of
the weights, handed to the scorers (the reward callables: with ``verify.CodeReward`` over a
``RemoteVerifierPool``, the sandbox actors) as soon as it is sampled, while the workers go on:

    step s:  take batch s (sampled with the weights of step s - k, scored meanwhile)
             queue batches up to s + k, each with a snapshot of the current weights
             advantages, filters, K epochs of updates on batch s   (while batches s+1..s+k are worked on)

Where the workers run is a ``distributed`` placement: local processes (the default) or Ray actors
(``RayCluster(address)``, a command line's ``--ray ADDRESS``); the code path is the same.

Bounded staleness: at most ``max_policy_lag`` = k batches are in flight, so every batch trains the
policy exactly k updates after the one that sampled it (``policy_lag``; the first steps, with less
in flight, have smaller lags, the very first is on-policy). The loss uses the sampling log-probs as
pi_old, so the lag is corrected as any off-policy PPO/GRPO update is, bounded by the clip. With
``GRPOConfig.rollout_dtype`` the workers sample in that dtype, pi_old is the trained policy's before
the update, and ``rollout_correction`` weighs both the lag and the precision away (decoupled PPO).
``max_policy_lag=0`` is the synchronous schedule on the same workers (generate, score, then train).
Overlong filtering, DAPO's soft punishment and dynamic sampling come from ``GRPOConfig`` as in
``GRPO`` (dynamic sampling's extra rounds are generated on a worker with the current weights).

With k >= 2 batches are scored concurrently (up to k reward calls at once, on k threads): reward
callables must be thread-safe (``CodeReward`` is).

Extra metrics per step: ``policy_lag``, ``time_wait_batch`` (the trainer waiting for its batch),
``time_generate_background`` / ``time_score_background`` (the workers' time on the batch trained),
``generator_busy_fraction``. Same seed, same metrics (apart from timing); a run resumed from a
checkpoint restarts the pipeline (its first step is on-policy), so it differs from there on.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch

from resonance_os.distributed import Actor, LocalProcesses, Placement, preload_in_local_processes
from resonance_os.llm.generation_worker import GenerationWorker, samples_to
from resonance_os.llm.grpo import GRPO, GRPOConfig
from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sampling import Samples
from resonance_os.rl.errors import ConfigError

Batch = tuple[Samples, torch.Tensor, dict[str, torch.Tensor], list[float]]
# what a generation worker imports to unpickle a policy, done once by local actors' fork server
preload_in_local_processes("resonance_os.llm.generation_worker", "transformers", "peft")


class AsyncGRPO(GRPO):
    """GRPO with generation on worker actors and up to ``max_policy_lag`` batches in flight.

    Same arguments as ``GRPO``, plus:

    Args:
        max_policy_lag: k, batches in flight (1: PipelineRL's one step; 0: synchronous, on the same
            workers). 1.
        placement: where the generation workers run: ``distributed.LocalProcesses()`` (default, closed
            with the trainer) or ``distributed.RayCluster(address)`` (the caller closes it).
        generators: generation workers; batch s is sampled by worker s mod ``generators``. 1.

    Call ``close()`` when done (or use the trainer as a context manager).
    """

    def __init__(
        self,
        policy: LMPolicy,
        reward_fn: Any,
        prompts: Sequence[Any],
        config: GRPOConfig | dict[str, Any] | None = None,
        *,
        max_policy_lag: int = 1,
        placement: Placement | None = None,
        generators: int = 1,
        **kwargs: Any,
    ) -> None:
        for name, value, least in (("max_policy_lag", max_policy_lag, 0), ("generators", generators, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{name}={value!r} must be an integer >= {least}")
        server = (
            config.get("rollout_server")
            if isinstance(config, dict)
            else getattr(config, "rollout_server", None)
        )
        if kwargs.get("rollout_server", server) is not None:
            raise ConfigError(
                "AsyncGRPO samples on its own generation workers; GRPOConfig.rollout_server is for GRPO "
                "(HR-GRPO, and RLVR without a placement)"
            )
        super().__init__(policy, reward_fn, prompts, config, **kwargs)
        self.max_policy_lag = max_policy_lag
        self._owns_placement = placement is None
        self.placement: Placement = (
            placement if placement is not None else LocalProcesses(_modules_of(policy))
        )
        cfg = self.config
        sampling = {
            "n": cfg.group_size, "max_new_tokens": cfg.max_new_tokens, "temperature": cfg.temperature,
            "top_p": cfg.top_p, "stop": list(cfg.stop), "dtype": self.rollout_dtype,
        }  # fmt: skip
        self._turn = itertools.count()
        self._scorer = ThreadPoolExecutor(max_workers=max(1, max_policy_lag), thread_name_prefix="scorer")
        self._in_flight: dict[int, tuple[tuple[tuple[int, ...], int], int, Future[Batch]]] = {}
        self._step_metrics: dict[str, float] = {}
        self._generators: list[Actor] = []
        try:
            for index in range(generators):
                self._generators.append(
                    self.placement.start(
                        GenerationWorker,
                        policy,
                        self._prompt_ids,
                        sampling,
                        name=f"generator-{index}",
                        num_gpus=1 if policy.device.type == "cuda" else 0,
                    )  # fmt: skip
                )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the workers (batches in flight are finished, then dropped)."""
        self._scorer.shutdown(wait=True)
        self._in_flight.clear()
        for generator in self._generators:
            generator.stop()
        self._generators = []
        if self._owns_placement:
            self.placement.close()

    def generator_cpu_seconds(self) -> float:
        """CPU seconds the generation workers' processes have used so far, summed."""
        return sum(future.result() for future in [g.call("cpu_seconds") for g in self._generators])

    def __enter__(self) -> AsyncGRPO:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the workers: generation on a generation worker, then scoring on a scorer thread
    def _request_generation(self, indices: list[int], seed: int) -> Future[tuple[Samples, float]]:
        """Sample ``indices`` on the next worker with the weights as they are now (a CPU copy)."""
        weights = [p.detach().to("cpu", copy=True) for p in self.policy.trainable_parameters()]
        generator = self._generators[next(self._turn) % len(self._generators)]
        return generator.call("generate", weights, indices, seed)

    def _generate(self, indices: list[int], seed: int, policy: LMPolicy | None = None) -> Samples:
        """Generation now (the synchronous schedule, the first step, dynamic sampling's rounds): on a
        worker, with the current weights."""
        samples, _ = self._request_generation(indices, seed).result()
        return samples_to(samples, self.policy.device)

    def _score_when_generated(self, indices: list[int], generated: Future[tuple[Samples, float]]) -> Batch:
        samples, generate_seconds = generated.result()
        samples = samples_to(samples, self.policy.device)
        start = time.perf_counter()
        rewards, per_function = self._score(indices, samples)
        return samples, rewards, per_function, [generate_seconds, time.perf_counter() - start]

    def _launch(self, step: int) -> None:
        """Queue ``step``'s batch with the weights as they are now (before this step's update)."""
        indices, seed = self._prompt_indices(step), self._stream_seed(step, 0)
        generated = self._request_generation(indices, seed)
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
        else:  # nothing in flight (the first step, after a resume, k = 0): generate on-policy now
            batch = super()._generate_and_score(indices, seed)
            waited, lag, background = sum(batch[3]), 0, batch[3]
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


def _modules_of(policy: LMPolicy) -> list[str]:
    """The modules a worker imports to unpickle ``policy`` (preloaded once by local processes)."""
    objects = [policy.tokenizer, *policy.model.modules()]
    return sorted({type(obj).__module__ for obj in objects})
