"""Workers as actors: one surface whether a worker is a local process or a Ray actor.

A ``Placement`` starts an instance of a class somewhere else and returns an :class:`Actor`, whose
``call(method, *args)`` runs ``instance.method(*args)`` there and returns a
``concurrent.futures.Future`` of the result (an exception raised there is raised by ``result()``):

- :class:`LocalProcesses` (the default): every actor is a child process of this one (forked from
  multiprocessing's fork server), serving calls that arrive over a pipe on up to
  ``max_concurrency`` threads of its own;
- :class:`RayCluster`: every actor is a Ray actor (``ray.remote(cls).options(max_concurrency=...)``)
  on the cluster at ``address`` (``"auto"``: the one this machine belongs to; ``"host:port"``;
  ``"local"``: a new single-machine instance started here). Ray is the optional ``ray`` extra.

Arguments and results travel pickled; tensors are copied, never shared (a worker never writes into
the caller's memory). The class of an actor must be importable by its module path where the actor
runs (on a cluster: the package installed on every node). ``placement_for(ray_address)`` is what a
command line's ``--ray ADDRESS`` option resolves to. This package imports ``core`` only.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from resonance_os.distributed.errors import ActorError, RayUnavailableError

STOP_SECONDS = 10.0


class Actor(Protocol):
    """A started worker: ``call`` returns a future of ``instance.method(*args, **kwargs)``."""

    name: str

    def call(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]: ...

    def stop(self) -> None: ...


class Placement(Protocol):
    """Where actors run: ``start(cls, *args, name=...)`` builds ``cls(*args)`` there (up to
    ``max_concurrency`` calls at once; ``num_cpus`` / ``num_gpus`` are what a Ray scheduler reserves
    for it, ignored locally); ``close()`` stops them all."""

    description: str

    def start(
        self,
        cls: type,
        *args: Any,
        name: str,
        max_concurrency: int = 1,
        num_cpus: float = 1,
        num_gpus: float = 0,
        **kwargs: Any,
    ) -> Actor: ...

    def close(self) -> None: ...


# ------------------------------------------------------------------------------------- local processes


@dataclass(frozen=True)
class RemoteFailure:
    """An exception raised in an actor that could not travel back as itself (it did not pickle)."""

    kind: str
    message: str
    trace: str


def _portable(exc: BaseException) -> BaseException | RemoteFailure:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RemoteFailure(type(exc).__name__, str(exc), traceback.format_exc())


def _send(connection: Connection, lock: threading.Lock, message: tuple[Any, ...]) -> None:
    try:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # the result itself does not pickle: say so instead
        payload = pickle.dumps((message[0], False, RemoteFailure(type(exc).__name__, str(exc), "")))
    with lock:
        connection.send_bytes(payload)


def _serve(construction: bytes, connection: Connection, max_concurrency: int) -> None:
    """The child process: build the instance, then answer ``(call_id, method, args, kwargs)`` messages
    with ``(call_id, ok, value)`` until the pipe closes or ``None`` arrives."""
    lock = threading.Lock()
    try:
        path, payload = pickle.loads(construction)
        sys.path.extend(entry for entry in path if entry not in sys.path)  # the caller's import path
        cls, args, kwargs = pickle.loads(payload)
        instance = cls(*args, **kwargs)
    except BaseException as exc:
        _send(connection, lock, (-1, False, _portable(exc)))
        return
    _send(connection, lock, (-1, True, os.getpid()))

    def answer(call_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            reply = (call_id, True, getattr(instance, method)(*args, **kwargs))
        except BaseException as exc:
            reply = (call_id, False, _portable(exc))
        _send(connection, lock, reply)

    with ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="actor") as calls:
        while True:
            try:
                message = pickle.loads(connection.recv_bytes())
            except (EOFError, OSError):
                break
            if message is None:
                break
            calls.submit(answer, *message)
    close = getattr(instance, "close", None)
    if callable(close):
        close()


class ProcessActor:
    """An actor in a child process of this one (see :class:`LocalProcesses`)."""

    def __init__(
        self,
        context: Any,
        cls: type,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str,
        max_concurrency: int,
    ) -> None:
        self.name = name
        payload = pickle.dumps((cls, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        construction = pickle.dumps((list(sys.path), payload), protocol=pickle.HIGHEST_PROTOCOL)
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(construction, child, max_concurrency), name=name, daemon=True
        )
        self._process.start()
        child.close()
        self._ids = itertools.count()
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._ready: Future[Any] = Future()
        self._pending[-1] = self._ready
        self._reader = threading.Thread(target=self._read, name=f"{name}-replies", daemon=True)
        self._reader.start()
        self.pid = self._ready.result()  # the constructor's exception, if it raised one

    def call(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        call_id = next(self._ids)
        payload = pickle.dumps((call_id, method, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self._closed:
                raise ActorError(f"actor {self.name} is stopped; start a new one")
            self._pending[call_id] = future
            try:
                self._connection.send_bytes(payload)
            except OSError as exc:
                self._pending.pop(call_id)
                raise ActorError(f"actor {self.name} cannot be reached: {exc}") from exc
        return future

    def _read(self) -> None:
        while True:
            try:
                call_id, ok, value = pickle.loads(self._connection.recv_bytes())
            except (EOFError, OSError):
                break
            with self._lock:
                future = self._pending.pop(call_id)
            if ok:
                future.set_result(value)
            elif isinstance(value, RemoteFailure):
                future.set_exception(
                    ActorError(f"{value.kind} in actor {self.name}: {value.message}\n{value.trace}")
                )
            else:
                future.set_exception(value)
        self._process.join(timeout=STOP_SECONDS)
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            future.set_exception(
                ActorError(f"actor {self.name} ended (exit code {self._process.exitcode}) before answering")
            )

    def stop(self) -> None:
        """Ask the process to finish its calls and exit; kill it if it has not after a while."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._connection.send_bytes(pickle.dumps(None))
                except OSError:
                    pass
        self._process.join(timeout=STOP_SECONDS)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._reader.join(timeout=STOP_SECONDS)
        self._connection.close()


