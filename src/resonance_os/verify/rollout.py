"""Verify one rollout (a generated program) against a problem's tests: NousCoder's reward.

Tests run hardest first, by a recorded difficulty (:class:`TestDifficulty`: how often each test
has failed, then how long it took), and verification stops at the first failure, so a wrong
program usually costs one sandbox run. The reward is NousCoder's::

    r = +1  if every test passes
    r = -1  otherwise (wrong answer, runtime error, 15 s timeout, 4 GB memory limit, ...)

or, with ``reward="fraction"``, the fraction of tests passed (every test is then run).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from resonance_os.core.errors import ValidationError
from resonance_os.verify.outcomes import Outcome
from resonance_os.verify.problems import Problem, TestCase
from resonance_os.verify.sandbox import Execution, Sandbox, SandboxLimits

RewardMode = Literal["binary", "fraction"]


@dataclass
class TestRecord:
    runs: int = 0
    failures: int = 0
    seconds: float = 0.0

    @property
    def hardness(self) -> tuple[float, float]:
        """(failure rate, mean seconds): larger is harder; unseen tests rank first."""
        if self.runs == 0:
            return (1.0, float("inf"))
        return (self.failures / self.runs, self.seconds / self.runs)


class TestDifficulty:
    """Thread-safe record of each test's failure rate and runtime, shared by all verifiers."""

    __test__ = False  # a library class, not a pytest test class

    def __init__(self) -> None:
        self._records: dict[tuple[str, int], TestRecord] = {}
        self._lock = threading.Lock()

    def order(self, problem: Problem) -> list[int]:
        """Indices of ``problem.tests``, hardest first (ties keep the file's order)."""
        with self._lock:
            hardness = [
                self._records.get((problem.problem_id, i), TestRecord()).hardness
                for i in range(len(problem.tests))
            ]
        return sorted(range(len(problem.tests)), key=lambda i: hardness[i], reverse=True)

    def record(self, problem: Problem, index: int, outcome: Outcome, seconds: float) -> None:
        if outcome is Outcome.SANDBOX_ERROR:
            return
        with self._lock:
            entry = self._records.setdefault((problem.problem_id, index), TestRecord())
            entry.runs += 1
            entry.failures += outcome is not Outcome.PASSED
            entry.seconds += seconds


@dataclass
class TestResult:
    index: int
    outcome: Outcome
    seconds: float
    detail: str = ""
    network: str = "namespace"


@dataclass
class Verdict:
    """The verification of one rollout: ``outcome`` is PASSED or the first failing test's outcome."""

    problem_id: str
    outcome: Outcome
    reward: float
    tests_run: int
    tests_passed: int
    tests_total: int
    seconds: float
    network: str = "namespace"
    detail: str = ""
    results: list[TestResult] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "problem_id": self.problem_id,
            "outcome": self.outcome.value,
            "reward": self.reward,
            "tests_run": self.tests_run,
            "tests_passed": self.tests_passed,
            "tests_total": self.tests_total,
            "seconds": round(self.seconds, 4),
            "network": self.network,
            "detail": self.detail,
        }


def run_test(
    sandbox: Sandbox, source: str, test: TestCase, limits: SandboxLimits | None = None
) -> tuple[Outcome, Execution]:
    """Run ``source`` on one test in the sandbox and judge it."""
    execution = sandbox.run(test.program_for(source), test.stdin, limits, calls=test.calls)
    outcome = test.judge(execution)
    execution.detail = test.explain(execution, outcome)
    return outcome, execution


def verdict_from_results(
    problem: Problem, results: list[TestResult], seconds: float, reward: RewardMode
) -> Verdict:
    """Combine per-test results (in the order run) into a rollout's verdict and reward."""
    passed = sum(result.outcome is Outcome.PASSED for result in results)
    failure = next((result for result in results if result.outcome is not Outcome.PASSED), None)
    outcome = (
        Outcome.PASSED
        if failure is None and passed == len(problem.tests)
        else (failure.outcome if failure else Outcome.SANDBOX_ERROR)
    )
    if reward == "fraction":
        value = passed / len(problem.tests)
    else:
        value = 1.0 if outcome is Outcome.PASSED else -1.0
    detail = f"test {failure.index}: {failure.detail}".rstrip(": ") if failure is not None else ""
    network = results[0].network if results else "namespace"
    return Verdict(
        problem.problem_id,
        outcome,
        value,
        len(results),
        passed,
        len(problem.tests),
        seconds,
        network,
        detail,
        results,
    )


def verify_rollout(
    sandbox: Sandbox,
    problem: Problem,
    source: str,
    *,
    reward: RewardMode = "binary",
    difficulty: TestDifficulty | None = None,
    limits: SandboxLimits | None = None,
) -> Verdict:
    """Run ``source`` on ``problem``'s tests, hardest first, stopping at the first failure (unless
    ``reward="fraction"``, which runs them all); record each test's difficulty."""
    if reward not in ("binary", "fraction"):
        raise ValidationError(f"reward must be 'binary' or 'fraction', got {reward!r}")
    difficulty = difficulty if difficulty is not None else TestDifficulty()
    start = time.perf_counter()
    results: list[TestResult] = []
    for index in difficulty.order(problem):
        outcome, execution = run_test(sandbox, source, problem.tests[index], limits)
        difficulty.record(problem, index, outcome, execution.seconds)
        results.append(TestResult(index, outcome, execution.seconds, execution.detail, execution.network))
        if outcome is not Outcome.PASSED and reward == "binary":
            break
    return verdict_from_results(problem, results, time.perf_counter() - start, reward)
