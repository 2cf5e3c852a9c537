"""A pool of verifiers that checks many rollouts concurrently, in one of three granularities.

The seed's three ways to spread verification over sandboxes, each measurable here
(``benchmarks/bench_verify.py``):

- ``"rollout"`` (NousCoder's choice): one job per rollout runs its tests hardest first and stops at
  the first failure;
- ``"problem"``: one job per problem verifies all of that problem's rollouts in turn;
- ``"test"``: one job per (rollout, test); every test of every rollout runs, in parallel, with no
  early stop (the most parallelism, the most sandbox starts).

The workers are threads: each job's work happens in sandboxed child processes, so threads only wait.
``busy_seconds`` / ``wall_seconds`` give the verifiers' utilisation.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal

from resonance_os.core.errors import ValidationError
from resonance_os.verify.problems import Problem
from resonance_os.verify.rollout import (
    RewardMode,
    TestDifficulty,
    TestResult,
    Verdict,
    run_test,
    verdict_from_results,
    verify_rollout,
)
from resonance_os.verify.sandbox import Sandbox

PoolMode = Literal["rollout", "problem", "test"]
MODES: tuple[str, ...] = ("rollout", "problem", "test")


class VerifierPool:
    """Verify ``(problem, program)`` rollouts with ``workers`` concurrent sandbox runs.

    Args:
        sandbox: the sandbox (its ``max_concurrency`` should be at least ``workers``).
        workers: concurrent verification jobs.
        mode: ``"rollout"``, ``"problem"`` or ``"test"`` (see the module docstring).
        reward: ``"binary"`` (+1/-1) or ``"fraction"`` (fraction of tests passed).
    """

    def __init__(
        self, sandbox: Sandbox, workers: int = 4, mode: PoolMode = "rollout", reward: RewardMode = "binary"
    ) -> None:
        if mode not in MODES:
            raise ValidationError(f"mode must be one of {MODES}, got {mode!r}")
        if workers < 1:
            raise ValidationError(f"workers must be at least 1, got {workers}")
        self.sandbox = sandbox
        self.workers = workers
        self.mode = mode
        self.reward = reward
        self.difficulty = TestDifficulty()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verifier")
        self._busy_lock = threading.Lock()
        self.busy_seconds = 0.0

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _timed(self, job, *args):
        start = time.perf_counter()
        try:
            return job(*args)
        finally:
            with self._busy_lock:
                self.busy_seconds += time.perf_counter() - start

    def _verify_one(self, problem: Problem, source: str) -> Verdict:
        return verify_rollout(self.sandbox, problem, source, reward=self.reward, difficulty=self.difficulty)

    def submit(self, problem: Problem, source: str) -> Future[Verdict]:
        """Verify one rollout in the background (``"rollout"`` granularity, whatever ``mode`` is)."""
        return self._executor.submit(self._timed, self._verify_one, problem, source)

    def verify(self, rollouts: Sequence[tuple[Problem, str]]) -> list[Verdict]:
        """Verify every rollout; verdicts come back in the order given."""
        if self.mode == "rollout":
            return [
                future.result() for future in [self.submit(problem, source) for problem, source in rollouts]
            ]
        if self.mode == "problem":
            return self._verify_by_problem(rollouts)
        return self._verify_by_test(rollouts)

    def _verify_by_problem(self, rollouts: Sequence[tuple[Problem, str]]) -> list[Verdict]:
        groups: dict[str, list[int]] = defaultdict(list)
        for position, (problem, _) in enumerate(rollouts):
            groups[problem.problem_id].append(position)

        def verify_group(positions: list[int]) -> list[Verdict]:
            return [self._verify_one(*rollouts[position]) for position in positions]

        futures = {
            tuple(positions): self._executor.submit(self._timed, verify_group, positions)
            for positions in groups.values()
        }
        verdicts: list[Verdict | None] = [None] * len(rollouts)
        for positions, future in futures.items():
            for position, verdict in zip(positions, future.result(), strict=True):
                verdicts[position] = verdict
        return verdicts  # type: ignore[return-value]

    def _verify_by_test(self, rollouts: Sequence[tuple[Problem, str]]) -> list[Verdict]:
        def one_test(problem: Problem, source: str, index: int) -> TestResult:
            outcome, execution = run_test(self.sandbox, source, problem.tests[index])
            self.difficulty.record(problem, index, outcome, execution.seconds)
            return TestResult(index, outcome, execution.seconds, execution.detail, execution.network)

        start = time.perf_counter()
        jobs = [
            [
                self._executor.submit(self._timed, one_test, problem, source, index)
                for index in range(len(problem.tests))
            ]
            for problem, source in rollouts
        ]
        verdicts = []
        for (problem, _), futures in zip(rollouts, jobs, strict=True):
            results = [future.result() for future in futures]
            verdicts.append(verdict_from_results(problem, results, time.perf_counter() - start, self.reward))
        return verdicts