_PRELOAD: list[str] = []


def preload_in_local_processes(*modules: str) -> None:
    """Have the fork server of local actors import ``modules`` when it starts (once per Python
    process, at the first ``LocalProcesses.start``), so every actor forked from it has them already.
    Modules that start actors register what their actors need when they are imported."""
    _PRELOAD.extend(module for module in modules if module not in _PRELOAD)


class LocalProcesses:
    """Actors as child processes of this one.

    They are forked from multiprocessing's fork server: a clean single-threaded process started once
    per Python process, which imports the modules registered with :func:`preload_in_local_processes`,
    the ``preload`` modules and the actor class's module of the first ``start`` (anything else is
    imported by each child), so a later actor starts in a fraction of a second instead of importing
    torch again. Nothing of the caller's threads or state is forked.
    """

    description = "local processes"

    def __init__(self, preload: Sequence[str] = ()) -> None:
        self._context = multiprocessing.get_context("forkserver")
        self._preload = list(preload)
        self._actors: list[ProcessActor] = []

    def start(
        self,
        cls: type,
        *args: Any,
        name: str,
        max_concurrency: int = 1,
        num_cpus: float = 1,
        num_gpus: float = 0,
        **kwargs: Any,
    ) -> ProcessActor:
        # only takes effect before the fork server's first start, in this process
        self._context.set_forkserver_preload([*_PRELOAD, *self._preload, cls.__module__])
        actor = ProcessActor(self._context, cls, args, kwargs, name, max_concurrency)
        self._actors.append(actor)
        return actor

    def close(self) -> None:
        while self._actors:
            self._actors.pop().stop()


# ----------------------------------------------------------------------------------------------- Ray


class RayActor:
    """An actor on a Ray cluster (see :class:`RayCluster`)."""

    def __init__(self, handle: Any, name: str, closes: bool) -> None:
        self.name = name
        self._handle = handle
        self._closes = closes

    def call(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        return getattr(self._handle, method).remote(*args, **kwargs).future()

    def stop(self) -> None:
        """Run the instance's ``close()`` (as a local actor's stop does), then end the actor."""
        import ray

        if self._closes:
            try:
                ray.get(self._handle.close.remote(), timeout=STOP_SECONDS)
            except Exception:  # an actor already gone has nothing left to close
                pass
        ray.kill(self._handle)


class RayCluster:
    """Actors on a Ray cluster: ``address`` is ``"auto"`` (the cluster this machine joined, or
    ``RAY_ADDRESS``), ``"host:port"`` / ``"ray://host:port"``, or ``"local"`` (start one here).

    ``init_options`` go to ``ray.init`` (for example ``_temp_dir`` or ``num_cpus`` for ``"local"``).
    Ray is connected on construction and disconnected by ``close()`` when this placement connected it.
    """

    def __init__(self, address: str = "auto", **init_options: Any) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RayUnavailableError(
                f"--ray {address} needs Ray, which is not installed; pip install 'resonance-os[ray]' "
                "(the same Ray version on every node of the cluster)"
            ) from exc
        self.address = address
        self.description = f"Ray actors ({address})"
        self._actors: list[RayActor] = []
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            options = {"log_to_driver": False, "configure_logging": False, **init_options}
            try:
                ray.init(address=None if address == "local" else address, **options)
            except ConnectionError as exc:
                raise RayUnavailableError(
                    f"no Ray cluster at {address!r}: {exc}; start one with `ray start --head` (see "
                    "docs/verify.md, 'On a Ray cluster') or pass --ray local for one on this machine"
                ) from exc

    def start(
        self,
        cls: type,
        *args: Any,
        name: str,
        max_concurrency: int = 1,
        num_cpus: float = 1,
        num_gpus: float = 0,
        **kwargs: Any,
    ) -> RayActor:
        import ray

        remote = ray.remote(cls).options(
            max_concurrency=max_concurrency, num_cpus=num_cpus, num_gpus=num_gpus
        )
        actor = RayActor(remote.remote(*args, **kwargs), name, callable(getattr(cls, "close", None)))
        self._actors.append(actor)
        return actor

    def close(self) -> None:
        import ray

        while self._actors:
            self._actors.pop().stop()
        if self._owns_connection and ray.is_initialized():
            ray.shutdown()


def placement_for(ray_address: str | None) -> LocalProcesses | RayCluster:
    """``--ray ADDRESS`` -> Ray actors on that cluster; no address -> local processes."""
    if ray_address is None or ray_address == "":
        return LocalProcesses()
    return RayCluster(ray_address)
