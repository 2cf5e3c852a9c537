"""``/api/v1/...``: the endpoints the official ``tinker`` SDK (0.38) calls, and its REST client's listings.

Auth: ``X-API-Key: tml-<key>``, where ``<key>`` is a tenant key from ``resonance tenants create`` (the SDK
refuses keys without the ``tml-`` prefix, so the prefix is added on the client and removed here); a plain
``Authorization: Bearer <key>`` works too. Work requests are stored as futures and answered at once with
a ``request_id``; ``retrieve_future`` long-polls for up to ``LONG_POLL_S`` and then answers ``try_again``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

import resonance_os.api.tinker.checkpoints as checkpoints
import resonance_os.api.tinker.futures as futures
from resonance_os.api.limits.per_key import RateLimiter
from resonance_os.api.persistence.db import Database, new_id
from resonance_os.api.persistence.tenants import TenantContext, authenticate
from resonance_os.api.tinker.config import TinkerConfig
from resonance_os.api.tinker.errors import UserError
from resonance_os.api.tinker.store import (
    FAILED,
    PENDING,
    RUNNING,
    TinkerCheckpoint,
    TinkerModel,
    TinkerSampler,
    TinkerSession,
)
from resonance_os.api.tinker.wire import decode_forward_backward
from resonance_os.api.tinker.worker import TinkerWorker
from resonance_os.profiles.schema import utcnow

LONG_POLL_S = 35.0
"""How long ``retrieve_future`` holds a poll before ``try_again``: within the SDK's own 45 s timeout, and long
enough that a queued request costs few polls (the SDK logs a warning for each ``try_again``)."""

KEY_PREFIX = "tml-"


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Start the Tinker worker with the app (and stop it after)."""
    config = TinkerConfig.from_env()
    waiters = futures.Waiters()
    worker = TinkerWorker(app.state.service.db, config, waiters).start()
    app.state.tinker = (config, waiters, worker)
    try:
        yield
    finally:
        await run_in_threadpool(worker.stop)


router = APIRouter(prefix="/api/v1", tags=["tinker"], lifespan=lifespan)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "category": "user"}, status_code=status)


class Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self.status, self.message, self.headers = status, message, headers or {}


async def caller(request: Request) -> TenantContext:
    """The tenant behind ``X-API-Key: tml-<key>`` (or ``Authorization: Bearer <key>``)."""
    presented = request.headers.get("x-api-key") or ""
    if presented.startswith(KEY_PREFIX):
        presented = presented[len(KEY_PREFIX) :]
    if not presented:
        scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
        presented = token.strip() if scheme.lower() == "bearer" else ""
    address = request.client.host if request.client else "unknown"
    failures = request.app.state.auth_failures
    if failures.wait(address) > 0:
        raise Refused(429, f"too many failed authentications from {address}; retry later with a valid key")
    db = request.app.state.service.db
    context = (
        request.app.state.auth_cache.lookup(presented, lambda key: authenticate(db, key))
        if presented
        else None
    )
    if context is None:
        failures.take(address)
        raise Refused(
            401,
            "invalid, revoked or missing API key: pass api_key='tml-<key>' to tinker.ServiceClient "
            "(or TINKER_API_KEY), with a key from `resonance tenants create NAME`",
        )
    return context


async def limited(request: Request, tenant: TenantContext = Depends(caller)) -> TenantContext:
    """``caller`` plus the per-key rate limit (work submissions; polls are not counted)."""
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.acquire(tenant.key_id)
    if wait > 0:
        raise Refused(
            429,
            f"rate limit of {limiter.rate:g} requests/s per key exceeded",
            {"Retry-After": limiter.retry_after_header(wait)},
        )
    return tenant


def install(app: FastAPI) -> None:
    """Add the router and its error answers to ``app``."""

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse(
            {"error": exc.message, "category": "user"}, status_code=exc.status, headers=exc.headers
        )

    app.include_router(router)


def _state(request: Request) -> tuple[TinkerConfig, futures.Waiters, TinkerWorker]:
    return request.app.state.tinker


