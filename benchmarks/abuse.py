"""Replay attacks on a real server and measure what they do to another tenant (issue 14 §3).

    .venv/bin/python benchmarks/abuse.py [--duration 20] [--rounds 3] [--db URL] [--attacks redos-prompt,login-flood]

Starts ``python -m resonance_os.api.hr_server`` on 127.0.0.1 (a fresh SQLite file, or ``--db``, e.g.
the PostgreSQL URL that ``scripts/with_postgres.sh`` exports as ``$RESONANCE_TEST_DB_URL``) with the
default settings except ``SERVER_SETTINGS`` (a small storage quota, so the storage flood reaches it; a
5 s body timeout; job limits that let one tenant take every slot). A victim tenant sends
``POST /v1/analyze`` (a 60-word text, 20 a second, under the per-key rate limit) and
``POST /v1/generate`` (one paragraph, four a second) from 127.0.0.1. For each attack the
victim's latencies are measured for ``--duration`` seconds without it, then for ``--duration``
seconds while attacker processes (separate processes, so the client's own GIL does not slow the
victim) replay it, from their own tenant and, for the login flood, from 127.0.0.2. With ``--rounds
N`` each attack gets N such pairs, the attacks interleaved (every attack's round 1, then round 2,
...), so that one slow sample or one busy minute of the machine weighs less. Printed per attack: the
victim's p99 over all rounds' samples pooled, without and with the attack, and their ratio (goal: at
most 2), each round's own ratio, what the attacker's requests got (status counts), and the 500s
either side saw (goal: none).

Attacks (``ATTACKS``; add one with ``@attack(name)``; one that needs a route the server lacks is
skipped with the reason):
  redos-prompt    /v1/generate with the longest legal NFKC-expanding prompt (1,000 x U+FDF2 = 4,000
                  characters after NFKC) and 12 paragraphs, two at a time, plus the 4,000 x U+FDF2
                  prompt that took 160 s of CPU before the fix (now refused with 422)
  nul-probes      NUL in every field and URL part that reaches the database
  login-flood     bad API keys from 127.0.0.2 as fast as four raw keep-alive connections go
  connect-flood   the same from 127.0.0.3, but a new connection for every request (four at a time)
  fuzz            random hostile bodies (NUL, huge and deep JSON, wrong types, odd Unicode) on every route
                  (a training job it happens to start is cancelled at the end)
  train-flood     /v1/train as fast as it answers (jobs past the limits queue or get 429), all cancelled
                  at the end (``tenant_floods.train_flood``)
  storage-flood   feedback with 40,000-character texts on two connections, on past the tenant's storage
                  quota (507) (``tenant_floods.storage_flood``)
  slow-bodies     600 connections from 127.0.0.4 trickling a body that never ends, on past the 408;
                  counts those the server still keeps open 2 s after their 408 (goal 0)
  reward-model-train  250 judgments, then 4 clients training the reward model again and again
  job-fairness    one tenant takes every job slot and queues five more, then a later tenant submits one
                  job: how many of the flooder's jobs are admitted before it (goal 0: the next slot)
  kill-9          not a latency attack: after the others, a server of its own with text workers and a
                  running job is killed with kill -9 (the process alone); its former workers still
                  running 1, 5 and 15 s later (goal 0)
Loopback only; every loop is bounded by ``--duration`` (job-fairness waits up to 300 s past it for the
later job). Settings that differ from the defaults: ``SERVER_SETTINGS``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from queue import Empty

import httpx
import numpy as np

from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tenant_floods as floods  # noqa: E402  (the train and storage floods, one implementation)

ATTACKER_ADDRESS = "127.0.0.2"  # all of 127.0.0.0/8 is loopback on Linux
CONNECTOR_ADDRESS = "127.0.0.3"
VICTIM_TEXT = (
    "The harbour was quiet at dawn. Boats rocked gently on the grey water while gulls argued over "
    "the scraps of last night's catch. An old fisherman mended his nets by the sea wall, humming a "
    "tune nobody else remembered, and the smell of tar and salt hung in the cold air."
)
VICTIM_ANALYZE_PER_S = 20.0
VICTIM_GENERATE_PER_S = 4.0
HRV = [0.5] * 8
SERVER_SETTINGS = {
    "RESONANCE_QUOTA_BYTES": "20000000",  # so the storage flood reaches it
    "RESONANCE_BODY_TIMEOUT_S": "5",  # so slow bodies get their 408 within a phase
    # one tenant may take every job slot and queue five more: the case where first in, first out
    # made a later tenant's first job wait for all five (job-fairness)
    "RESONANCE_MAX_RUNNING_JOBS": "2",
    "RESONANCE_MAX_RUNNING_JOBS_PER_TENANT": "2",
    "RESONANCE_MAX_QUEUED_JOBS_PER_TENANT": "5",
}
"""The server's settings that differ from the defaults."""


