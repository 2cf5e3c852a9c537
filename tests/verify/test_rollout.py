"""NousCoder's reward on real sandbox runs: hardest tests first, stop at the first failure, +1/-1."""

from __future__ import annotations

from sandbox_checks import QUICK_TIMEOUT

from resonance_os.verify import (
    Outcome,
    Problem,
    StdioTest,
    TestDifficulty,
    VerifierPool,
    builtin_problems,
    verify_rollout,
)

ECHO_TWICE = Problem(
    "double", "", (StdioTest("1\n", "2\n"), StdioTest("2\n", "4\n"), StdioTest("3\n", "6\n"))
)
WRONG_ON_THREE = "n = int(input())\nprint(2 * n if n != 3 else 0)\n"


def test_every_shipped_reference_solution_earns_plus_one(sandbox):
    with VerifierPool(sandbox, workers=4) as pool:
        verdicts = pool.verify([(problem, problem.solution) for problem in builtin_problems()])
    assert [v.outcome for v in verdicts] == [Outcome.PASSED] * len(verdicts)
    assert all(v.reward == 1.0 and v.tests_run == v.tests_total for v in verdicts)


def test_a_wrong_program_earns_minus_one_and_stops_at_the_first_failure(sandbox):
    verdict = verify_rollout(sandbox, ECHO_TWICE, "print(0)")
    assert verdict.outcome is Outcome.WRONG_ANSWER and verdict.reward == -1.0
    assert verdict.tests_run == 1 and verdict.tests_passed == 0


def test_fraction_reward_runs_every_test(sandbox):
    verdict = verify_rollout(sandbox, ECHO_TWICE, WRONG_ON_THREE, reward="fraction")
    assert verdict.tests_run == 3 and verdict.tests_passed == 2
    assert verdict.reward == 2 / 3 and verdict.outcome is Outcome.WRONG_ANSWER


def test_tests_that_failed_before_run_first_next_time(sandbox):
    difficulty = TestDifficulty()
    first = verify_rollout(sandbox, ECHO_TWICE, WRONG_ON_THREE, difficulty=difficulty)
    assert [r.index for r in first.results] == [0, 1, 2]  # nothing recorded yet: the file's order
    second = verify_rollout(sandbox, ECHO_TWICE, WRONG_ON_THREE, difficulty=difficulty)
    assert [r.index for r in second.results] == [2]  # the test that failed is now the hardest
    assert second.outcome is Outcome.WRONG_ANSWER and second.tests_run == 1


def test_runtime_errors_and_timeouts_cost_minus_one(sandbox):
    crash = verify_rollout(sandbox, ECHO_TWICE, "raise ValueError('boom')")
    assert (
        crash.outcome is Outcome.RUNTIME_ERROR and crash.reward == -1.0 and "ValueError: boom" in crash.detail
    )
    slow = verify_rollout(sandbox, ECHO_TWICE, "while True:\n    pass\n", limits=QUICK_TIMEOUT)
    assert slow.outcome is Outcome.TIMEOUT and slow.reward == -1.0 and slow.tests_run == 1


def test_the_three_pool_modes_agree(sandbox):
    problems = builtin_problems()[:2]
    rollouts = [(p, p.solution) for p in problems] + [(p, "print(0)") for p in problems]
    rewards = {}
    for mode in ("rollout", "problem", "test"):
        with VerifierPool(sandbox, workers=4, mode=mode) as pool:
            verdicts = pool.verify(rollouts)
        rewards[mode] = [v.reward for v in verdicts]
        assert [v.problem_id for v in verdicts] == [p.problem_id for p, _ in rollouts]
    assert rewards["rollout"] == rewards["problem"] == rewards["test"] == [1.0] * 2 + [-1.0] * 2
