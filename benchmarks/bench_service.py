"""Load on the REST service: locust, headless, against a server this script starts on 127.0.0.1.

    .venv/bin/python benchmarks/bench_service.py [--duration 30] [--clients 50] [--workers 1]

For each endpoint in turn, ``--clients`` concurrent locust users (``FastHttpUser``, one keep-alive
connection each, no wait between requests) send requests back to back for ``--duration`` seconds,
after a 3 s warm-up in which the users join at ``--clients`` per second (not counted): ``GET /health``
(the reference: the framework's floor, no auth, no work), ``POST /v1/analyze`` (~85-word real
paragraphs, evidence included) and ``POST /v1/generate`` (built-in writer, 1 paragraph). Prints
requests/second, latency percentiles, errors (non-2xx or transport failures), the CPU time the server
and the load generator spent per request, and each endpoint's p50 relative to /health.

The server runs with a fresh SQLite database in a temporary folder; the load generator shares the
machine's cores with it. It has to be cheap: httpx's pure-Python HTTP parser spent 1.6-4.3 ms of CPU
per request here (three to eight times the server's own cost), so it measured the client, not the
server; locust's ``FastHttpUser`` (geventhttpclient, a C parser) spends about 0.3 ms.
"""

from gevent import monkey

monkey.patch_all()  # locust's users are gevent greenlets: patch sockets before anything else imports them

import argparse  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
import httpx  # noqa: E402
import numpy as np  # noqa: E402
from locust import FastHttpUser, constant, events, task  # noqa: E402
from locust.env import Environment  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _corpus import mixed_paragraphs  # noqa: E402

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402

PROMPTS = ["remote work", "coffee roasting", "city cycling", "open source", "sleep science", "small farms"]
WARM_UP_S = 3.0
ANALYZE_P99_GOAL_MS = 50.0


@dataclass
class Result:
    name: str
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
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


def process_tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children (the uvicorn workers), from /proc."""
    pids = [pid]
    for parent in pids:
        try:
            pids += [int(p) for p in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
        except OSError:
            continue
    total = 0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def drive(
    server: subprocess.Popen, url: str, key: str, name: str, make_request, clients: int, duration: float
) -> Result:
    """Run ``clients`` locust users against one endpoint; record only after the warm-up."""
    result = Result(name)
    recording = False

    class EndpointUser(FastHttpUser):
        host = url
        wait_time = constant(0)
        connection_timeout = 30.0
        network_timeout = 30.0

        def on_start(self) -> None:
            self.rng = random.Random(id(self))

        @task
        def call(self) -> None:
            method, path, body = make_request(self.rng)
            self.client.request(method, path, json=body, headers={"Authorization": f"Bearer {key}"})

    def on_request(response_time, exception, response=None, **_) -> None:
        if not recording:
            return
        result.latencies_ms.append(response_time)
        if exception is not None:
            result.errors += 1
            if len(result.error_samples) < 3:
                status = getattr(response, "status_code", None)
                result.error_samples.append(f"{status} {exception!r}"[:300])

    env = Environment(user_classes=[EndpointUser], events=events)
    env.events.request.add_listener(on_request)
    runner = env.create_local_runner()
    runner.start(clients, spawn_rate=clients)
    gevent.sleep(WARM_UP_S)
    recording = True
    server_cpu, client_cpu, start = process_tree_cpu_s(server.pid), time.process_time(), time.perf_counter()
    gevent.sleep(duration)
    recording = False
    result.seconds = time.perf_counter() - start
    result.server_cpu_s = process_tree_cpu_s(server.pid) - server_cpu
    result.client_cpu_s = time.process_time() - client_cpu
    runner.quit()
    env.events.request.remove_listener(on_request)
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
        server, url, key = start_server(Path(tmp), args.workers)
        try:
            results = [
                drive(server, url, key, name, make, args.clients, args.duration)
                for name, make in endpoints.items()
            ]
        finally:
            server.terminate()
            server.wait(timeout=30)

    print(
        f"\n{args.clients} concurrent locust users, {args.duration:g} s per endpoint, {args.workers} server "
        f"worker(s), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n"
    )
    print(
        "| endpoint | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | errors "
        "| server CPU ms/req | client CPU ms/req | p50 / reference p50 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    reference_p50 = None
    for result in results:
        ms = np.array(result.latencies_ms)
        p50, p90, p99 = np.percentile(ms, [50, 90, 99])
        reference_p50 = reference_p50 or p50
        print(
            f"| {result.name} | {len(ms)} | {len(ms) / result.seconds:.0f} | {p50:.1f} | {p90:.1f} | {p99:.1f} "
            f"| {ms.max():.1f} | {result.errors} | {1000 * result.server_cpu_s / len(ms):.2f} "
            f"| {1000 * result.client_cpu_s / len(ms):.2f} | {p50 / reference_p50:.1f} |"
        )
    analyze_p99 = float(np.percentile(results[1].latencies_ms, 99))
    verdict = "met" if analyze_p99 < ANALYZE_P99_GOAL_MS else "NOT met"
    print(f"\ngoal /v1/analyze p99 < {ANALYZE_P99_GOAL_MS:g} ms: {verdict} ({analyze_p99:.1f} ms)")
    for result in results:
        for sample in result.error_samples:
            print(f"error on {result.name}: {sample}")


if __name__ == "__main__":
    main()
