"""Start-up time of the ``resonance`` command against a bare interpreter start (issue 45).

Runs each command ``--runs`` times as a fresh process (the console script of this venv, its output
discarded), interleaved so that load on the machine hits every command alike, and prints the median
and the spread of each next to ``python -c pass``:

- ``resonance --help``: the command list;
- ``resonance train --help``: one command's options;
- ``resonance analyze MISSING``: an input error (a file that does not exist);
- ``resonance analyze FILE``: a real measurement of a 300-word text.

The goal is under 1 s for help and for input errors.

    OMP_NUM_THREADS=1 python benchmarks/bench_cli.py --runs 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESONANCE = str(Path(sys.executable).with_name("resonance"))
GOAL_S = 1.0
SAMPLE = (
    "The harbour was quiet at dawn. Fishermen mended their nets while the gulls cried over the water, "
    "and the first boats slipped out past the breakwater. Nobody spoke much. By noon the market was loud "
    "with prices and gossip, and the catch, silver and still, lay in crates of ice. "
) * 6


def commands(sample: Path, home: Path) -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "resonance --help": [RESONANCE, "--help"],
        "resonance train --help": [RESONANCE, "train", "--help"],
        "resonance analyze MISSING": [RESONANCE, "analyze", str(home / "missing.txt")],
        "resonance analyze FILE": [RESONANCE, "analyze", str(sample)],
    }


def time_once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="Runs of each command (median reported).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        sample = home / "sample.txt"
        sample.write_text(SAMPLE, encoding="utf-8")
        env = {**os.environ, "RESONANCE_HOME": str(home / "home"), "COLUMNS": "100"}
        runs = commands(sample, home)
        for argv in runs.values():  # warm the file cache once, untimed
            time_once(argv, env)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.runs):
            for name, argv in runs.items():
                times[name].append(time_once(argv, env))
    bare = statistics.median(times["python -c pass"])
    print(f"{args.runs} runs each, load average {os.getloadavg()[0]:.1f}")
    print("| command | median s | min-max s | - bare python s | goal |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        goal = ""
        if name != "python -c pass" and "FILE" not in name:
            goal = "< 1 s: " + ("met" if median < GOAL_S else "NOT met")
        print(
            f"| {name} | {median:.3f} | {min(values):.3f}-{max(values):.3f} | {median - bare:.3f} | {goal} |"
        )


if __name__ == "__main__":
    main()
