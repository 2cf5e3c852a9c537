"""The verifier pool as actors: sandboxes in worker processes of this machine or on a Ray cluster.

``RemoteVerifierPool(placement, actors=2, workers=4)`` starts ``actors`` :class:`VerifierWorker`
actors through a ``distributed`` placement (``LocalProcesses()``: child processes here;
``RayCluster(address)``: Ray actors, one sandbox pool per actor wherever Ray puts it), each with its
own ``Sandbox`` and a ``VerifierPool`` of ``workers`` concurrent runs. It has the surface
``CodeReward`` uses (``submit``, ``verify``, ``busy_seconds``), so the same reward, trainer and
pipeline run on one machine or a cluster. Each rollout goes to the actor with the fewest rollouts
outstanding. The sandbox needs root on every machine an actor runs on (see docs/verify.md).

Each actor keeps its own test-difficulty record (``TestDifficulty``), learnt from the rollouts it
verified, so "hardest test first" is per actor.
"""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.distributed import Actor, Placement
from resonance_os.verify.pool import PoolMode, VerifierPool
from resonance_os.verify.problems import Problem
from resonance_os.verify.rollout import RewardMode, Verdict
from resonance_os.verify.sandbox import Sandbox, SandboxLimits


class VerifierWorker:
    """One actor's sandbox and verifier pool (built where the actor runs)."""

    def __init__(
        self,
        limits: SandboxLimits,
        workers: int,
        mode: PoolMode,
        reward: RewardMode,
        sandbox_options: dict[str, Any],
    ) -> None:
        self.sandbox = Sandbox(limits, max_concurrency=workers, **sandbox_options)
        self.pool = VerifierPool(self.sandbox, workers=workers, mode=mode, reward=reward)

    def verify_one(self, problem: Problem, source: str) -> Verdict:
        return self.pool.submit(problem, source).result()

    def verify(self, rollouts: Sequence[tuple[Problem, str]]) -> list[Verdict]:
        return self.pool.verify(rollouts)

    def busy_seconds(self) -> float:
        return self.pool.busy_seconds

    def cpu_seconds(self) -> float:
        """CPU time of this actor's process and of the sandbox runs it has waited for."""
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    def close(self) -> None:
        self.pool.close()
        self.sandbox.close()


class RemoteVerifierPool:
    """Verify rollouts on ``actors`` verifier actors of ``workers`` concurrent sandbox runs each.

    Args:
        placement: where the actors run (``distributed.LocalProcesses()`` or ``RayCluster(address)``).
        actors: verifier actors (on a cluster: spread over its nodes by Ray).
        workers: concurrent sandbox runs per actor.
        limits: the sandbox limits (NousCoder's 15 s and 4 GB by default).
        mode, reward: as ``VerifierPool`` (``mode`` applies to ``verify``; ``submit`` is per rollout).
        sandbox_options: more ``Sandbox`` keywords for every actor's sandbox (``first_uid``,
            ``uid_count``, ``use_namespaces``, ``python``).
    """

    def __init__(
        self,
        placement: Placement,
        actors: int = 1,
        workers: int = 4,
        limits: SandboxLimits | None = None,
        mode: PoolMode = "rollout",
        reward: RewardMode = "binary",
        **sandbox_options: Any,
    ) -> None:
        if actors < 1 or workers < 1:
            raise ValidationError(
                f"actors and workers must be at least 1, got actors={actors}, workers={workers}"
            )
        self.workers = actors * workers
        self._limits = limits or SandboxLimits()
        self._actors: list[Actor] = []
        try:
            for index in range(actors):
                self._actors.append(
                    placement.start(
                        VerifierWorker,
                        self._limits,
                        workers,
                        mode,
                        reward,
                        sandbox_options,
                        name=f"verifier-{index}",
                        max_concurrency=workers,
                        num_cpus=1,
                    )  # fmt: skip
                )
        except BaseException:
            self.close()
            raise
        self._outstanding = [0] * actors
        self._lock = threading.Lock()

    def _least_loaded(self) -> int:
        with self._lock:
            index = min(range(len(self._actors)), key=self._outstanding.__getitem__)
            self._outstanding[index] += 1
            return index

    def _done(self, index: int) -> None:
        with self._lock:
            self._outstanding[index] -= 1

    def submit(self, problem: Problem, source: str) -> Future[Verdict]:
        """Verify one rollout on the least busy actor; a future of its ``Verdict``."""
        index = self._least_loaded()
        future = self._actors[index].call("verify_one", problem, source)
        future.add_done_callback(lambda _: self._done(index))
        return future

    def verify(self, rollouts: Sequence[tuple[Problem, str]]) -> list[Verdict]:
        """Verify every rollout (spread over the actors); verdicts in the order given."""
        return [future.result() for future in [self.submit(problem, source) for problem, source in rollouts]]

    @property
    def busy_seconds(self) -> float:
        """Seconds the actors' verification jobs ran, summed over every worker of every actor."""
        return sum(future.result() for future in [actor.call("busy_seconds") for actor in self._actors])

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds the actors' processes and their sandbox runs have used, summed (the kernel's
        own work, such as tearing down a run's namespaces, is not counted)."""
        return sum(future.result() for future in [actor.call("cpu_seconds") for actor in self._actors])

    def close(self) -> None:
        while self._actors:
            self._actors.pop().stop()

    def __enter__(self) -> RemoteVerifierPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