# --- the server -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """The service in a subprocess on 127.0.0.1 (stopped with its process group)."""

    def __init__(self, db_url: str, home: str, backend: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "RESONANCE_HOME": home, "RESONANCE_BACKEND": backend, **SERVER_SETTINGS}
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(self.port), "--db", db_url],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"server exited:\n{self.log.read().decode(errors='replace')}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("server did not become healthy in 120 s")

    def routes(self) -> set[tuple[str, str]]:
        spec = httpx.get(f"{self.url}/openapi.json", timeout=30).json()
        return {(method.upper(), path) for path, item in spec["paths"].items() for method in item}

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)


# --- raw HTTP for the cheap attackers (httpx costs milliseconds of client CPU per request) ----------


def raw_request(method: str, path: str, key: str | None, body: bytes | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if key is not None:
        lines.append(f"Authorization: Bearer {key}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def raw_loop(port: int, requests: list[bytes], until: float, source: str = "127.0.0.1") -> Counter:
    """Send ``requests`` round and round on one keep-alive connection until ``until``; status counts."""
    statuses: Counter = Counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0))
    buffer = b""
    index = 0
    try:
        while time.monotonic() < until:
            sock.sendall(requests[index % len(requests)])
            index += 1
            while b"\r\n\r\n" not in buffer:
                buffer += sock.recv(65536)
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(buffer) < length:
                buffer += sock.recv(65536)
            buffer = buffer[length:]
            statuses[int(head.split(b" ", 2)[1])] += 1
            if b"connection: close" in head.lower():
                sock.close()
                sock = socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0))
                buffer = b""
    finally:
        sock.close()
    return statuses


def httpx_loop(
    url: str,
    key: str,
    until: float,
    request: Callable[[httpx.Client, random.Random], httpx.Response],
    seed: int,
) -> Counter:
    statuses: Counter = Counter()
    rng = random.Random(seed)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
        while time.monotonic() < until:
            try:
                statuses[request(client, rng).status_code] += 1
            except httpx.HTTPError as error:
                statuses[type(error).__name__] += 1
    return statuses


