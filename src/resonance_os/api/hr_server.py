"""The ResonanceOS REST service: ``create_app(db_url=None, ...)`` and ``python -m resonance_os.api.hr_server``.

Run it with ``resonance serve`` (or this module); OpenAPI docs at ``/docs``. Configuration: arguments,
then ``RESONANCE_*`` environment variables (see :class:`resonance_os.api.settings.Settings`), then the
embedded defaults (SQLite under ``~/.resonance_os/``, 127.0.0.1:8000); the original's ``API_HOST`` and
``API_PORT`` are read when ``RESONANCE_HOST``/``RESONANCE_PORT`` are unset. The original's in-process
call, ``hr_generate(SimpleRequest(prompt=...))``, is importable from here (:mod:`resonance_os.api.text.in_process`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from resonance_os import __version__
from resonance_os.api import tinker as tinker_api
from resonance_os.api.agl.routes import install_agent_store
from resonance_os.api.http.deps import tenant
from resonance_os.api.http.errors import install_error_handlers
from resonance_os.api.http.middleware import BodyLimitMiddleware, MetricsMiddleware, NulGuardMiddleware
from resonance_os.api.http.protocol import HeaderTimeoutProtocol
from resonance_os.api.http.studio import mount_studio
from resonance_os.api.jobs import queue
from resonance_os.api.jobs.processes import PARENT_PID_ENV, die_with_parent, parent_pid_from_env
from resonance_os.api.jobs.serving_gate import ServingGate, ServingGateMiddleware
from resonance_os.api.limits.per_address import AddressLimiter
from resonance_os.api.limits.per_key import RateLimiter, SharedRateLimiter
from resonance_os.api.openai import routes as openai_routes
from resonance_os.api.openai import vllm_lora
from resonance_os.api.persistence.auth_cache import AuthCache
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.keys import resonance_home
from resonance_os.api.persistence.quotas import StorageQuota
from resonance_os.api.routes import feedback, generate, health, profiles, steer, text
from resonance_os.api.routes import jobs as job_routes
from resonance_os.api.routes import voice_adapters as voice_adapter_routes
from resonance_os.api.service import ResonanceService
from resonance_os.api.settings import Settings
from resonance_os.api.text.heap import settle_heap
from resonance_os.api.text.workers import TextWorkers
from resonance_os.core.env import getenv

if TYPE_CHECKING:
    from resonance_os.api.text.in_process import SimpleRequest, SimpleResponse, hr_generate

__all__ = ["SimpleRequest", "SimpleResponse", "create_app", "hr_generate", "main", "serve"]

log = logging.getLogger("resonance_os.api")

GIL_SWITCH_INTERVAL_S = 0.0005
"""How often a thread holding the GIL is asked to let another run (Python's default: 5 ms). Writing and
long measurements run in the thread pool while the event loop serves every other request; at 5 ms a
request on the loop waited up to that long at each of its steps behind a writing thread (a victim's
/v1/analyze p99 5-7x its quiet value while another tenant wrote 12-paragraph articles; 2.4-2.6x at
0.5 ms, benchmarks/abuse.py)."""

WORKER_HEALTHCHECK_S = 60
"""Seconds a worker may take to answer uvicorn's health ping (default 5) before it is killed and
restarted: a worker importing the stack on a busy machine took longer, and was restarted forever."""

KEEP_ALIVE_S = 75
"""Idle keep-alive connections are closed after this long (uvicorn's default of 5 s races with busy
clients reusing a connection just as the server closes it, which they see as a reset)."""


def create_app(db_url: str | None = None, settings: Settings | None = None, **overrides) -> FastAPI:
    """Build the app. ``db_url`` is a SQLAlchemy URL or a SQLite file/folder path (default
    ``$RESONANCE_DB``, then ``~/.resonance_os/resonance.db``); ``overrides`` set :class:`Settings` fields.

    The database is migrated to the newest revision here; at start-up, jobs left running by a previous
    server whose worker is gone are queued again (to resume from their checkpoints), and a
    :class:`~resonance_os.api.jobs.queue.JobRunner` thread starts queued jobs within the job limits.
    """
    settings = settings or Settings.from_env(db_url=db_url, **overrides)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    svc = _service(settings)
    limits = queue.JobLimits(
        running=settings.max_running_jobs,
        running_per_tenant=settings.max_running_jobs_per_tenant,
        queued_per_tenant=settings.max_queued_jobs_per_tenant,
        queued=settings.max_queued_jobs,
    )
    app = FastAPI(
        title="ResonanceOS",
        version=__version__,
        description="Measure, score and write text toward Human Resonance Vector profiles; learn from feedback.",
        lifespan=_lifespan(svc, settings, limits),
    )
    app.state.settings = settings
    app.state.service = svc
    app.state.job_limits = limits
    app.state.job_runner = None
    app.state.serving_gate = None
    _install_limiters(app, settings)
    install_error_handlers(app, authenticate=tenant)
    _install_routes(app)
    _install_middleware(app, settings)
    return app


def _service(settings: Settings) -> ResonanceService:
    """The service on the (migrated, unless ``settings.migrate`` is off) database, with its text workers
    and storage quota."""
    db = Database(settings.db_url)
    if settings.migrate:
        db.migrate()
    return ResonanceService(
        db,
        TextWorkers(
            settings.text_workers,
            settings.generate_per_tenant,
            settings.generate_total,
            record=resonance_home() / "text-workers.json",
        ),
        StorageQuota(rows=settings.quota_rows, bytes=settings.quota_bytes),
    )


def _lifespan(svc: ResonanceService, settings: Settings, limits: queue.JobLimits):
    """The app's start-up (text workers, job recovery, the job runner and serving gate) and shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        svc.workers.start()  # load the language model now, not at the first write
        outcome = queue.recover(svc.db)
        if outcome["queued"] or outcome["failed"]:
            log.warning("job recovery: %s", outcome)
        runner = gate = None
        if settings.launch_workers:
            if settings.training_yield_share > 0:
                gate = ServingGate.create(resonance_home() / "serving", settings.training_yield_share)
            app.state.serving_gate = gate
            runner = queue.JobRunner(
                svc.db, limits, settings.checkpoint_every, serving_gate=None if gate is None else gate.path
            )
        app.state.job_runner = runner.start() if runner is not None else None
        yield
        if runner is not None:
            runner.stop()
        if gate is not None:
            gate.close()
            app.state.serving_gate = None
        svc.close()
        svc.db.dispose()

    return lifespan


def _install_limiters(app: FastAPI, settings: Settings) -> None:
    """The per-key rate limiter (shared by ``--workers`` processes through a file, where one is set), the
    API-key cache and the per-address limit on failed sign-ins."""
    if settings.rate_limit_file:
        app.state.rate_limiter = SharedRateLimiter(
            settings.rate_limit_per_s, settings.rate_limit_burst, settings.rate_limit_file
        )
    else:
        app.state.rate_limiter = RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst)
    app.state.auth_cache = AuthCache(settings.auth_cache_s)
    app.state.auth_failures = AddressLimiter(settings.failed_auth_per_s, settings.failed_auth_burst)


