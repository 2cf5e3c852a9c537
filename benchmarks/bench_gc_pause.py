"""How long a full garbage collection stops the service's processes, before and after ``settle_heap``.

Builds what each long-running process holds (the server's app with its extractor, a text worker's warm
:class:`~resonance_os.api.text.engine.TextEngine`) in a fresh subprocess, then times full collections
(``gc.collect()``, the median of ``--rounds``) with every object in reach and after
:func:`resonance_os.api.text.heap.settle_heap`. A full collection is a pause: the process answers nothing
while it runs (issue 14 §3: a 195-291 ms ``/v1/generate`` of another tenant with no attack running).

    .venv/bin/python benchmarks/bench_gc_pause.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

PROCESSES = {
    "server (create_app)": (
        "import tempfile; from resonance_os.api.hr_server import create_app; "
        "keep = create_app(f'sqlite:///{tempfile.mkdtemp()}/gc.db')"
    ),
    "text worker (TextEngine.warm)": (
        "from resonance_os.api.text.engine import TextEngine; keep = TextEngine(); keep.warm()"
    ),
}
MEASURE = """
import gc, json, statistics, time
from resonance_os.api.text.heap import settle_heap
{build}
def pause_ms():
    times = []
    for _ in range({rounds}):
        start = time.perf_counter(); gc.collect(); times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)
objects = len(gc.get_objects())
before = pause_ms()
settle_heap()
print(json.dumps({{"objects": objects, "before": before, "after": pause_ms()}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="full collections timed per state")
    args = parser.parse_args()
    header = f"{'process':<30} {'objects':>9} {'full gc ms: all in reach':>25} {'after settle_heap':>18}"
    print(f"{header} {'ratio':>10}")
    for name, build in PROCESSES.items():
        code = MEASURE.format(build=build, rounds=args.rounds)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        # below 10 microseconds the timer, not the collector, is measured: a ratio would be noise
        ratio = f"{row['before'] / row['after']:,.0f}x" if row["after"] >= 0.01 else ">1,000x"
        print(f"{name:<30} {row['objects']:>9,} {row['before']:>25.1f} {row['after']:>18.3f} {ratio:>10}")


if __name__ == "__main__":
    main()
