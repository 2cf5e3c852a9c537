"""Reproduce Sutton & Barto's figures 9.1, 9.2, 9.5, 9.10 and 10.2 and the spec article's grid world.

Prints, per figure, a table of our number beside the book's (or an independent reproduction's)
with their ratio, and the wall and CPU seconds it took; writes the PNGs to ``--out``
(default ``benchmarks/out/sutton``). The full run takes a few minutes on 2 cores; ``--quick``
(fewer runs) takes seconds. Same as ``resonance classic reproduce``.

    .venv/bin/python benchmarks/reproduce_sutton.py [--figure 9.1 --figure 10.2] [--quick]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from resonance_os.rl.sutton_reproduction import FIGURES, format_result, reproduce  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", action="append", choices=list(FIGURES), help="figure to run (repeatable)")
    parser.add_argument("--out", default="benchmarks/out/sutton", help="folder for the PNGs")
    parser.add_argument("--quick", action="store_true", help="fewer runs and episodes")
    args = parser.parse_args()
    wall, cpu = time.perf_counter(), time.process_time()
    reproduce(
        args.figure, args.out, args.quick, report=lambda result: print(format_result(result), flush=True)
    )
    print(f"total: wall {time.perf_counter() - wall:.1f} s, CPU {time.process_time() - cpu:.1f} s")


if __name__ == "__main__":
    main()
