"""Two floods one tenant can throw at the service, bounded in count and time, loopback only.

    .venv/bin/python benchmarks/tenant_floods.py [--train-jobs 10] [--storage-seconds 10]

- ``train_flood``: ``/v1/train`` called back to back (the issue measured 10 calls in 0.18 s starting 10
  worker processes, 3.8 GB); it samples the job worker processes while they run (how many at once and
  their resident memory), then cancels every job it started (``DELETE /v1/jobs/{id}``).
- ``storage_flood``: ``/v1/feedback`` ratings of 50,000-character submitted texts back to back (the issue
  measured about 36 GB an hour of stored text); it reports the bytes the server accepted per hour at
  that pace and where the storage quota stopped it.

Both functions take a server URL and a tenant's headers; ``benchmarks/abuse.py`` replays them (until a
deadline, on more connections) as attacks while it measures a victim tenant; run as a script, this file starts its own server on
127.0.0.1 (fresh SQLite database, the default limits, a 5 MB byte quota so the stop is seen in
seconds) and prints each flood beside the issue's figures.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
WORKER_MODULE = "resonance_os.api.jobs.worker"
BEFORE = {"train_workers": 10, "train_rss_gb": 3.8, "storage_gb_per_hour": 36.0}
"""The issue's measurements on the build before job limits and storage quotas."""


def _loopback(url: str) -> None:
    if urlparse(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"floods run against a server on this machine only, not {url}")