def _install_routes(app: FastAPI) -> None:
    """The REST routes, the OpenAI-compatible API, the Tinker API, the agent store and the Studio."""
    for router in (
        health.router,
        text.router,
        generate.router,
        steer.router,
        profiles.router,
        feedback.router,
        job_routes.router,
        voice_adapter_routes.router,
        openai_routes.router,
        vllm_lora.router,
    ):
        app.include_router(router)
    tinker_api.install(app)  # /api/v1: the Tinker SDK's endpoints (docs/tinker.md)
    install_agent_store(app)
    mount_studio(app)


def _install_middleware(app: FastAPI, settings: Settings) -> None:
    """Middleware, innermost first: the serving gate, the body limit, the NUL guard, the metrics."""
    app.add_middleware(ServingGateMiddleware, state=app.state)  # innermost: counts once the body is in
    app.add_middleware(
        BodyLimitMiddleware, max_bytes=settings.max_body_bytes, timeout_s=settings.body_timeout_s
    )
    app.add_middleware(NulGuardMiddleware)
    app.add_middleware(MetricsMiddleware)


def create_served_app() -> FastAPI:
    """:func:`create_app` from the environment, for the process that serves it: its loaded models are
    then kept out of the garbage collector's full passes (:func:`~resonance_os.api.text.heap.settle_heap`).
    A server process of ``--workers N`` stops when the supervisor that started it dies."""
    supervisor = parent_pid_from_env()
    if supervisor is not None and supervisor != os.getpid():
        die_with_parent(supervisor, lambda: os.kill(os.getpid(), signal.SIGTERM))
    app = create_app()
    settle_heap()
    return app


def serve(host: str = "127.0.0.1", port: int = 8000, db_url: str | None = None, workers: int = 1) -> None:
    """Migrate once, then run the app under uvicorn with ``workers`` processes."""
    import tempfile

    import uvicorn

    db = Database(db_url)
    db.migrate()
    db.dispose()
    os.environ["RESONANCE_DB"] = db.url
    os.environ.pop(PARENT_PID_ENV, None)
    if workers > 1:  # each server process stops with this supervisor, even after kill -9
        os.environ[PARENT_PID_ENV] = str(os.getpid())
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="resonance-prometheus-")
    if workers > 1 and not os.environ.get("RESONANCE_RATE_LIMIT_FILE"):  # one rate per key, not per worker
        shared = tempfile.mkdtemp(prefix="resonance-ratelimit-")
        os.environ["RESONANCE_RATE_LIMIT_FILE"] = os.path.join(shared, "buckets")
    uvicorn.run(
        "resonance_os.api.hr_server:create_served_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,
        timeout_keep_alive=KEEP_ALIVE_S,
        http=HeaderTimeoutProtocol,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the ResonanceOS REST service.")
    parser.add_argument(
        "--host", default=getenv("RESONANCE_HOST", "127.0.0.1"), help="$RESONANCE_HOST or $API_HOST"
    )
    parser.add_argument(
        "--port", type=int, default=getenv("RESONANCE_PORT", "8000"), help="$RESONANCE_PORT or $API_PORT"
    )
    parser.add_argument("--db", default=None, help="database URL or SQLite path (default: $RESONANCE_DB)")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    serve(args.host, args.port, args.db, args.workers)


def __getattr__(name: str) -> Any:
    """The original's in-process names (``SimpleRequest``, ``SimpleResponse``, ``hr_generate``), loaded
    on first use so that starting the server does not load the writer."""
    if name in ("SimpleRequest", "SimpleResponse", "hr_generate"):
        from resonance_os.api.text import in_process

        return getattr(in_process, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
