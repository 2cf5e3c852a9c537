"""Load on the REST service: a bounded async httpx load against a server this script starts on 127.0.0.1.

    .venv/bin/python benchmarks/bench_service.py [--duration 30] [--clients 50] [--workers 1]

For each endpoint in turn, ``--clients`` concurrent clients send requests back to back for
``--duration`` seconds (after a 3 s warm-up that is not counted): ``GET /health`` (the reference: the
framework's floor, no auth, no work), ``POST /v1/analyze`` (~85-word real paragraphs, evidence
included) and ``POST /v1/generate`` (built-in writer, 1 paragraph). Prints requests/second, latency
percentiles and errors (non-2xx or transport failures), and each endpoint's p50 relative to /health.
The server runs with a fresh SQLite database in a temporary folder; the load generator shares the
machine's cores with it, as a client on the same host would.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _corpus import mixed_paragraphs  # noqa: E402

from resonance_os.api.db import Database  # noqa: E402
from resonance_os.api.tenants import create_tenant  # noqa: E402

PROMPTS = ["remote work", "coffee roasting", "city cycling", "open source", "sleep science", "small farms"]


@dataclass
class Result:
    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0
    error_samples: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(home: Path, workers: int) -> tuple[subprocess.Popen, str, str]:
    env = {
        **os.environ,
        "RESONANCE_HOME": str(home),
        "RESONANCE_RATE_LIMIT": "100000",
        "RESONANCE_RATE_BURST": "100000",
        "OMP_NUM_THREADS": "1",
    }
    os.environ["RESONANCE_HOME"] = str(home)  # same pepper for the key created here
    db_url = f"sqlite:///{home / 'bench.db'}"
    db = Database(db_url)
    db.migrate()
    key = create_tenant(db, "bench")
    db.dispose()
    port = free_port()
    log = open(home / "server.log", "wb")  # noqa: SIM115 - closed with the process
    command = [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(port), "--db", db_url]
    process = subprocess.Popen(
        [*command, "--workers", str(workers)], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url, key
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"server did not start; see {home / 'server.log'}")


async def drive(url: str, key: str, name: str, make_request, clients: int, duration: float) -> Result:
    result = Result(name)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as client:

        async def one_client(seed: int, until: float, record: bool) -> None:
            rng = random.Random(seed)
            while time.perf_counter() < until:
                method, path, body = make_request(rng)
                start = time.perf_counter()
                try:
                    response = await client.request(method, path, json=body)
                    ok = 200 <= response.status_code < 300
                    problem = f"{response.status_code} {response.text[:200]} for {body}"
                except httpx.HTTPError as exc:
                    ok, problem = False, f"{type(exc).__name__}: {exc}"
                if record:
                    result.latencies.append(time.perf_counter() - start)
                    result.errors += not ok
                    if not ok and len(result.error_samples) < 3:
                        result.error_samples.append(problem)

        warm_until = time.perf_counter() + 3.0
        await asyncio.gather(*(one_client(i, warm_until, False) for i in range(clients)))
        start = time.perf_counter()
        await asyncio.gather(*(one_client(i, start + duration, True) for i in range(clients)))
        result.seconds = time.perf_counter() - start
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    texts = mixed_paragraphs(200, seed=0)
    endpoints = {
        "GET /health (reference)": lambda rng: ("GET", "/health", None),
        "POST /v1/analyze": lambda rng: ("POST", "/v1/analyze", {"text": rng.choice(texts)}),
        "POST /v1/generate": lambda rng: (
            "POST",
            "/v1/generate",
            {"prompt": rng.choice(PROMPTS), "paragraphs": 1, "seed": rng.randrange(10**6)},
        ),
    }
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        process, url, key = start_server(Path(tmp), args.workers)
        try:
            results = [
                asyncio.run(drive(url, key, name, make, args.clients, args.duration))
                for name, make in endpoints.items()
            ]
        finally:
            process.terminate()
            process.wait(timeout=30)

    print(
        f"\n{args.clients} concurrent clients, {args.duration:g} s per endpoint, {args.workers} server worker(s), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n"
    )
    print(
        "| endpoint | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | errors | p50 / reference p50 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    reference_p50 = None
    for result in results:
        ms = np.array(result.latencies) * 1000
        p50, p90, p99 = np.percentile(ms, [50, 90, 99])
        reference_p50 = reference_p50 or p50
        print(
            f"| {result.name} | {len(ms)} | {len(ms) / result.seconds:.0f} | {p50:.1f} | {p90:.1f} | {p99:.1f} | "
            f"{ms.max():.1f} | {result.errors} | {p50 / reference_p50:.1f} |"
        )
    for result in results:
        for sample in result.error_samples:
            print(f"error on {result.name}: {sample}")


if __name__ == "__main__":
    main()
