"""Text workers: the service's CPU-bound text work in separate processes, shared fairly between tenants.

In the server process, writing, scoring and measuring long texts hold the GIL: every other request,
served on the event loop, waits at each step behind them (``benchmarks/abuse.py``: another tenant's
p99 2-3x its quiet value while one tenant wrote 12-paragraph articles or stored 40,000-character
texts). :class:`TextWorkers` with ``processes=N`` runs those calls in N worker processes instead:

- the workers (``multiprocessing`` spawn) start all at once, with the server (:meth:`TextWorkers.start`,
  which the app's start-up calls) or else on first use; each builds and warms its
  :class:`~resonance_os.api.text.engine.TextEngine` (then :func:`~resonance_os.api.text.heap.settle_heap`)
  before it takes work and serves each call on its own Unix-socket connection
  (``<tmp>/resonance-text-workers-*/``, an authentication key per server) in a thread;
- each worker has its own :class:`~resonance_os.api.text.turns.WriterTurns`: one call runs there at a time,
  and a writing call passes the turn to a waiting tenant between paragraphs, round-robin, as the
  single in-process writer did;
- a call goes to the worker where its tenant already has work (one tenant's calls share one core),
  else to the worker with the fewest tenants: with two workers, a tenant writing long articles or
  flooding feedback does not delay another tenant's call at all; with more busy tenants than
  workers, a call waits at most one paragraph (or one measurement) per tenant ahead of it;
- a worker that dies is started again by the next call; the call it was running answers 503;
- :meth:`TextWorkers.readiness` says whether they are ready, how long they have been starting and
  about how long starting takes (the last start's measured time, kept in ``record``), and
  :meth:`TextWorkers.paragraph_seconds` about how long a paragraph takes to write (the median of the
  last writes, else the warm-up's paragraph): ``GET /health`` and the writing progress report them;
- a worker dies with its server (:func:`~resonance_os.api.jobs.processes.die_with_parent`), even one
  killed with ``kill -9``: it never holds its memory (about 0.5 GB with the local writer) as an orphan.

``processes=0`` runs the calls in the calling thread under one ``WriterTurns`` (the library's default,
and what most tests use).
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import pickle
import shutil
import statistics
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from resonance_os.api.jobs.processes import die_with_parent
from resonance_os.api.text.engine import TextEngine
from resonance_os.api.text.heap import settle_heap
from resonance_os.api.text.turns import WriterTurns
from resonance_os.core.errors import BusyError, ResonanceError

WRITING_CALLS = frozenset({"write", "refine"})
"""Engine calls that write paragraph by paragraph (they take ``between``)."""
STARTUP_S = 600.0
"""How long a call waits for a worker to build its engine (seconds; then 503)."""
PARAGRAPH_SAMPLES = 5
"""Paragraph writing times kept for :meth:`TextWorkers.paragraph_seconds` (their median)."""


class TextWorkerError(BusyError):
    """A text worker process stopped while it worked on the request."""


class _Stopped(Exception):
    """The server stopped a writing call between paragraphs (its time budget ran out)."""


# --- the worker process ---------------------------------------------------------------------------


def _serve(address: str, authkey: bytes, ready, timings, server_pid: int) -> None:
    """A worker process: exit with the server, build and warm the engine (its warm-up paragraph's
    seconds and the wall-clock time it became ready go to ``timings``), then serve every connection
    in its own thread."""
    die_with_parent(server_pid)
    engine = TextEngine()
    paragraph_s = engine.warm()
    settle_heap()
    with Listener(address, family="AF_UNIX", authkey=authkey) as listener:
        timings[0], timings[1] = time.time(), paragraph_s
        ready.set()
        while True:
            try:
                connection = listener.accept()
            except (OSError, EOFError, mp.AuthenticationError):
                continue
            threading.Thread(target=_serve_call, args=(engine, connection), daemon=True).start()


def _serve_call(engine: TextEngine, connection: Connection) -> None:
    with connection:
        method, args, kwargs = connection.recv()
        if method in WRITING_CALLS:

            def between() -> None:
                connection.send(("between", None))
                if connection.recv() != "go":
                    raise _Stopped

            kwargs["between"] = between
        try:
            result = getattr(engine, method)(*args, **kwargs)
        except _Stopped:
            return
        except Exception as exc:
            if not isinstance(exc, ResonanceError):
                traceback.print_exc()  # our bug: the traceback goes to the server's log
            connection.send(("error", _portable(exc)))
        else:
            connection.send(("result", result))


def _portable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a ``RuntimeError`` naming it."""
    try:
        return pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


# --- the server side ------------------------------------------------------------------------------


