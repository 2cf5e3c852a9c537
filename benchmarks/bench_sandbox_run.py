"""What one sandboxed run costs: ours, the design before issue 38, and a bare interpreter start.

Ours: ``Sandbox().run(program)`` (new namespaces, a private root, its own uid, limits, seccomp; see
docs/verify.md). Before: the sandbox as it was before issue 38 (the host's filesystem read-only, no
IPC namespace, no seccomp, the verdict from the exit code), its ``sandbox.py`` and ``launcher.py``
read from git at ``--baseline-rev`` into a temporary folder and run side by side in this process.
Reference: the same program started bare, ``python -I -S -B main.py`` in a subprocess with no
isolation at all (the floor of any harness that runs each program in a fresh process).

Two programs: ``--program`` (a stdin/stdout run) and a function-call test (a HumanEval-shaped
``check`` making three calls): ours runs it with the trusted harness in a second process, before
appended the check to the program. Runs alternate; medians of ``--runs`` of each, wall-clock and
CPU time in child processes. RLVR training verifies every rollout this way, so this fixed cost is
what short programs pay (issue 15: bench_rlvr's verification share).

    .venv/bin/python benchmarks/bench_sandbox_run.py [--runs 40] [--program 'print(1)'] [--baseline-rev REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from resonance_os.verify import AssertTest, Sandbox

REPO = Path(__file__).resolve().parents[1]
BASELINE_REV = "7c7b90b"
"""The last commit before issue 38 changed the sandbox."""

PROMPT = 'def add_one(values: list) -> list:\n    """Each value plus one."""\n'
SOLUTION = PROMPT + "    return [value + 1 for value in values]\n"
CHECK = (
    "def check(candidate):\n"
    "    assert candidate([1, 2]) == [2, 3]\n"
    "    assert candidate([]) == []\n"
    "    assert candidate([-1, 10]) == [0, 11]\n\n"
    "check(add_one)\n"
)


def baseline_sandbox_class(rev: str, folder: Path):
    """The ``Sandbox`` class of ``rev``, loaded from its own files (sandbox.py beside its launcher.py)."""
    for name in ("sandbox.py", "launcher.py"):
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{rev}:src/resonance_os/verify/{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (folder / name).write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_sandbox", folder / "sandbox.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module.Sandbox


def timed(run: Callable[[], None]) -> tuple[float, float]:
    """Wall-clock and child-process CPU milliseconds of one call of ``run``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--program", default="print(1)")
    parser.add_argument("--baseline-rev", default=BASELINE_REV, help="git revision of the 'before' sandbox")
    args = parser.parse_args()
    test = AssertTest(CHECK, prelude=PROMPT, entry_point="add_one")
    with tempfile.TemporaryDirectory() as folder:
        Before = baseline_sandbox_class(args.baseline_rev, Path(folder))
        main_py = Path(folder) / "main.py"
        main_py.write_text(args.program + "\n", encoding="utf-8")
        with Sandbox() as ours, Before() as before:
            expected = subprocess.run(
                [ours.python, "-I", "-S", "-B", str(main_py)], capture_output=True, text=True, check=True
            ).stdout

            def stdio(sandbox) -> Callable[[], None]:
                def run() -> None:
                    execution = sandbox.run(args.program)
                    assert execution.outcome is None and execution.stdout == expected, execution

                return run

            def function_ours() -> None:
                execution = ours.run(SOLUTION, calls=test.calls)
                assert execution.harness["passed"] and execution.harness["calls"] == 3, execution

            def function_before() -> None:
                execution = before.run(f"{SOLUTION}\n\n{CHECK}")
                assert execution.outcome is None and execution.exit_code == 0, execution

            def bare() -> None:
                subprocess.run([ours.python, "-I", "-S", "-B", str(main_py)], capture_output=True, check=True)

            cases = {
                "stdio: ours": stdio(ours),
                "stdio: before": stdio(before),
                "bare": bare,
                "function test: ours (harness process)": function_ours,
                "function test: before (check appended)": function_before,
            }
            for run in cases.values():  # warm the page cache, the uid pools and the bytecode caches
                run()
            rows: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
            for _ in range(args.runs):
                for name, run in cases.items():
                    rows[name].append(timed(run))
    med = {name: [statistics.median(x[k] for x in got) for k in (0, 1)] for name, got in rows.items()}
    print(f"program {args.program!r}, {args.runs} runs each, alternating; before = {args.baseline_rev}\n")
    print("| | wall ms | child CPU ms |")
    print("|---|---:|---:|")
    for name, (wall, cpu) in med.items():
        print(f"| {name} | {wall:.1f} | {cpu:.1f} |")
    for label, new, old in (
        ("stdio: ours / before", "stdio: ours", "stdio: before"),
        ("stdio: ours / bare", "stdio: ours", "bare"),
        ("function test: ours / before", "function test: ours (harness process)", "function test: before (check appended)"),
    ):  # fmt: skip
        print(f"| {label} | {med[new][0] / med[old][0]:.2f}x | {med[new][1] / med[old][1]:.2f}x |")


if __name__ == "__main__":
    main()
