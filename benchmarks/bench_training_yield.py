"""What yielding to requests costs a training job, and what it buys the other tenants (issue 14 §3).

    .venv/bin/python benchmarks/bench_training_yield.py [--duration 30] [--db URL] [--shares 0.75,0]

For each ``RESONANCE_TRAINING_YIELD_SHARE`` in ``--shares`` (0 = training never waits: nice 19 alone)
it starts ``python -m resonance_os.api.hr_server`` on 127.0.0.1 (a fresh SQLite file, or ``--db``),
starts one real training job (``POST /v1/train``: PPO on ``HRWritingEnv``), waits for its first PPO
update, then measures for ``--duration`` seconds with no other traffic and for ``--duration`` seconds
while a victim tenant sends ``benchmarks/abuse.py``'s paced requests (``/v1/analyze`` 20 a second,
one-paragraph ``/v1/generate`` 4 a second). The job's speed is read from its progress (polled every
0.2 s; progress moves at each PPO update of 2,048 steps, so a phase's rate is the steps between its
first and last update over the time between them). Printed per share: the job's timesteps per second
without and with the victim's requests and their ratio, and the victim's p99 with the job running.
Loopback only; every loop is bounded by ``--duration``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import abuse  # noqa: E402  (the server, the victim's paced requests and p99: one implementation)

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402

JOB_TIMESTEPS = 1_000_000


def trained(client: httpx.Client, job_id: str) -> float:
    """Timesteps the job has trained (its progress times what it was asked for)."""
    return client.get(f"/v1/jobs/{job_id}").json()["progress"] * JOB_TIMESTEPS


def rate_while(client: httpx.Client, job_id: str, seconds: float, load=None) -> tuple[float, object]:
    """The job's timesteps per second over ``seconds`` (between its first and last update in that
    time), while ``load()`` runs in this thread if given; returns (rate, what ``load`` returned)."""
    marks: list[tuple[float, float]] = []
    stop = threading.Event()

    def poll() -> None:
        last = trained(client, job_id)
        while not stop.is_set():
            now = trained(client, job_id)
            if now != last:
                marks.append((time.monotonic(), now))
                last = now
            time.sleep(0.2)

    poller = threading.Thread(target=poll)
    poller.start()
    result = load() if load is not None else time.sleep(seconds)
    stop.set()
    poller.join()
    if len(marks) < 2:
        return float("nan"), result
    (t0, s0), (t1, s1) = marks[0], marks[-1]
    return (s1 - s0) / (t1 - t0), result


def measure(share: str, db_url: str | None, seconds: float) -> dict:
    home = tempfile.mkdtemp(prefix="resonance-yield-")
    os.environ["RESONANCE_HOME"] = home
    os.environ["RESONANCE_TRAINING_YIELD_SHARE"] = share
    db_url = db_url or f"sqlite:///{home}/yield.db"
    database = Database(db_url)
    database.migrate()
    suffix = os.urandom(3).hex()
    victim_key = create_tenant(database, f"victim-{suffix}")
    trainer_key = create_tenant(database, f"trainer-{suffix}")
    database.dispose()
    server = abuse.Server(db_url, home, "builtin")
    try:
        abuse.victim(server.url, victim_key, 2.0)  # warm-up
        headers = {"Authorization": f"Bearer {trainer_key}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
            job = client.post(
                "/v1/train", json={"target_hrv": abuse.HRV, "timesteps": JOB_TIMESTEPS, "seed": 0}
            )
            job_id = job.json()["id"]
            deadline = time.monotonic() + 300
            while trained(client, job_id) == 0 and time.monotonic() < deadline:
                time.sleep(0.5)  # the worker imports the training stack and runs its first update
            quiet, _ = rate_while(client, job_id, seconds)
            loud, latencies = rate_while(
                client, job_id, seconds, load=lambda: abuse.victim(server.url, victim_key, seconds)
            )
            client.delete(f"/v1/jobs/{job_id}")
    finally:
        server.stop()
    return {"quiet": quiet, "loud": loud, "analyze": abuse.p99(latencies["analyze"]),
            "generate": abuse.p99(latencies["generate"])}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per phase")
    parser.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    parser.add_argument(
        "--shares", default="0.75,0", help="comma-separated RESONANCE_TRAINING_YIELD_SHARE values"
    )
    args = parser.parse_args()
    shares = [s.strip() for s in args.shares.split(",") if s.strip()]
    rows = [(share, measure(share, args.db, args.duration)) for share in shares]
    print(f"\none training job (PPO on HRWritingEnv) beside a victim tenant, {args.duration:g} s per phase\n")
    header = (f"{'yield share':>11} {'job steps/s alone':>18} {'with requests':>14} {'ratio':>6} "
              f"{'victim p99 analyze ms':>22} {'generate ms':>12}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for share, r in rows:
        print(f"{share:>11} {r['quiet']:>18.0f} {r['loud']:>14.0f} {r['loud'] / r['quiet']:>6.2f} "
              f"{r['analyze']:>22.1f} {r['generate']:>12.1f}")  # fmt: skip
    print(
        f"\nmachine load average (1, 5, 15 min) at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
