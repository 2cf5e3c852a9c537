"""The Studio's steering sliders: latency of one slider move (POST /v1/steer) on real SmolLM2.

The service (``create_app``, writing in this process with the local backend and the shipped
directions) rewrites one paragraph per request, as the Studio does when a slider stops: each steerable
dimension is moved to -1, -0.5, +0.5 and +1 in turn, and each steered request is followed by the
unsteered one (all strengths 0, the reference: the same route, paragraph and seed without the
steering vectors), so both run under the same load. Printed: per-request wall seconds and CPU
seconds of this process (one thread: the CPU seconds are what a move takes on an idle core, whatever
the machine's load), median and p90, steered and unsteered, their ratio, and the measured dimension
at each strength (one reply each: a noisy single sample, not the dose-response, which
``bench_steer.py`` measures).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_steer_studio.py [--strengths -1 -0.5 0.5 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ["RESONANCE_BACKEND"] = "local"
os.environ["RESONANCE_TEXT_WORKERS"] = "0"

from fastapi.testclient import TestClient  # noqa: E402

from resonance_os.api.hr_server import create_app  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402

PARAGRAPH = (
    "The night train leaves the city a little after eleven. Most of the passengers are asleep before "
    "the suburbs end, but a few stay at the windows and watch the lights thin out. The conductor walks "
    "the corridor twice, checking tickets in a low voice. By the time the train reaches the coast, the "
    "sky has begun to turn grey, and the first fishing boats are already out."
)
STRENGTHS = (-1.0, -0.5, 0.5, 1.0)


def p90(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.9 * len(values)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strengths", type=float, nargs="+", default=list(STRENGTHS))
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="bench-steer-studio-")
    os.environ["RESONANCE_HOME"] = home
    app = create_app(f"sqlite:///{home}/bench.db", rate_limit_per_s=1000.0, rate_limit_burst=1000.0)
    key = create_tenant(app.state.service.db, "bench")
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        started = time.perf_counter()
        dims = client.get("/v1/steer/dimensions", headers=headers).json()
        print(f"model loaded and dimensions listed in {time.perf_counter() - started:.1f} s")
        steerable = [d["name"] for d in dims["dimensions"] if d["steerable"]]

        def move(steer: dict[str, float]) -> tuple[float, float, dict]:
            began, cpu = time.perf_counter(), time.process_time()
            answer = client.post("/v1/steer", json={"paragraph": PARAGRAPH, "steer": steer}, headers=headers)
            elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
            if answer.status_code != 200:
                sys.exit(f"POST /v1/steer answered {answer.status_code}: {answer.text}")
            return elapsed, cpu, answer.json()

        move({})  # warm-up: the first generation builds the engine's caches
        rows, plain = [], []
        for dim in steerable:
            for strength in args.strengths:
                seconds, cpu, body = move({dim: strength})
                reference, reference_cpu, unsteered = move({dim: 0.0})
                rows.append((dim, strength, seconds, cpu, body["hrv"][dim], len(body["text"].split())))
                plain.append((reference, reference_cpu, len(unsteered["text"].split())))
                print(f"{dim:20s} {strength:+.1f}: {seconds:6.2f} s wall, {cpu:5.2f} s CPU, "
                      f"{len(body['text'].split())} words, measured {body['hrv'][dim]:.3f} | unsteered "
                      f"{reference:6.2f} s wall, {reference_cpu:5.2f} s CPU, measured {unsteered['hrv'][dim]:.3f}",
                      flush=True)  # fmt: skip
    summary = {"moves": len(rows), "words_median": statistics.median(r[5] for r in rows)}
    for name, values in (
        ("steered_wall", [r[2] for r in rows]),
        ("steered_cpu", [r[3] for r in rows]),
        ("unsteered_wall", [p[0] for p in plain]),
        ("unsteered_cpu", [p[1] for p in plain]),
    ):
        summary[f"{name}_median_s"], summary[f"{name}_p90_s"] = statistics.median(values), p90(values)
    summary["cpu_ratio_median"] = summary["steered_cpu_median_s"] / summary["unsteered_cpu_median_s"]
    print(
        f"\none slider move (POST /v1/steer, {len(rows)} moves over {', '.join(steerable)}, median reply "
        f"{summary['words_median']:.0f} words; unsteered reply {plain[0][2]} words):\n"
        f"  CPU (one thread): steered median {summary['steered_cpu_median_s']:.2f} s, p90 "
        f"{summary['steered_cpu_p90_s']:.2f} s; unsteered median {summary['unsteered_cpu_median_s']:.2f} s; "
        f"ratio {summary['cpu_ratio_median']:.2f}\n"
        f"  wall (this machine's load): steered median {summary['steered_wall_median_s']:.2f} s, p90 "
        f"{summary['steered_wall_p90_s']:.2f} s; unsteered median {summary['unsteered_wall_median_s']:.2f} s"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"summary": summary, "rows": rows, "paragraph": PARAGRAPH}, out, indent=1)


if __name__ == "__main__":
    main()