def _db(request: Request) -> Database:
    return request.app.state.service.db


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise Refused(400, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    return body


async def _submit(
    request: Request,
    tenant: TenantContext,
    model_key: str,
    seq_id: Any,
    kind: str,
    body: bytes | dict[str, Any],
) -> int:
    config, _, worker = _state(request)
    if seq_id is not None and not isinstance(seq_id, int):
        raise Refused(400, f"seq_id={seq_id!r} must be an integer")
    try:
        future_id = await run_in_threadpool(
            futures.submit,
            _db(request),
            tenant.tenant_id,
            f"{tenant.tenant_id}/{model_key}",
            seq_id,
            kind,
            body,
            config.max_queued,
        )
    except futures.QueueFull as exc:
        raise Refused(429, str(exc), {"Retry-After": "1"}) from None
    worker.wake()
    return future_id


def _seq(body: dict[str, Any], name: str) -> int:
    """An integer field of the body (default 0), or a 400 naming it."""
    value = body.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**31:
        raise Refused(400, f"{name}={value!r} must be an integer in [0, 2^31)")
    return value


def _folder_of(config: TinkerConfig, base_model: str) -> str | None:
    """The local folder of a configured base model (the tokenizer the SDK loads), or None if unknown."""
    if base_model not in config.base_models:
        return None
    folder = config.base_models[base_model]
    if folder is None:
        from resonance_os.quality import reference_lm

        return str(reference_lm.default_cache_dir())
    return str(Path(folder).expanduser().resolve())


def _model_config(folder: str | None) -> dict[str, Any]:
    """The folder's Hugging Face config.json ({} when unreadable: the model is not converted yet)."""
    try:
        return json.loads((Path(str(folder)) / "config.json").read_text())
    except (OSError, ValueError):
        return {}


# --------------------------------------------------------------------------------------- client set-up
@router.post("/client/config")
async def client_config(request: Request) -> dict[str, Any]:
    max_body = request.app.state.settings.max_body_bytes
    return {
        "pjwt_auth_enabled": False,
        "use_pyqwest_transport": False,
        "parallel_fwdbwd_chunks": True,
        "proto_compress_fwdbwd": False,
        "fwdbwd_max_chunk_len": 1024,
        "fwdbwd_max_chunk_bytes_count": max_body // 2,  # the SDK's estimate is of the uncompressed body
        "sample_use_retrieve_futures": False,
        "custom_loss_server_side": False,
        "sample_join_sampling_session": False,
    }


@router.post("/client/dynamic_config")
async def dynamic_config() -> dict[str, Any]:
    return {"refresh_interval_sec": 300, "sample_cancel_enabled": False, "sample_cancel_max_batch_size": 64}


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/get_server_capabilities")
async def capabilities(request: Request, tenant: TenantContext = Depends(caller)) -> dict[str, Any]:
    config = _state(request)[0]
    models = []
    for name in config.base_models:
        context = _model_config(_folder_of(config, name)).get("max_position_embeddings")
        models.append(
            {"model_name": name, "max_context_length": context, "trainable": True, "sampleable": True}
        )
    return {"supported_models": models}


@router.post("/create_session")
async def create_session(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    body = await _json(request)
    session_id = f"session-{new_id()[:16]}"
    with _db(request).write() as session:
        session.add(
            TinkerSession(
                id=session_id,
                tenant_id=tenant.tenant_id,
                tags={"tags": list(body.get("tags") or [])},
                user_metadata=dict(body.get("user_metadata") or {}),
                sdk_version=str(body.get("sdk_version") or "")[:32] or None,
            )
        )
    return {"type": "create_session", "session_id": session_id}


Row = TypeVar("Row", TinkerSession, TinkerModel, TinkerSampler)


def _owned(request: Request, tenant: TenantContext, table: type[Row], row_id: Any, missing: str) -> Row:
    """The tenant's row of ``table`` (sessions, runs, samplers) with id ``row_id``; a 404 saying
    ``missing`` when there is none, so another tenant's ids read as unknown."""
    with _db(request).read() as session:
        row = session.scalar(
            sa.select(table).where(table.id == str(row_id), table.tenant_id == tenant.tenant_id)
        )
    if row is None:
        raise Refused(404, missing)
    return row


def _own_session(request: Request, tenant: TenantContext, session_id: Any) -> TinkerSession:
    missing = f"session_id={session_id!r}: no such session of this tenant; create one with create_session"
    return _owned(request, tenant, TinkerSession, session_id, missing)


@router.post("/session_heartbeat")
async def heartbeat(request: Request, tenant: TenantContext = Depends(caller)) -> Any:
    body = await _json(request)
    with _db(request).write() as session:
        updated = session.execute(
            sa.update(TinkerSession)
            .where(
                TinkerSession.id == str(body.get("session_id")),
                TinkerSession.tenant_id == tenant.tenant_id,
                TinkerSession.finished_at.is_(None),
            )
            .values(heartbeat_at=utcnow())
        ).rowcount
    if not updated:
        return _error(410, "this session is finished or unknown")
    return {"type": "session_heartbeat"}


@router.post("/telemetry")
async def telemetry(request: Request, tenant: TenantContext = Depends(caller)) -> dict[str, str]:
    return {"status": "accepted"}  # accepted and dropped: nothing is collected


@router.post("/sessions/{session_id}/finish")
async def finish_session(
    session_id: str, request: Request, tenant: TenantContext = Depends(caller)
) -> dict[str, Any]:
    _own_session(request, tenant, session_id)
    with _db(request).write() as session:
        session.execute(
            sa.update(TinkerSession).where(TinkerSession.id == session_id).values(finished_at=utcnow())
        )
    await _submit(request, tenant, f"session:{session_id}", None, "close_session", {"session_id": session_id})
    return {"type": "finish"}


# --------------------------------------------------------------------------------------- training runs
@router.post("/create_model")
async def create_model(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    body = await _json(request)
    _own_session(request, tenant, body.get("session_id"))
    model_id = f"{body['session_id']}:train:{_seq(body, 'model_seq_id')}"
    lora = body.get("lora_config") or {"rank": 32}
    if not isinstance(lora, dict):
        raise Refused(
            400, f"lora_config={lora!r} must be an object with rank, train_mlp, train_attn, train_unembed"
        )
    lora = dict(lora)
    lora.setdefault("train_mlp", True)
    lora.setdefault("train_attn", True)
    lora.setdefault("train_unembed", True)
    base_model = str(body.get("base_model"))
    with _db(request).write() as session:
        if session.get(TinkerModel, model_id) is None:
            session.add(
                TinkerModel(
                    id=model_id,
                    tenant_id=tenant.tenant_id,
                    session_id=str(body["session_id"]),
                    base_model=base_model[:200],
                    lora=lora,
                    state="pending",
                    user_metadata=dict(body.get("user_metadata") or {}),
                )
            )
    future_id = await _submit(
        request,
        tenant,
        model_id,
        0,
        "create_model",
        {"model_id": model_id, "base_model": base_model, "lora": lora},
    )
    return {"request_id": str(future_id), "model_id": model_id}


def _own_model(request: Request, tenant: TenantContext, model_id: Any) -> TinkerModel:
    missing = f"model_id={model_id!r}: no such training run of this tenant"
    return _owned(request, tenant, TinkerModel, model_id, missing)


@router.post("/get_info")
async def get_info(request: Request, tenant: TenantContext = Depends(caller)) -> dict[str, Any]:
    body = await _json(request)
    model = _own_model(request, tenant, body.get("model_id"))
    folder = _folder_of(_state(request)[0], model.base_model)
    return {
        "type": "get_info",
        "model_id": model.id,
        "model_data": {
            "arch": _model_config(folder).get("model_type"),
            "model_name": folder or model.base_model,
            "tokenizer_id": folder,
        },
        "is_lora": True,
        "lora_rank": model.lora.get("rank"),
        "model_name": model.base_model,
    }


@router.post("/forward_backward")
async def forward_backward(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    body = await request.body()
    if request.headers.get("content-encoding") == "zstd":
        import zstandard

        body = zstandard.ZstdDecompressor().decompress(body, max_output_size=64 << 20)
    try:
        parsed = decode_forward_backward(body)
    except UserError as exc:
        raise Refused(400, str(exc)) from None
    future_id = await _submit(request, tenant, parsed.model_id, parsed.seq_id, "forward_backward", body)
    return {"request_id": str(future_id), "model_id": parsed.model_id}


async def _model_request(
    request: Request, tenant: TenantContext, kind: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    body = await _json(request) if body is None else body
    model_id = str(body.get("model_id"))
    future_id = await _submit(request, tenant, model_id, body.get("seq_id"), kind, body)
    return {"request_id": str(future_id), "model_id": model_id}


@router.post("/optim_step")
async def optim_step(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    return await _model_request(request, tenant, "optim_step")


@router.post("/save_weights")
async def save_weights(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    return await _model_request(request, tenant, "save_weights")


@router.post("/save_weights_for_sampler")
async def save_weights_for_sampler(
    request: Request, tenant: TenantContext = Depends(limited)
) -> dict[str, Any]:
    return await _model_request(request, tenant, "save_weights_for_sampler")


@router.post("/load_weights")
async def load_weights(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    body = await _json(request)
    if body.get("model_id") is not None:  # load_state on an existing client
        return await _model_request(request, tenant, "load_weights", body)
    _own_session(request, tenant, body.get("session_id"))
    model_id = f"{body['session_id']}:train:{_seq(body, 'model_seq_id')}"
    meta = _checkpoint_meta(request, tenant, str(body.get("path")))
    with _db(request).write() as session:
        if session.get(TinkerModel, model_id) is None:
            session.add(
                TinkerModel(
                    id=model_id,
                    tenant_id=tenant.tenant_id,
                    session_id=str(body["session_id"]),
                    base_model=(meta or {}).get("base_model", str(body.get("base_model")))[:200],
                    lora=(meta or {}).get("lora", {}),
                    state="pending" if meta else "failed",
                    user_metadata=dict(body.get("user_metadata") or {}),
                )
            )
    future_id = await _submit(
        request, tenant, model_id, 0, "load_weights", {**body, "model_id": model_id, "new_client": True}
    )
    return {"request_id": str(future_id), "model_id": model_id}


def _checkpoint(request: Request, tenant: TenantContext, path: str, field: str = "path") -> TinkerCheckpoint:
    where = checkpoints.parse_path(path, field)
    with _db(request).read() as session:
        record = session.scalar(
            sa.select(TinkerCheckpoint).where(
                TinkerCheckpoint.tenant_id == tenant.tenant_id,
                TinkerCheckpoint.model_id == where.model_id,
                TinkerCheckpoint.kind == where.kind,
                TinkerCheckpoint.name == where.name,
            )
        )
    if record is None:
        raise UserError(f"{field}={path!r}: no such checkpoint of this tenant")
    return record


def _checkpoint_meta(request: Request, tenant: TenantContext, path: str) -> dict[str, Any] | None:
    try:
        return checkpoints.read_meta(Path(_checkpoint(request, tenant, path).folder))
    except (UserError, OSError, ValueError):
        return None  # the worker fails the future with the reason


# --------------------------------------------------------------------------------------- sampling
@router.post("/create_sampling_session")
async def create_sampling_session(
    request: Request, tenant: TenantContext = Depends(limited)
) -> dict[str, Any]:
    body = await _json(request)
    _own_session(request, tenant, body.get("session_id"))
    config = _state(request)[0]
    model_path = body.get("model_path")
    base_model = body.get("base_model")
    try:
        if model_path is not None:
            record = _checkpoint(request, tenant, str(model_path), "model_path")
            base_model = checkpoints.read_meta(Path(record.folder))["base_model"]
        elif base_model not in config.base_models:
            raise UserError(
                f"base_model={base_model!r} is not served here; choose one of {sorted(config.base_models)}"
            )
    except UserError as exc:
        raise Refused(400, str(exc)) from None
    sampler_id = f"{body['session_id']}:sampler:{_seq(body, 'sampling_session_seq_id')}"
    with _db(request).write() as session:
        session.merge(
            TinkerSampler(
                id=sampler_id,
                tenant_id=tenant.tenant_id,
                session_id=str(body["session_id"]),
                base_model=base_model,
                model_path=model_path,
            )
        )
    return {"type": "create_sampling_session", "sampling_session_id": sampler_id}


@router.get("/samplers/{sampler_id}")
async def get_sampler(
    sampler_id: str, request: Request, tenant: TenantContext = Depends(caller)
) -> dict[str, Any]:
    missing = f"sampler {sampler_id!r}: no such sampling session of this tenant"
    row = _owned(request, tenant, TinkerSampler, sampler_id, missing)
    return {"sampler_id": row.id, "base_model": row.base_model, "model_path": row.model_path}


@router.post("/asample")
async def asample(request: Request, tenant: TenantContext = Depends(limited)) -> dict[str, Any]:
    body = await _json(request)
    sampler_id = str(body.get("sampling_session_id"))
    future_id = await _submit(request, tenant, sampler_id, body.get("seq_id"), "sample", body)
    n = body.get("num_samples", 1)
    n = n if isinstance(n, int) and 0 < n <= 128 else 1
    return {"request_id": str(future_id), "sample_sequence_ids": [f"{future_id}:{i}" for i in range(n)]}


# --------------------------------------------------------------------------------------- futures
@router.post("/retrieve_future")
async def retrieve_future(request: Request, tenant: TenantContext = Depends(caller)) -> Response:
    body = await _json(request)
    raw = body.get("request_id")
    try:
        future_id = int(raw)
    except (TypeError, ValueError):
        return _error(404, f"request_id={raw!r}: no such request")
    db = _db(request)
    waiters = _state(request)[1]
    with waiters.watch(future_id) as event:
        row = await run_in_threadpool(futures.lookup, db, tenant.tenant_id, future_id)
        if row is None:
            return _error(404, f"request_id={raw!r}: no such request of this tenant")
        if row.state in (PENDING, RUNNING):
            try:
                await asyncio.wait_for(event.wait(), LONG_POLL_S)
            except TimeoutError:
                return JSONResponse(
                    {"type": "try_again", "request_id": str(future_id), "queue_state": "active"}
                )
            row = await run_in_threadpool(futures.lookup, db, tenant.tenant_id, future_id)
    if row.state == FAILED:
        return JSONResponse({"error": row.error, "category": row.category or "unknown"})
    if row.state != "done":
        return JSONResponse({"type": "try_again", "request_id": str(future_id), "queue_state": "active"})
    if row.result_format == "proto":
        return Response(row.result, media_type="application/x-protobuf")
    return Response(row.result, media_type="application/json")


# --------------------------------------------------------------------------------------- REST listings
def _checkpoint_json(c: TinkerCheckpoint) -> dict[str, Any]:
    where = checkpoints.TinkerPath(c.model_id, c.kind, c.name)
    return {
        "checkpoint_id": f"{checkpoints.KIND_SEGMENT[c.kind]}/{c.name}",
        "checkpoint_type": c.kind,
        "time": c.created_at.isoformat(),
        "tinker_path": str(where),
        "size_bytes": c.size_bytes,
        "public": False,
        "user_metadata": {str(k): str(v) for k, v in (c.user_metadata or {}).items()} or None,
        "expires_at": c.expires_at.isoformat() if c.expires_at else None,
    }


def _run_json(model: TinkerModel, owner: str, ckpts: list[TinkerCheckpoint]) -> dict[str, Any]:
    newest = {
        kind: max((c for c in ckpts if c.kind == kind), key=lambda c: c.created_at, default=None)
        for kind in ("training", "sampler")
    }
    return {
        "training_run_id": model.id,
        "base_model": model.base_model,
        "model_owner": owner,
        "is_lora": True,
        "corrupted": model.state == "failed",
        "lora_rank": model.lora.get("rank"),
        "last_request_time": model.last_request_at.isoformat(),
        "last_checkpoint": _checkpoint_json(newest["training"]) if newest["training"] else None,
        "last_sampler_checkpoint": _checkpoint_json(newest["sampler"]) if newest["sampler"] else None,
        "user_metadata": {str(k): str(v) for k, v in (model.user_metadata or {}).items()} or None,
    }


@router.get("/training_runs")
async def list_runs(
    request: Request, limit: int = 20, offset: int = 0, tenant: TenantContext = Depends(caller)
) -> dict[str, Any]:
    limit, offset = max(1, min(limit, 1000)), max(0, offset)
    with _db(request).read() as session:
        where = TinkerModel.tenant_id == tenant.tenant_id
        total = session.scalar(sa.select(sa.func.count()).select_from(TinkerModel).where(where))
        models = session.scalars(
            sa.select(TinkerModel)
            .where(where)
            .order_by(TinkerModel.created_at.desc())
            .limit(limit)
            .offset(offset)
        ).all()
        ckpts = session.scalars(
            sa.select(TinkerCheckpoint).where(
                TinkerCheckpoint.model_id.in_([m.id for m in models]),
                TinkerCheckpoint.tenant_id == tenant.tenant_id,
            )
        ).all()
    runs = [_run_json(m, tenant.tenant, [c for c in ckpts if c.model_id == m.id]) for m in models]
    return {"training_runs": runs, "cursor": {"offset": offset, "limit": limit, "total_count": total}}


def _tenant_checkpoints(
    request: Request, tenant: TenantContext, model_id: str | None = None
) -> list[TinkerCheckpoint]:
    with _db(request).read() as session:
        query = sa.select(TinkerCheckpoint).where(TinkerCheckpoint.tenant_id == tenant.tenant_id)
        if model_id is not None:
            query = query.where(TinkerCheckpoint.model_id == model_id)
        return list(session.scalars(query.order_by(TinkerCheckpoint.created_at)).all())


@router.get("/training_runs/{model_id}")
async def get_run(model_id: str, request: Request, tenant: TenantContext = Depends(caller)) -> dict[str, Any]:
    model = _own_model(request, tenant, model_id)
    return _run_json(model, tenant.tenant, _tenant_checkpoints(request, tenant, model_id))


@router.get("/training_runs/{model_id}/checkpoints")
async def list_run_checkpoints(
    model_id: str, request: Request, tenant: TenantContext = Depends(caller)
) -> dict[str, Any]:
    _own_model(request, tenant, model_id)
    return {"checkpoints": [_checkpoint_json(c) for c in _tenant_checkpoints(request, tenant, model_id)]}


@router.get("/checkpoints")
async def list_checkpoints(request: Request, tenant: TenantContext = Depends(caller)) -> dict[str, Any]:
    found = _tenant_checkpoints(request, tenant)
    return {
        "checkpoints": [_checkpoint_json(c) for c in found],
        "cursor": {"offset": 0, "limit": len(found), "total_count": len(found)},
    }


@router.delete("/training_runs/{model_id}/checkpoints/{checkpoint_id:path}")
async def delete_checkpoint(
    model_id: str, checkpoint_id: str, request: Request, tenant: TenantContext = Depends(limited)
) -> Response:
    try:
        record = _checkpoint(request, tenant, f"tinker://{model_id}/{checkpoint_id}", "checkpoint_id")
    except UserError as exc:
        raise Refused(404, str(exc)) from None
    with _db(request).write() as session:
        session.execute(sa.delete(TinkerCheckpoint).where(TinkerCheckpoint.id == record.id))
    shutil.rmtree(record.folder, ignore_errors=True)
    return Response(status_code=204)


@router.post("/weights_info")
async def weights_info(request: Request, tenant: TenantContext = Depends(caller)) -> dict[str, Any]:
    body = await _json(request)
    try:
        record = _checkpoint(request, tenant, str(body.get("tinker_path")), "tinker_path")
    except UserError as exc:
        raise Refused(404, str(exc)) from None
    meta = checkpoints.read_meta(Path(record.folder))
    lora = meta["lora"]
    return {
        "base_model": meta["base_model"],
        "is_lora": True,
        "lora_rank": lora["rank"],
        "train_mlp": lora["train_mlp"],
        "train_attn": lora["train_attn"],
        "train_unembed": lora["train_unembed"],
    }
