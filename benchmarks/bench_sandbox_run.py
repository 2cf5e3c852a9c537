"""What one sandboxed run costs, against the interpreter start it cannot avoid.

Ours: ``Sandbox().run(program)`` (new namespaces, a read-only filesystem, its own uid, limits; see
docs/verify.md). Reference: the same program started bare, ``python -I -S -B main.py`` in a
subprocess with no isolation at all (the floor of any harness that runs each program in a fresh
process). Runs alternate; medians of ``--runs`` of each, wall-clock and CPU time in child processes.
RLVR training verifies every rollout this way, so this fixed cost is what short programs pay
(issue 15: bench_rlvr's verification share).

    .venv/bin/python benchmarks/bench_sandbox_run.py [--runs 40] [--program 'print(1)']
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from resonance_os.verify import Sandbox


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
    args = parser.parse_args()
    with Sandbox() as sandbox, tempfile.TemporaryDirectory() as folder:
        main_py = Path(folder) / "main.py"
        main_py.write_text(args.program + "\n", encoding="utf-8")
        expected = subprocess.run(
            [sandbox.python, "-I", "-S", "-B", str(main_py)], capture_output=True, text=True, check=True
        ).stdout

        def ours() -> None:
            execution = sandbox.run(args.program)
            assert execution.outcome is None and execution.stdout == expected, execution

        def bare() -> None:
            subprocess.run([sandbox.python, "-I", "-S", "-B", str(main_py)], capture_output=True, check=True)

        ours()  # warm the page cache and the uid pool
        rows: dict[str, list[tuple[float, float]]] = {"ours": [], "bare": []}
        for _ in range(args.runs):
            rows["ours"].append(timed(ours))
            rows["bare"].append(timed(bare))
        network = sandbox.run("pass").network
    med = {name: [statistics.median(x[k] for x in got) for k in (0, 1)] for name, got in rows.items()}
    print(f"program {args.program!r}, {args.runs} runs each, alternating; sandbox network: {network}\n")
    print("| | wall ms | child CPU ms |")
    print("|---|---:|---:|")
    print(f"| Sandbox().run (ours) | {med['ours'][0]:.1f} | {med['ours'][1]:.1f} |")
    print(f"| bare python -I -S -B main.py (reference) | {med['bare'][0]:.1f} | {med['bare'][1]:.1f} |")
    wall_ratio, cpu_ratio = (med["ours"][k] / med["bare"][k] for k in (0, 1))
    print(f"| ours / reference | {wall_ratio:.2f}x | {cpu_ratio:.2f}x |")


if __name__ == "__main__":
    main()
