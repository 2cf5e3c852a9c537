"""Start-up time of the ``resonance`` command against a bare interpreter start (issue 45).

Runs each command ``--runs`` times as a fresh process (``python -c`` running the CLI's ``main``, as the
``resonance`` console script does; output discarded), interleaved so that load on the machine hits every
command alike, and prints the median of each next to ``python -c pass``:

- ``resonance --help``: the command list;
- ``resonance train --help``: one command's options;
- ``resonance analyze MISSING``: an input error (a file that does not exist);
- ``resonance analyze FILE``: a real measurement of a 300-word text.

With ``--baseline-src DIR`` (a ``src`` folder of another revision, e.g. from ``git archive REV src``)
each command also runs from that tree in the same loop, and the table gives ours / baseline.
The goal is under 1 s for help and for input errors.

    OMP_NUM_THREADS=1 python benchmarks/bench_cli.py --runs 7 [--baseline-src /tmp/before/src]
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

OUR_SRC = Path(__file__).resolve().parents[1] / "src"
RUN_CLI = "import sys; from resonance_os.cli.hr_main import main; sys.argv[0] = 'resonance'; main()"
GOAL_S = 1.0
SAMPLE = (
    "The harbour was quiet at dawn. Fishermen mended their nets while the gulls cried over the water, "
    "and the first boats slipped out past the breakwater. Nobody spoke much. By noon the market was loud "
    "with prices and gossip, and the catch, silver and still, lay in crates of ice. "
) * 6


def commands(sample: Path, home: Path) -> dict[str, list[str]]:
    """Command name -> the arguments after ``resonance``."""
    return {
        "resonance --help": ["--help"],
        "resonance train --help": ["train", "--help"],
        "resonance analyze MISSING": ["analyze", str(home / "missing.txt")],
        "resonance analyze FILE": ["analyze", str(sample)],
    }


def time_once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="Runs of each command (median reported).")
    parser.add_argument("--baseline-src", type=Path, help="A src folder of another revision to compare with.")
    args = parser.parse_args()
    trees = {"ours": OUR_SRC}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        sample = home / "sample.txt"
        sample.write_text(SAMPLE, encoding="utf-8")
        base_env = {**os.environ, "RESONANCE_HOME": str(home / "home"), "COLUMNS": "100"}
        runs: dict[tuple[str, str], tuple[list[str], dict[str, str]]] = {
            ("python -c pass", "ours"): ([sys.executable, "-c", "pass"], base_env)
        }
        for name, cli_args in commands(sample, home).items():
            for tree, src in trees.items():
                env = {**base_env, "PYTHONPATH": str(src)}
                runs[(name, tree)] = ([sys.executable, "-c", RUN_CLI, *cli_args], env)
        for argv, env in runs.values():  # warm the file cache once, untimed
            time_once(argv, env)
        times: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
        for _ in range(args.runs):
            for key, (argv, env) in runs.items():
                times[key].append(time_once(argv, env))
    median = {key: statistics.median(values) for key, values in times.items()}
    bare = median[("python -c pass", "ours")]
    print(f"{args.runs} runs each, load average {os.getloadavg()[0]:.1f}, bare python -c pass {bare:.3f} s")
    baseline = "baseline" in trees
    print("| command | ours median s (min-max) |" + (" baseline median s | ours / baseline |" if baseline else "")
          + " goal |")  # fmt: skip
    print("|---|---|" + ("---|---|" if baseline else "") + "---|")
    for name in commands(sample, home):
        ours = median[(name, "ours")]
        cells = [name, f"{ours:.3f} ({min(times[(name, 'ours')]):.3f}-{max(times[(name, 'ours')]):.3f})"]
        if baseline:
            cells += [f"{median[(name, 'baseline')]:.3f}", f"{ours / median[(name, 'baseline')]:.2f}"]
        goal = "" if "FILE" in name else "< 1 s: " + ("met" if ours < GOAL_S else "NOT met")
        print("| " + " | ".join([*cells, goal]) + " |")


if __name__ == "__main__":
    main()