def worker_processes(server_pid: int | None = None) -> list[tuple[int, int]]:
    """(pid, resident bytes) of the job worker processes on this machine (only ``server_pid``'s children
    when given: other servers on a shared machine run workers too)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if WORKER_MODULE not in (proc / "cmdline").read_bytes().decode(errors="replace"):
                continue
            status = (proc / "status").read_text()
        except OSError:
            continue
        if "\nState:\tZ" in status:
            continue
        if server_pid is not None and f"\nPPid:\t{server_pid}\n" not in status:
            continue
        rss_kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        found.append((int(proc.name), rss_kb * 1024))
    return found


@dataclass
class FloodResult:
    name: str
    requests: int = 0
    seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)
    peak_workers: int = 0
    peak_worker_rss: int = 0
    accepted_bytes: int = 0
    refusal: str = ""


def train_flood(
    url: str,
    headers: dict[str, str],
    *,
    jobs: int = 10,
    until: float | None = None,
    watch_s: float = 15.0,
    server_pid: int | None = None,
) -> FloodResult:
    """Submit ``jobs`` training jobs back to back (with ``until``, a ``time.monotonic()`` deadline: keep
    submitting until then, pausing 50 ms after each refusal), watch the worker processes (of
    ``server_pid``, if given) for ``watch_s`` seconds, then cancel every job that was accepted."""
    _loopback(url)
    result = FloodResult("train flood")
    accepted = []
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        start = time.perf_counter()
        while (result.requests < jobs) if until is None else (time.monotonic() < until):
            answer = client.post(
                "/v1/train", json={"target_hrv": HRV, "timesteps": 20_000, "seed": result.requests}
            )
            result.requests += 1
            result.statuses[answer.status_code] += 1
            if answer.status_code == 202:
                accepted.append(answer.json()["id"])
                continue
            if not result.refusal:
                result.refusal = answer.json()["error"]["message"]
            if until is not None:
                time.sleep(0.05)
        result.seconds = time.perf_counter() - start
        deadline = time.monotonic() + watch_s
        while time.monotonic() < deadline:
            workers = worker_processes(server_pid)
            result.peak_workers = max(result.peak_workers, len(workers))
            result.peak_worker_rss = max(result.peak_worker_rss, sum(rss for _, rss in workers))
            time.sleep(0.2)
        for job_id in accepted:
            result.statuses[f"cancel {client.delete(f'/v1/jobs/{job_id}').status_code}"] += 1
    return result


WORDS = (
    "the tide came in over the flat grey sand while gulls argued above the pier and an old fisherman "
    "mended his nets by the sea wall humming a tune nobody else remembered"
).split()


def storage_flood(
    url: str,
    headers: dict[str, str],
    *,
    seconds: float = 10.0,
    text_chars: int = 50_000,
    max_requests: int = 2000,
    connections: int = 1,
    until_refused: bool = True,
    seed: int = 0,
) -> FloodResult:
    """Rate submitted texts of ``text_chars`` characters (random words, a new text each time, so no
    cache spares the server measuring it) back to back on ``connections`` connections for at most
    ``seconds`` seconds and ``max_requests`` requests in all; with ``until_refused`` a connection stops
    at the first refusal (else it keeps sending: each refused text is still read and checked)."""
    _loopback(url)
    result = FloodResult("storage flood")
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def flood(connection: int) -> None:
        rng = random.Random(seed * 1000 + connection)
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            while time.perf_counter() < stop_at:
                with lock:
                    if result.requests >= max_requests:
                        return
                    result.requests += 1
                words = " ".join(rng.choice(WORDS) for _ in range(text_chars // 4))
                text = words[: text_chars - 1].rstrip() + "."
                answer = client.post(
                    "/v1/feedback", json={"kind": "rating", "item": {"text": text}, "rating": 3}
                )
                with lock:
                    result.statuses[answer.status_code] += 1
                    if answer.status_code == 201:
                        result.accepted_bytes += 2 * len(
                            text.encode()
                        )  # the item and the feedback row's copy
                    elif not result.refusal:
                        result.refusal = answer.json()["error"]["message"]
                if answer.status_code != 201 and until_refused:
                    return

    start = time.perf_counter()
    threads = [threading.Thread(target=flood, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.seconds = time.perf_counter() - start
    return result


def _start_server(home: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server_env = {**os.environ, "RESONANCE_HOME": str(home), "OMP_NUM_THREADS": "1", **env}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "resonance_os.api.hr_server",
            "--port",
            str(port),
            "--db",
            str(home / "db.sqlite"),
        ],
        env=server_env,
        stdout=open(home / "server.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server did not start; see {home / 'server.log'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-jobs", type=int, default=10)
    parser.add_argument("--watch", type=float, default=15.0, help="seconds to watch the job workers")
    parser.add_argument("--storage-seconds", type=float, default=10.0)
    parser.add_argument("--quota-bytes", type=int, default=5_000_000)
    args = parser.parse_args()

    from resonance_os.api.persistence.db import Database
    from resonance_os.api.persistence.tenants import create_tenant

    with tempfile.TemporaryDirectory(prefix="resonance-floods-") as tmp:
        home = Path(tmp)
        os.environ["RESONANCE_HOME"] = str(home)  # the key pepper the server reads lives here
        server, url = _start_server(
            home,
            {
                "RESONANCE_QUOTA_BYTES": str(args.quota_bytes),
                "RESONANCE_RATE_LIMIT": "1000",
                "RESONANCE_RATE_BURST": "1000",
            },
        )
        try:
            db = Database(home / "db.sqlite")
            headers = {
                name: {"Authorization": f"Bearer {create_tenant(db, name)}"} for name in ("trainer", "filler")
            }
            db.dispose()
            train = train_flood(
                url, headers["trainer"], jobs=args.train_jobs, watch_s=args.watch, server_pid=server.pid
            )
            storage = storage_flood(url, headers["filler"], seconds=args.storage_seconds)
        finally:
            os.killpg(server.pid, 15)
            server.wait(timeout=60)
    if train.statuses[401] or storage.statuses[401]:
        raise SystemExit("the server refused the tenants' keys; nothing was measured")
    gb_per_hour = storage.accepted_bytes / max(storage.seconds, 1e-9) * 3600 / 1e9
    print(f"train flood: {train.requests} POST /v1/train in {train.seconds:.2f} s -> {dict(train.statuses)}")
    print(f"  first refusal: {train.refusal or '-'}")
    print(
        f"storage flood: {storage.requests} POST /v1/feedback in {storage.seconds:.2f} s -> {dict(storage.statuses)}"
    )
    print(f"  refusal: {storage.refusal or '-'}")
    print()
    print(f"{'measure':<44}{'before (issue 14)':>20}{'now':>12}{'ratio':>8}")
    rows = [
        ("job workers at once (10 calls)", BEFORE["train_workers"], train.peak_workers),
        ("job workers' resident memory, GB", BEFORE["train_rss_gb"], train.peak_worker_rss / 1e9),
        ("stored text accepted, GB per hour at full pace", BEFORE["storage_gb_per_hour"], gb_per_hour),
        ("stored text when the flood stopped, MB", float("inf"), storage.accepted_bytes / 1e6),
    ]
    for name, before, now in rows:
        ratio = now / before if before not in (0, float("inf")) else float("nan")
        print(f"{name:<44}{before:>20.2f}{now:>12.2f}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