def in_threads(count: int, work: Callable[[int], Counter]) -> Counter:
    results: list[Counter] = [Counter() for _ in range(count)]

    def run(i: int) -> None:
        results[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(results, Counter())


# --- the attacks ----------------------------------------------------------------------------------


@dataclass
class Attack:
    name: str
    drive: Callable[..., Counter]
    """(server url, port, attacker's key, deadline) -> status counts of the attacker's requests; with
    ``later_tenant``, also ``later_key=``, a second tenant's key."""
    needs: tuple[tuple[str, str], ...] = ()
    """Routes (method, path) the server must have, else the attack is skipped."""
    prepare: Callable[[str, str], None] | None = None
    """(server url, attacker's key): set-up run by the attacker before either phase it is measured in
    (after the quiet phase, before the attacked one)."""
    later_tenant: bool = False


ATTACKS: dict[str, Attack] = {}


def attack(
    name: str,
    needs: tuple[tuple[str, str], ...] = (),
    prepare: Callable[[str, str], None] | None = None,
    later_tenant: bool = False,
):
    def register(drive):
        ATTACKS[name] = Attack(name, drive, needs, prepare, later_tenant)
        return drive

    return register


@attack("redos-prompt", needs=(("POST", "/v1/generate"),))
def redos_prompt(url: str, port: int, key: str, until: float) -> Counter:
    longest_legal = {"prompt": "\ufdf2" * 1000, "paragraphs": 12}
    before_the_fix = {"prompt": "\ufdf2" * 4000, "paragraphs": 12}

    def request(client: httpx.Client, rng: random.Random) -> httpx.Response:
        body = before_the_fix if rng.random() < 0.2 else longest_legal
        return client.post("/v1/generate", json=body)

    return in_threads(2, lambda i: httpx_loop(url, key, until, request, seed=i))


NUL_PROBES = [
    ("POST", "/v1/generate", {"prompt": "a\x00b"}),
    ("POST", "/v1/analyze", {"text": "a\x00b"}),
    ("POST", "/v1/profiles", {"name": "p", "hrv": HRV, "description": "a\x00b"}),
    ("POST", "/v1/profiles", {"name": "a\x00b", "hrv": HRV}),
    ("POST", "/v1/feedback", {"kind": "rating", "item": {"text": "a\x00b"}, "rating": 3}),
    ("POST", "/v1/feedback", {"kind": "rating", "item": {"id": "a\x00b"}, "rating": 3}),
    ("POST", "/v1/train", {"profile": "a\x00b"}),
    ("GET", "/v1/profiles/a%00b", None),
    ("GET", "/v1/jobs/a%00b", None),
    ("DELETE", "/v1/profiles/a%00b", None),
]


@attack("nul-probes", needs=(("POST", "/v1/analyze"),))
def nul_probes(url: str, port: int, key: str, until: float) -> Counter:
    requests = [
        raw_request(method, path, key, None if body is None else json.dumps(body).encode())
        for method, path, body in NUL_PROBES
    ]
    return raw_loop(port, requests, until)


@attack("login-flood", needs=(("POST", "/v1/analyze"),))
def login_flood(url: str, port: int, key: str, until: float) -> Counter:
    body = json.dumps({"text": "x"}).encode()

    def flood(i: int) -> Counter:
        requests = [raw_request("POST", "/v1/analyze", f"rsk_guess{i}{n:040d}", body) for n in range(64)]
        return raw_loop(port, requests, until, source=ATTACKER_ADDRESS)

    return in_threads(4, flood)


@attack("connect-flood", needs=(("POST", "/v1/analyze"),))
def connect_flood(url: str, port: int, key: str, until: float) -> Counter:
    body = json.dumps({"text": "x"}).encode()

    def flood(i: int) -> Counter:
        statuses: Counter = Counter()
        n = 0
        while time.monotonic() < until:
            request = raw_request("POST", "/v1/analyze", f"rsk_door{i}{n:040d}", body)
            n += 1
            try:
                with socket.create_connection(
                    ("127.0.0.1", port), timeout=60, source_address=(CONNECTOR_ADDRESS, 0)
                ) as sock:
                    sock.sendall(request)
                    head = sock.recv(65536)
                statuses[int(head.split(b" ", 2)[1]) if head else "closed"] += 1
            except OSError as error:
                statuses[type(error).__name__] += 1
        return statuses

    return in_threads(4, flood)


def _hostile_value(rng: random.Random, depth: int = 0):
    choice = rng.randrange(12)
    if choice == 0:
        return "x\x00" * rng.randrange(1, 50)
    if choice == 1:
        return rng.choice(["\ufdf2", "\u202e", "\ud7ff", "e\u0301", "\U0001f600", "\ufeff"]) * rng.randrange(
            1, 3000
        )
    if choice == 2:
        return rng.choice([True, False, None, 1e308, -1, 2**64, 0.5, "5", [], {}])
    if choice == 3 and depth < 4:
        return [_hostile_value(rng, depth + 1) for _ in range(rng.randrange(1, 10))]
    if choice == 4 and depth < 4:
        return {rng.choice(["id", "text", "kind", "\x00", "a" * 300]): _hostile_value(rng, depth + 1)}
    if choice == 5:
        return "word " * rng.randrange(1, 12_000)
    if choice == 6:
        return rng.choice(["rating", "preference", "a", "b", "professional", "../etc", "%00", "' OR 1=1 --"])
    if choice == 7:
        return rng.randrange(-(2**40), 2**40)
    return "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(1, 200)))


FUZZ_TARGETS = [
    ("POST", "/v1/analyze", ["text", "evidence"]),
    ("POST", "/v1/score", ["text", "profile", "target_hrv", "prompt"]),
    ("POST", "/v1/generate", ["prompt", "profile", "target_hrv", "paragraphs", "seed", "policy"]),
    ("POST", "/hr_generate", ["prompt", "tenant", "profile_name"]),
    ("POST", "/v1/profiles", ["name", "hrv", "description"]),
    ("POST", "/v1/profiles/from-text", ["name", "text", "description"]),
    ("POST", "/v1/feedback", ["kind", "item", "other", "rating", "preferred", "target_hrv", "prompt"]),
    ("POST", "/v1/train", ["profile", "target_hrv", "timesteps", "seed"]),
]
RAW_FUZZ = [
    b"[" * 50_000,
    b'{"text": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
    b'{"text": "a", "evidence": ' + b"9" * 6_000 + b"}",
    b'{"text": "\xff\xfe"}',
    b'{"text": "a"',
    b"null",
]


@attack("fuzz", needs=(("POST", "/v1/analyze"),))
def fuzz(url: str, port: int, key: str, until: float) -> Counter:
    def request(client: httpx.Client, rng: random.Random) -> httpx.Response:
        method, path, fields = rng.choice(FUZZ_TARGETS)
        if rng.random() < 0.15:
            return client.request(
                method, path, content=rng.choice(RAW_FUZZ), headers={"content-type": "application/json"}
            )
        if rng.random() < 0.1:
            return client.get(
                rng.choice(["/v1/profiles/", "/v1/jobs/", "/v1/profiles/x/history?"])
                + rng.choice(["%00", "%ff", "..%2f", "a" * 500, "%F0%9F%98%80"])
            )
        body = {field: _hostile_value(rng) for field in rng.sample(fields, rng.randrange(1, len(fields) + 1))}
        response = client.request(method, path, json=body)
        if path == "/v1/train" and response.status_code == 202:
            started.append(response.json()["id"])
        return response

    started: list[str] = []
    statuses = in_threads(2, lambda i: httpx_loop(url, key, until, request, seed=100 + i))
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        for job_id in started:  # a job the fuzz started must not run on into the next attack's baseline
            statuses[f"cancel {client.delete(f'/v1/jobs/{job_id}').status_code}"] += 1
    return statuses


@attack("train-flood", needs=(("POST", "/v1/train"), ("DELETE", "/v1/jobs/{job_id}")))
def train_flood(url: str, port: int, key: str, until: float) -> Counter:
    return floods.train_flood(url, {"Authorization": f"Bearer {key}"}, until=until, watch_s=0).statuses


@attack("storage-flood", needs=(("POST", "/v1/feedback"),))
def storage_flood(url: str, port: int, key: str, until: float) -> Counter:
    return floods.storage_flood(
        url,
        {"Authorization": f"Bearer {key}"},
        seconds=until - time.monotonic(),
        text_chars=40_000,
        max_requests=1_000_000,
        connections=2,
        until_refused=False,
        seed=200,
    ).statuses


SLOW_BODY_ADDRESS = "127.0.0.4"
SLOW_BODY_CONNECTIONS = 600
SLOW_BODY_OPENED_PER_S = 150
AFTER_408_S = 2.0
"""A connection still open this long after its 408 counts as kept open by the server."""


@attack("slow-bodies", needs=(("POST", "/v1/analyze"),))
def slow_bodies(url: str, port: int, key: str, until: float) -> Counter:
    """SLOW_BODY_CONNECTIONS connections from 127.0.0.4 (opened SLOW_BODY_OPENED_PER_S a second), each a
    request whose body never ends, trickled a byte a second, on past any answer; one the server closes
    is opened again. Counted: the answers, the connections the server closed after their 408, and those
    still established AFTER_408_S after their 408 (goal 0; the issue: 472 of 600 at 60 s)."""
    head = (
        "POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: 100000\r\n\r\n"
        '{"text": "'
    ).encode()
    statuses: Counter = Counter()
    live: dict[socket.socket, list] = {}  # socket -> [bytes received, when its answer came]
    opened, most_open, start = 0, 0, time.monotonic()

    def closed(sock: socket.socket) -> None:
        statuses["closed after 408" if live.pop(sock)[1] is not None else "closed unanswered"] += 1
        sock.close()

    while time.monotonic() < until:
        tick = time.monotonic()
        allowed = min(int((tick - start + 1) * SLOW_BODY_OPENED_PER_S), opened + SLOW_BODY_OPENED_PER_S)
        while len(live) < SLOW_BODY_CONNECTIONS and opened < allowed:
            opened += 1
            try:
                sock = socket.create_connection(
                    ("127.0.0.1", port), timeout=5, source_address=(SLOW_BODY_ADDRESS, 0)
                )
                sock.sendall(head)
                sock.setblocking(False)
                live[sock] = [b"", None]
            except OSError as error:
                statuses[f"connect {type(error).__name__}"] += 1
        for sock in list(live):
            state = live[sock]
            try:
                data = sock.recv(65536)
                if not data:
                    closed(sock)
                    continue
                state[0] += data
            except BlockingIOError:
                pass
            except OSError:
                closed(sock)
                continue
            if state[1] is None and b"\r\n" in state[0]:
                state[1] = time.monotonic()
                statuses[int(state[0].split(b" ", 2)[1])] += 1
            try:
                sock.send(b"x")
            except BlockingIOError:
                pass
            except OSError:
                closed(sock)
        most_open = max(most_open, len(live))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    now = time.monotonic()
    statuses["still open 2 s after their 408"] = sum(
        1 for _, answered in live.values() if answered is not None and now - answered >= AFTER_408_S
    )
    statuses["connections opened"] = opened
    statuses[f"at most {most_open} open at once"] += 1
    for sock in live:
        sock.close()
    return statuses


SENTENCES = [
    "The harbour was quiet at dawn and the boats rocked on grey water.",
    "Our quarterly revenue grew by twelve percent across all regions.",
    "I can't believe it, we actually won the final after all those years!",
    "Install the package, then run the tests with a single command.",
    "She remembered the smell of her grandmother's kitchen in winter.",
    "The committee will review every proposal before the deadline.",
    "What a view from the top of the hill this morning!",
    "Memory safety bugs account for most severe vulnerabilities.",
    "He laughed, dropped the keys, and ran back into the rain.",
    "Please submit your expense reports by Friday afternoon.",
    "Tiny lanterns floated down the river as the music began.",
    "The algorithm runs in linear time on sorted input.",
    "Why do we keep building roads that nobody walks along?",
    "Fresh bread cooled on the windowsill while the kettle sang.",
    "Quarterly targets were missed in two of the five markets.",
    "Imagine a city where every roof grows its own vegetables.",
]
REWARD_RATINGS = 150
REWARD_PREFERENCES = 100
REWARD_TRAINERS = 4
"""Judgments the attacker sends before it trains (each text measured by the server), and its
concurrent training calls (the issue's 4)."""


def _seed_feedback(url: str, key: str) -> None:
    """The attacker's judgments of short texts made of random sentences (a new text each time)."""
    rng = random.Random(7)

    def text() -> str:
        return " ".join(rng.sample(SENTENCES, 3))

    def send(client: httpx.Client, body: dict) -> None:
        while (answer := client.post("/v1/feedback", json=body)).status_code == 429:  # the key's rate
            time.sleep(float(answer.headers.get("retry-after", 1)))
        answer.raise_for_status()

    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        for i in range(REWARD_RATINGS):
            send(client, {"kind": "rating", "item": {"text": text()}, "rating": 1 + i % 5})
        for i in range(REWARD_PREFERENCES):
            pair = {"kind": "preference", "item": {"text": text()}, "other": {"text": text()}}
            send(client, pair | {"preferred": "ab"[i % 2]})


def _wait_for_job(client: httpx.Client, job: dict, until: float) -> dict:
    while job["state"] in ("queued", "starting", "running") and time.monotonic() < until:
        time.sleep(0.5)
        job = client.get(f"/v1/jobs/{job['id']}").json()
    return job


@attack("reward-model-train", needs=(("POST", "/v1/reward-model/train"),), prepare=_seed_feedback)
def reward_model_train(url: str, port: int, key: str, until: float) -> Counter:
    """REWARD_TRAINERS clients each train the reward model on the attacker's 250 judgments, again as
    soon as the last one is done (a 202's job is followed to its end), until the deadline; jobs still
    waiting then are cancelled. (Before it was a job, each call fitted in the server: 201.)"""
    started: list[str] = []

    def trainer(i: int) -> Counter:
        statuses: Counter = Counter()
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
            while time.monotonic() < until:
                answer = client.post("/v1/reward-model/train", json={"seed": i})
                statuses[answer.status_code] += 1
                if answer.status_code == 202:
                    started.append(answer.json()["id"])
                    statuses[f"job {_wait_for_job(client, answer.json(), until)['state']}"] += 1
                elif answer.status_code != 201:
                    time.sleep(0.5)
        return statuses

    statuses = in_threads(REWARD_TRAINERS, trainer)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        for job_id in started:
            client.delete(f"/v1/jobs/{job_id}")
    return statuses


FAIRNESS_WAIT_S = 300.0
"""How long past the phase the fairness attack waits for the later tenant's job to start."""


@attack(
    "job-fairness",
    needs=(("POST", "/v1/train"), ("GET", "/v1/jobs"), ("DELETE", "/v1/jobs/{job_id}")),
    later_tenant=True,
)
def job_fairness(url: str, port: int, key: str, until: float, later_key: str) -> Counter:
    """The attacker fills every job slot and its queue with the smallest PPO jobs (64 timesteps), then a
    later tenant submits one job. Both tenants' job lists are read every 0.5 s until the later job has
    left the queue (at most FAIRNESS_WAIT_S past the phase): counted, how many of the attacker's jobs
    were admitted after the later job was submitted and before it (goal 0: it takes the next free
    slot; first in, first out admitted every queued one first), and how long it waited."""
    body = {"target_hrv": HRV, "timesteps": 64}
    statuses: Counter = Counter()
    attacker = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    later = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {later_key}"}, timeout=120)
    with attacker, later:
        flood: list[str] = []
        while len(flood) < 50:
            answer = attacker.post("/v1/train", json=body | {"seed": len(flood)})
            statuses[f"flood {answer.status_code}"] += 1
            if answer.status_code != 202:
                break
            flood.append(answer.json()["id"])
        admitted: dict[str, float] = {}  # job id -> when first seen out of the queue

        def look() -> None:
            """Jobs seen out of the queue for the first time get this look's time: jobs one admission
            made (two slots freed in the same tick) tie, rather than the first tenant read winning."""
            now = time.monotonic()
            for client in (attacker, later):
                for job in client.get("/v1/jobs", params={"limit": 200}).json()["jobs"]:
                    if job["state"] != "queued" and job["id"] not in admitted:
                        admitted[job["id"]] = now

        look()  # the slots the flood took at once
        submitted = time.monotonic()
        first = later.post("/v1/train", json=body).json()["id"]
        deadline = until + FAIRNESS_WAIT_S
        while first not in admitted and time.monotonic() < deadline:
            time.sleep(0.5)  # the job runner admits once a second
            look()
        if first in admitted:
            ahead = sum(1 for job in flood if submitted < admitted.get(job, float("inf")) < admitted[first])
            statuses["flooder's jobs admitted before the later one"] += ahead
            statuses[f"later job admitted after {admitted[first] - submitted:.0f} s"] += 1
        else:
            statuses["later job not admitted in time"] = 1
        for job_id in flood:
            attacker.delete(f"/v1/jobs/{job_id}")
        later.delete(f"/v1/jobs/{first}")
    return statuses


def _drive(
    attack_name: str, url: str, port: int, key: str, later_key: str | None, seconds: float, queue
) -> None:
    """Run in the attacker's process: prepare, say it is ready (its imports done), then attack for
    ``seconds``."""
    chosen = ATTACKS[attack_name]
    if chosen.prepare is not None:
        chosen.prepare(url, key)
    queue.put("ready")
    until = time.monotonic() + seconds
    extra = {"later_key": later_key} if chosen.later_tenant else {}
    queue.put(dict(chosen.drive(url, port, key, until, **extra)))


# --- the victim -----------------------------------------------------------------------------------


def victim(url: str, key: str, seconds: float) -> dict[str, list[float] | Counter]:
    """Paced analyze and generate requests for ``seconds``: latencies in ms and status counts."""
    until = time.monotonic() + seconds
    out: dict = {"analyze": [], "generate": [], "statuses": Counter()}

    def paced(kind: str, per_s: float, call: Callable[[httpx.Client], httpx.Response]) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
            next_at = time.monotonic()
            while next_at < until:
                time.sleep(max(0.0, next_at - time.monotonic()))
                start = time.perf_counter()
                response = call(client)
                out[kind].append((time.perf_counter() - start) * 1000)
                out["statuses"][response.status_code] += 1
                next_at += 1.0 / per_s

    threads = [
        threading.Thread(
            target=paced,
            args=(
                "analyze",
                VICTIM_ANALYZE_PER_S,
                lambda c: c.post("/v1/analyze", json={"text": VICTIM_TEXT, "evidence": False}),
            ),
        ),
        threading.Thread(
            target=paced,
            args=(
                "generate",
                VICTIM_GENERATE_PER_S,
                lambda c: c.post("/v1/generate", json={"prompt": "harbour mornings", "paragraphs": 1}),
            ),
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def p99(latencies: list[float]) -> float:
    return float(np.percentile(latencies, 99)) if latencies else float("nan")


@dataclass
class Round:
    """One quiet phase and one attacked phase of the victim, and what the attacker's requests got."""

    quiet: dict
    attacked: dict
    attacker: dict

    def ratio(self, kind: str) -> float:
        return p99(self.attacked[kind]) / p99(self.quiet[kind])


def pooled_p99(rounds: list[Round], phase: str, kind: str) -> float:
    """The p99 over every round's samples of one phase (``quiet`` or ``attacked``) and endpoint."""
    return p99([ms for r in rounds for ms in getattr(r, phase)[kind]])


def _from_driver(queue, driver, timeout: float):
    """The attacker process's next message; an error at once if it died (its traceback is above)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return queue.get(timeout=1.0)
        except Empty:
            if not driver.is_alive():
                raise RuntimeError(f"the attacker process exited with code {driver.exitcode}") from None
    raise TimeoutError(f"the attacker process sent nothing in {timeout:g} s")


def measure(server: Server, db_url: str, victim_key: str, name: str, tenant: str, seconds: float) -> Round:
    """The victim without the attack, then with it (the attacker a fresh tenant in its own process)."""
    database = Database(db_url)
    attacker_key = create_tenant(database, tenant)
    later_key = create_tenant(database, f"later-{tenant}") if ATTACKS[name].later_tenant else None
    database.dispose()
    quiet = victim(server.url, victim_key, seconds)
    queue: mp.Queue = mp.get_context("spawn").Queue()
    driver = mp.get_context("spawn").Process(
        target=_drive, args=(name, server.url, server.port, attacker_key, later_key, seconds + 1.0, queue)
    )
    driver.start()
    _from_driver(queue, driver, 900)  # the attacker process has started (seconds on a loaded machine)
    time.sleep(1.0)  # let the attack get going
    attacked = victim(server.url, victim_key, seconds)
    attacker = _from_driver(queue, driver, seconds + 900)
    driver.join()
    time.sleep(2.0)  # let cancelled work drain before the next baseline
    return Round(quiet, attacked, attacker)


# --- kill -9 of the server: the workers it leaves behind -------------------------------------------

KILL_CHECK = "kill-9"
"""Not a latency attack: :func:`orphans_after_kill_9`, run after the attacks on a server of its own."""
KILL_CHECK_AFTER_S = (1.0, 5.0, 15.0)


def process_tree(pid: int) -> dict[int, int]:
    """Every live process below ``pid`` (children, their children, ...) -> its resident bytes."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found: dict[int, int] = {}
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found[child] = _resident_bytes(child)
            stack.append(child)
    return found


def _resident_bytes(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return 1024 * next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def orphans_after_kill_9(db_url: str, home: str, backend: str) -> dict[str, object]:
    """A server of its own with its text workers started (a ``/v1/score``) and a PPO job running, then
    ``kill -9`` of the server process alone (as an operator or the OOM killer would): how many of the
    processes it had started are still running KILL_CHECK_AFTER_S seconds later (goal: none), and the
    memory they hold."""
    database = Database(db_url)
    key = create_tenant(database, f"kill-{os.urandom(3).hex()}")
    database.dispose()
    server = Server(db_url, home, backend)
    started: dict[int, int] = {}
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as c:
            c.post("/v1/score", json={"text": VICTIM_TEXT, "target_hrv": HRV}).raise_for_status()
            job = c.post("/v1/train", json={"target_hrv": HRV, "timesteps": 200_000}).json()
            deadline = time.monotonic() + 300
            while job["state"] != "running" and time.monotonic() < deadline:
                time.sleep(0.5)
                job = c.get(f"/v1/jobs/{job['id']}").json()
        started = process_tree(server.process.pid)
        os.kill(server.process.pid, 9)
        server.process.wait(timeout=30)
        killed_at = time.monotonic()
        result: dict[str, object] = {
            "worker processes": len(started),
            "their memory MB": round(sum(started.values()) / 2**20),
            "job": job["state"],
        }
        for after in KILL_CHECK_AFTER_S:
            time.sleep(max(0.0, killed_at + after - time.monotonic()))
            alive = [pid for pid in started if _running(pid)]
            result[f"running {after:g} s after"] = len(alive)
        result["their memory then MB"] = round(sum(_resident_bytes(pid) for pid in alive) / 2**20)
        return result
    finally:
        server.stop()
        for pid in started:  # the orphans of a build without the fix
            if _running(pid):
                os.kill(pid, 9)


# --- the run --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--duration",
        type=float,
        default=20.0,
        help="seconds per phase (without, with the attack); 20 s gives 80 generate latencies for a p99",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="quiet/attacked pairs per attack, the attacks interleaved; the verdict reads the p99 of "
        "all rounds' samples pooled (3 rounds of 20 s: 240 generate latencies a phase)",
    )
    parser.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    parser.add_argument(
        "--attacks",
        default=",".join([*ATTACKS, KILL_CHECK]),
        help=f"comma-separated, of: {', '.join([*ATTACKS, KILL_CHECK])}",
    )
    parser.add_argument(
        "--backend", default="builtin", help="the server's writer backend (RESONANCE_BACKEND)"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.attacks.split(",") if n.strip()]
    unknown = [n for n in names if n not in ATTACKS and n != KILL_CHECK]
    if unknown:
        parser.error(f"unknown attacks {unknown}; known: {[*ATTACKS, KILL_CHECK]}")
    kill_check = KILL_CHECK in names
    names = [n for n in names if n != KILL_CHECK]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    home = tempfile.mkdtemp(prefix="resonance-abuse-")
    os.environ["RESONANCE_HOME"] = home
    db_url = args.db or f"sqlite:///{home}/abuse.db"
    database = Database(db_url)
    database.migrate()
    suffix = os.urandom(3).hex()
    victim_key = create_tenant(database, f"victim-{suffix}")
    database.dispose()
    server = Server(db_url, home, args.backend)
    routes = server.routes()
    print(
        f"server {server.url} ({db_url.split(':', 1)[0]}, backend {args.backend}), "
        f"{args.duration:g} s per phase, {args.rounds} round(s)"
    )
    load_at_start = os.getloadavg()
    victim(server.url, victim_key, 2.0)  # warm-up: the writer and extractor load on first use
    skipped: dict[str, str] = {}
    for name in names:
        missing = [f"{m} {p}" for m, p in ATTACKS[name].needs if (m, p) not in routes]
        if missing:
            skipped[name] = f"skipped: the server has no {', '.join(missing)}"
    # one entry per name given, so that a repeated attack ("train-flood,train-flood") is measured again
    runs: list[tuple[str, list[Round]]] = [(name, []) for name in names]
    try:
        for round_index in range(args.rounds):
            for index, (name, rounds) in enumerate(runs):
                if name not in skipped:
                    tenant = f"attacker-{round_index}-{index}-{suffix}"
                    rounds.append(measure(server, db_url, victim_key, name, tenant, args.duration))
    finally:
        server.stop()
    print_table(runs, skipped)
    if kill_check:
        outcome = orphans_after_kill_9(db_url, home, args.backend)
        print(
            f"\n{KILL_CHECK}: " + ", ".join(f"{k}: {v}" for k, v in outcome.items()) + " (goal: none running)"
        )
    loads = " -> ".join(", ".join(f"{x:.1f}" for x in load) for load in (load_at_start, os.getloadavg()))
    print(f"machine load average (1, 5, 15 min) during the run: {loads} on {os.cpu_count()} CPUs")


def print_table(runs: list[tuple[str, list[Round]]], skipped: dict[str, str]) -> None:
    """Per attack: pooled p99 quiet / attacked and their ratio, each round's ratio, 500s, attacker's statuses."""
    print()
    header = (
        f"{'attack':<14} {'analyze p99 ms: quiet / attacked (x)':>38} "
        f"{'generate p99 ms: quiet / attacked (x)':>40} {'victim 500s':>11}  attacker got"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    server_errors = 0
    for name, rounds in runs:
        if name in skipped:
            print(f"{name:<14} {skipped[name]}")
            continue
        measured = [r for r in rounds if r.attacker]
        if not measured:
            print(f"{name:<14} not measured: the attacker made no request")
            continue
        cells = []
        for kind in ("analyze", "generate"):
            q, a = pooled_p99(measured, "quiet", kind), pooled_p99(measured, "attacked", kind)
            worst = max(worst, a / q)
            cells.append(f"{q:8.1f} / {a:8.1f} ({a / q:4.2f}x)")
        # 503 (busy) and 507 (quota) are answers, a 500 is a bug
        victim_500 = sum(r.attacked["statuses"].get(500, 0) for r in measured)
        attacker = Counter()
        for r in measured:
            attacker.update(r.attacker)
        server_errors += victim_500 + attacker.get(500, 0)
        got = ", ".join(f"{k}: {v}" for k, v in sorted(attacker.items(), key=lambda kv: str(kv[0])))
        print(f"{name:<14} {cells[0]:>38} {cells[1]:>40} {victim_500:>11}  {got}")
        if len(measured) > 1:
            per_round = "; ".join(f"{r.ratio('analyze'):.2f} / {r.ratio('generate'):.2f}" for r in measured)
            print(f"{'':<14} each round, analyze / generate: {per_round}")
    print()
    print(f"worst victim p99 ratio {worst:.2f}x (goal <= 2x); 500 responses {server_errors} (goal 0)")


if __name__ == "__main__":
    main()