class _Worker:
    def __init__(self, index: int, folder: str, authkey: bytes, generation: int) -> None:
        context = mp.get_context("spawn")
        self.address = os.path.join(folder, f"worker-{index}-{generation}.sock")
        self.ready = context.Event()
        self.timings = context.Array("d", [math.nan, math.nan], lock=False)  # ready at (epoch s), paragraph s
        self.started_at = time.time()
        self.seen_ready = False
        self.process = context.Process(
            target=_serve,
            args=(self.address, authkey, self.ready, self.timings, os.getpid()),
            name=f"resonance-text-worker-{index}",
            daemon=True,
        )
        self.process.start()


class TextWorkers:
    """Runs :class:`TextEngine` calls fairly between tenants, in ``processes`` worker processes (0: in
    the calling thread); see the module docstring. ``per_tenant`` and ``total`` are the generation
    limits of each worker's :class:`WriterTurns`. ``record`` (a JSON file) keeps the last start's
    measured time and paragraph time across restarts, for the next start's estimate."""

    def __init__(
        self,
        processes: int = 0,
        per_tenant: int = 2,
        total: int = 16,
        engine: TextEngine | None = None,
        record: Path | None = None,
    ) -> None:
        self.processes = processes
        self.engine = engine or TextEngine()
        self.turns = [WriterTurns(per_tenant, total) for _ in range(max(1, processes))]
        self._lock = threading.Lock()
        self._workers: list[_Worker | None] = [None] * processes
        self._started = 0
        self._authkey = os.urandom(32)
        self._folder: str | None = None
        self._record = record
        remembered = _read_record(record)
        self._start_s: float | None = remembered.get("start_s")
        self._paragraphs: deque[float] = deque(maxlen=PARAGRAPH_SAMPLES)
        self._warm_paragraph_s: float | None = remembered.get("paragraph_s")

    def start(self) -> None:
        """Start the worker processes now, without waiting for them (none with ``processes=0``)."""
        if self.processes:
            self._start_missing()

    def readiness(self) -> dict[str, Any]:
        """``ready`` (every worker process has warmed its engine; always with ``processes=0``, where
        calls build it here on first use), ``processes``, ``ready_processes``, ``starting_s`` (how
        long the slowest unready worker has been starting, else ``None``) and ``expected_start_s``
        (about how long a start takes: the last measured one, ``None`` before the first)."""
        self._collect_timings()
        with self._lock:
            workers = list(self._workers)
        now = time.time()
        unready = [w for w in workers if w is None or not w.ready.is_set() or not w.process.is_alive()]
        started = [now - w.started_at for w in unready if w is not None]
        return {
            "ready": not unready,
            "processes": self.processes,
            "ready_processes": len(workers) - len(unready),
            "starting_s": round(max(started), 1) if started else None,
            "expected_start_s": None if self._start_s is None else round(self._start_s, 1),
        }

    def paragraph_seconds(self) -> float | None:
        """About how long writing one paragraph takes now: the median of the last writes' paragraphs,
        else the workers' warm-up paragraph (last start's, before this one's), else ``None``."""
        self._collect_timings()
        with self._lock:
            if self._paragraphs:
                return round(statistics.median(self._paragraphs), 1)
            return None if self._warm_paragraph_s is None else round(self._warm_paragraph_s, 1)

    def run(
        self,
        tenant_id: int,
        method: str,
        *args: Any,
        deadline: float | None = None,
        counted: bool = True,
        on_paragraph: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> Any:
        """``TextEngine.<method>(*args, **kwargs)`` in ``tenant_id``'s turn. ``deadline`` (a
        ``time.monotonic()`` instant) and ``counted`` are the turn's (:meth:`WriterTurns.turn`);
        ``on_paragraph()`` runs when a writing call starts its next paragraph."""
        index = self._place(tenant_id)
        with self.turns[index].turn(tenant_id, deadline, counted=counted) as pass_turn:
            clock = _ParagraphClock(self._paragraph_written if method == "write" else None)

            def between() -> None:
                clock.lap()
                pass_turn()
                clock.restart()
                if on_paragraph is not None:
                    on_paragraph()

            if not self.processes:
                if method in WRITING_CALLS:
                    kwargs["between"] = between
                result = getattr(self.engine, method)(*args, **kwargs)
            else:
                result = self._remote(index, method, args, kwargs, between, deadline, clock)
            clock.lap()
            return result

    @contextmanager
    def turn(self, tenant_id: int, deadline: float | None = None) -> Iterator[Callable[[], None]]:
        """A counted turn, in the rotation of the tenant's worker, for writing done in this process (a
        trained policy's generation)."""
        with self.turns[self._place(tenant_id)].turn(tenant_id, deadline) as pass_turn:
            yield pass_turn

    def pids(self) -> list[int]:
        """The process ids of the worker processes running now (none before the first call)."""
        with self._lock:
            return [w.process.pid for w in self._workers if w is not None and w.process.is_alive()]

    def close(self) -> None:
        """Stop the worker processes."""
        with self._lock:
            workers, self._workers = self._workers, [None] * self.processes
            folder, self._folder = self._folder, None
        for worker in workers:
            if worker is not None and worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=10)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def _place(self, tenant_id: int) -> int:
        """The worker where the tenant has work, else the one with the fewest tenants."""
        if len(self.turns) == 1:
            return 0
        present = [turns.tenants() for turns in self.turns]
        for index, tenants in enumerate(present):
            if tenant_id in tenants:
                return index
        return min(range(len(present)), key=lambda index: len(present[index]))

    def _start_missing(self) -> list[_Worker]:
        """Start every missing or dead worker; the workers."""
        with self._lock:
            if self._folder is None:
                self._folder = tempfile.mkdtemp(prefix="resonance-text-workers-")
            for i, worker in enumerate(self._workers):
                if worker is None or not worker.process.is_alive():
                    self._started += 1
                    self._workers[i] = _Worker(i, self._folder, self._authkey, self._started)
            return list(self._workers)

    def _worker(self, index: int, deadline: float | None) -> _Worker:
        """Worker ``index``, started (with every other missing or dead worker) if needed, once ready."""
        worker = self._start_missing()[index]
        wait = STARTUP_S if deadline is None else min(STARTUP_S, deadline - time.monotonic())
        if not worker.ready.wait(max(wait, 0.0)):
            expected = self.readiness()["expected_start_s"]
            about = f" (a start takes about {expected:.0f} s here)" if expected else ""
            raise BusyError(
                f"the text workers are still loading the language model{about}; GET /health/ready "
                "answers 200 once they are ready: retry then"
            )
        self._collect_timings()
        return worker

    def _collect_timings(self) -> None:
        """Note each worker that became ready since the last look: its start time and warm-up
        paragraph time, kept (and written to ``record``) for the next estimates."""
        with self._lock:
            fresh = [w for w in self._workers if w is not None and not w.seen_ready and w.ready.is_set()]
            for worker in fresh:
                worker.seen_ready = True
                ready_at, paragraph_s = worker.timings[0], worker.timings[1]
                self._start_s = ready_at - worker.started_at
                self._warm_paragraph_s = paragraph_s
            if fresh and self._record is not None:
                _write_record(self._record, {"start_s": self._start_s, "paragraph_s": self._warm_paragraph_s})

    def _paragraph_written(self, seconds: float) -> None:
        with self._lock:
            self._paragraphs.append(seconds)

    def _remote(
        self,
        index: int,
        method: str,
        args: tuple,
        kwargs: dict,
        between: Callable[[], None],
        deadline: float | None,
        clock: _ParagraphClock,
    ) -> Any:
        worker = self._worker(index, deadline)
        clock.restart()  # the first paragraph starts once the worker is ready
        try:
            connection = Client(worker.address, family="AF_UNIX", authkey=self._authkey)
        except OSError:
            raise TextWorkerError("a text worker is restarting; retry the request") from None
        with connection:
            connection.send((method, args, kwargs))
            while True:
                try:
                    kind, payload = connection.recv()
                except (EOFError, OSError):
                    raise TextWorkerError(
                        "the text worker stopped while working on this request (the server restarts "
                        "it); retry the request"
                    ) from None
                if kind == "between":
                    try:
                        between()
                    except BaseException:
                        connection.send("stop")
                        raise
                    connection.send("go")
                elif kind == "error":
                    raise payload
                else:
                    return payload


class _ParagraphClock:
    """Times the paragraphs of one writing call: ``restart()`` when one starts, ``lap()`` when it
    ends (``written(seconds)`` is told, once per paragraph); ``written=None`` times nothing."""

    def __init__(self, written: Callable[[float], None] | None) -> None:
        self._written = written
        self._since: float | None = time.monotonic()

    def restart(self) -> None:
        self._since = time.monotonic()

    def lap(self) -> None:
        if self._written is not None and self._since is not None:
            self._written(time.monotonic() - self._since)
        self._since = None


def _read_record(record: Path | None) -> dict[str, float]:
    """The timings a previous start kept in ``record`` (nothing if absent or unreadable)."""
    if record is None:
        return {}
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        k: float(v) for k, v in data.items() if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
    }


def _write_record(record: Path, timings: dict[str, float | None]) -> None:
    """Replace ``record`` atomically with ``timings`` (best effort: a read-only home keeps no record)."""
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        partial = record.with_name(record.name + ".partial")
        partial.write_text(json.dumps(timings))
        os.replace(partial, record)
    except OSError:
        pass
