"""The store's HTTP routes, at Agent Lightning 0.3.0's paths and JSON shapes (``/v1/agl/...`` and
``POST /v1/traces``), twice: under ``/v1`` for Bearer API keys and under ``/agl-key/<token>/v1`` for a
store URL. ``/v1/agl-store-urls`` makes, lists and revokes store URLs (Bearer only).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from prometheus_client import Counter
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from resonance_os.api.agl import otlp
from resonance_os.api.agl.auth import STORE_TOKEN_PARAM, store_tenant
from resonance_os.api.agl.recording import recording_router
from resonance_os.api.agl.schemas import (
    DequeueManyRolloutsRequest,
    EnqueueManyRolloutsRequest,
    NextSequenceIdRequest,
    QueryAttemptsRequest,
    QueryResourcesRequest,
    QueryRolloutsRequest,
    QuerySpansRequest,
    QueryWorkersRequest,
    Resource,
    RolloutRequest,
    RolloutStatus,
    SpanIn,
    StartAttemptRequest,
    UpdateAttemptRequest,
    UpdateRolloutRequest,
    UpdateWorkerRequest,
    WaitForRolloutsRequest,
    WorkerStatus,
)
from resonance_os.api.agl.store import AgentStore, SpanOutcome
from resonance_os.api.agl.store_urls import URL_PATH, create_token, list_tokens, revoke_token, store_url
from resonance_os.api.http.deps import tenant
from resonance_os.api.http.errors import ApiError
from resonance_os.api.persistence.quotas import StorageQuotaError
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.core.errors import ResonanceError

SPANS = Counter(
    "resonance_agl_spans_total",
    "OTLP and store spans by outcome: stored, duplicate (sent before), no_ids (no rollout/attempt id), "
    "unknown_rollout (not a rollout or attempt of the caller)",
    ["outcome"],
)
OTLP_INFLATE_FACTOR = 16
"""A gzip OTLP body may inflate to this many times the request body limit."""
WAIT_MAX_S = 30.0
GRPC_INVALID_ARGUMENT, GRPC_RESOURCE_EXHAUSTED, GRPC_UNAUTHENTICATED, GRPC_UNAVAILABLE = 3, 8, 16, 14
NAMED_RESOURCES = TypeAdapter(dict[str, Resource])


def _store(request: Request) -> AgentStore:
    return request.app.state.agl_store


def _set_fields(body: Any) -> dict[str, Any]:
    """The fields a client actually sent (Agent Lightning's ``UNSET`` versus an explicit null)."""
    return {name: getattr(body, name) for name in body.model_fields_set}


def _query(model, values: dict[str, Any]):
    """A query-string request checked like a JSON body: a bad value is a 400 naming it, never a 500."""
    try:
        return model.model_validate({k: v for k, v in values.items() if k not in ("request", "ctx")})
    except PydanticValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "query"
        raise ApiError(400, "RequestValidationError", f"{where}: {error['msg']}") from None


def _non_null_fields(body: Any, required: tuple[str, ...]) -> dict[str, Any]:
    """The fields a client sent (:func:`_set_fields`); a 400 if one of ``required`` was sent as null."""
    fields = _set_fields(body)
    for name in required:
        if name in fields and fields[name] is None:
            raise ApiError(400, "RequestValidationError", f"{name} is invalid; it cannot be a null value")
    return fields


def _named_resources(resources: dict[str, Any]) -> dict[str, Any]:
    try:
        NAMED_RESOURCES.validate_python(resources)
    except PydanticValidationError as exc:
        raise ApiError(
            422, "RequestValidationError", f"invalid resources: {exc.errors()[0]['msg']}"
        ) from None
    return resources


CALLER = Depends(store_tenant)
"""The calling tenant, from a Bearer API key or a store URL's token."""


def store_router() -> APIRouter:
    """Every ``/agl/...`` route of Agent Lightning's ``LightningStoreServer`` (prefix added by the caller)."""
    api = APIRouter(prefix="/agl", tags=["agent store"])
    for add_routes in (
        _add_store_routes,
        _add_queue_routes,
        _add_rollout_routes,
        _add_attempt_routes,
        _add_worker_routes,
        _add_resource_routes,
        _add_span_routes,
        _add_wait_routes,
    ):
        add_routes(api)
    return api


def _add_store_routes(api: APIRouter) -> None:
    """``/health`` and ``/statistics``."""

    @api.get("/health")
    def health(_: TenantContext = CALLER) -> dict:
        return {"status": "ok"}

    @api.get("/statistics")
    def statistics(request: Request, ctx: TenantContext = CALLER) -> dict:
        return _store(request).statistics(ctx.tenant_id, request.app.state.agl_started)


def _add_queue_routes(api: APIRouter) -> None:
    """``/queues/rollouts/...``: enqueue rollouts, and dequeue them for a runner."""

    @api.post("/queues/rollouts/enqueue", status_code=201)
    def enqueue(body: EnqueueManyRolloutsRequest, request: Request, ctx: TenantContext = CALLER) -> list:
        return _store(request).enqueue(ctx.tenant_id, body.rollouts)

    @api.post("/queues/rollouts/dequeue")
    def dequeue(
        request: Request, body: DequeueManyRolloutsRequest | None = Body(None), ctx: TenantContext = CALLER
    ) -> list:
        body = body or DequeueManyRolloutsRequest()
        return _store(request).dequeue(ctx.tenant_id, min(body.limit, 1000), body.worker_id)


def _add_rollout_routes(api: APIRouter) -> None:
    """``/rollouts``: start, list, search, read and update rollouts."""

    @api.post("/rollouts", status_code=201)
    def start_rollout(body: RolloutRequest, request: Request, ctx: TenantContext = CALLER) -> dict:
        return _store(request).start_rollout(ctx.tenant_id, body)

    @api.get("/rollouts")
    def list_rollouts(
        request: Request,
        status_in: list[RolloutStatus] | None = Query(None),
        rollout_id_in: list[str] | None = Query(None),
        rollout_id_contains: str | None = None,
        limit: int = -1,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str = "asc",
        filter_logic: str = "and",
        ctx: TenantContext = CALLER,
    ) -> dict:
        query = _query(QueryRolloutsRequest, locals())
        return _store(request).query_rollouts(ctx.tenant_id, query)

    @api.post("/rollouts/search")
    def search_rollouts(body: QueryRolloutsRequest, request: Request, ctx: TenantContext = CALLER) -> dict:
        return _store(request).query_rollouts(ctx.tenant_id, body)

    @api.get("/rollouts/{rollout_id}")
    def get_rollout(rollout_id: str, request: Request, ctx: TenantContext = CALLER) -> dict | None:
        return _store(request).get_rollout(ctx.tenant_id, rollout_id)

    @api.post("/rollouts/{rollout_id}")
    def update_rollout(
        rollout_id: str, body: UpdateRolloutRequest, request: Request, ctx: TenantContext = CALLER
    ) -> dict:
        fields = _non_null_fields(body, ("status", "config"))
        if "config" in fields:
            fields["config"] = body.config.model_dump()
        return _store(request).update_rollout(ctx.tenant_id, rollout_id, fields)


def _add_attempt_routes(api: APIRouter) -> None:
    """``/rollouts/{rollout_id}/attempts``: start, list, search and update a rollout's attempts."""

    @api.post("/rollouts/{rollout_id}/attempts", status_code=201)
    def start_attempt(
        rollout_id: str,
        request: Request,
        body: StartAttemptRequest | None = Body(None),
        ctx: TenantContext = CALLER,
    ) -> dict:
        return _store(request).start_attempt(ctx.tenant_id, rollout_id, body.worker_id if body else None)

    @api.post("/rollouts/{rollout_id}/attempts/search")
    def search_attempts(
        rollout_id: str, body: QueryAttemptsRequest, request: Request, ctx: TenantContext = CALLER
    ) -> dict:
        return _store(request).query_attempts(ctx.tenant_id, rollout_id, body)

    @api.get("/rollouts/{rollout_id}/attempts")
    def list_attempts(
        rollout_id: str,
        request: Request,
        limit: int = -1,
        offset: int = 0,
        sort_by: str | None = "sequence_id",
        sort_order: str = "asc",
        ctx: TenantContext = CALLER,
    ) -> dict:
        query = _query(QueryAttemptsRequest, {k: v for k, v in locals().items() if k != "rollout_id"})
        return _store(request).query_attempts(ctx.tenant_id, rollout_id, query)

    @api.get("/rollouts/{rollout_id}/attempts/latest")
    def latest_attempt(rollout_id: str, request: Request, ctx: TenantContext = CALLER) -> dict | None:
        return _store(request).latest_attempt(ctx.tenant_id, rollout_id)

    @api.post("/rollouts/{rollout_id}/attempts/{attempt_id}")
    def update_attempt(
        rollout_id: str,
        attempt_id: str,
        body: UpdateAttemptRequest,
        request: Request,
        ctx: TenantContext = CALLER,
    ) -> dict:
        fields = _non_null_fields(body, ("status", "worker_id", "last_heartbeat_time", "metadata"))
        return _store(request).update_attempt(ctx.tenant_id, rollout_id, attempt_id, fields)


def _add_worker_routes(api: APIRouter) -> None:
    """``/workers``: list, search, read and update the runners' workers."""

    @api.get("/workers")
    def list_workers(
        request: Request,
        status_in: list[WorkerStatus] | None = Query(None),
        worker_id_contains: str | None = None,
        limit: int = -1,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str = "asc",
        filter_logic: str = "and",
        ctx: TenantContext = CALLER,
    ) -> dict:
        query = _query(QueryWorkersRequest, locals())
        return _store(request).query_workers(ctx.tenant_id, query)

    @api.post("/workers/search")
    def search_workers(body: QueryWorkersRequest, request: Request, ctx: TenantContext = CALLER) -> dict:
        return _store(request).query_workers(ctx.tenant_id, body)

    @api.get("/workers/{worker_id}")
    def get_worker(worker_id: str, request: Request, ctx: TenantContext = CALLER) -> dict | None:
        return _store(request).get_worker(ctx.tenant_id, worker_id)

    @api.post("/workers/{worker_id}")
    def update_worker(
        worker_id: str,
        request: Request,
        body: UpdateWorkerRequest | None = Body(None),
        ctx: TenantContext = CALLER,
    ) -> dict:
        fields = _set_fields(body) if body is not None else {}
        if len(worker_id) > 256:
            raise ApiError(422, "RequestValidationError", "worker_id is longer than 256 characters")
        return _store(request).update_worker(ctx.tenant_id, worker_id, fields)


def _add_resource_routes(api: APIRouter) -> None:
    """``/resources``: list, add, read and update named resources (prompts, models)."""

    @api.get("/resources")
    def list_resources(
        request: Request,
        resources_id: str | None = None,
        resources_id_contains: str | None = None,
        limit: int = -1,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str = "asc",
        ctx: TenantContext = CALLER,
    ) -> dict:
        query = _query(QueryResourcesRequest, locals())
        return _store(request).query_resources(ctx.tenant_id, query)

    @api.post("/resources", status_code=201)
    def add_resources(resources: dict[str, Any], request: Request, ctx: TenantContext = CALLER) -> dict:
        return _store(request).add_resources(ctx.tenant_id, _named_resources(resources))

    @api.get("/resources/latest")  # before /resources/{resources_id}, which would match "latest"
    def latest_resources(request: Request, ctx: TenantContext = CALLER) -> dict | None:
        return _store(request).get_resources(ctx.tenant_id, None)

    @api.post("/resources/{resources_id}")
    def update_resources(
        resources_id: str, resources: dict[str, Any], request: Request, ctx: TenantContext = CALLER
    ) -> dict:
        if len(resources_id) > 64:
            raise ApiError(422, "RequestValidationError", "resources_id is longer than 64 characters")
        return _store(request).update_resources(ctx.tenant_id, resources_id, _named_resources(resources))

    @api.get("/resources/{resources_id}")
    def get_resources(resources_id: str, request: Request, ctx: TenantContext = CALLER) -> dict | None:
        return _store(request).get_resources(ctx.tenant_id, resources_id)


def _add_span_routes(api: APIRouter) -> None:
    """``/spans``: add a span, list and search spans, and issue a rollout's next sequence id."""

    @api.post("/spans", status_code=201)
    def add_span(span: SpanIn, request: Request, ctx: TenantContext = CALLER) -> dict | None:
        data = span.model_dump(mode="json")
        outcome = _store(request).add_spans(ctx.tenant_id, [data])
        SPANS.labels("stored").inc(outcome.stored)
        SPANS.labels("duplicate").inc(outcome.duplicates)
        if outcome.unknown:
            SPANS.labels("unknown_rollout").inc(outcome.unknown)
            raise ApiError(
                404,
                "NotFoundError",
                f"no attempt {span.attempt_id!r} of rollout {span.rollout_id!r}; start the rollout first",
            )
        return data if outcome.stored else None

    @api.get("/spans")
    def list_spans(
        request: Request,
        rollout_id: str,
        attempt_id: str | None = None,
        limit: int = -1,
        offset: int = 0,
        sort_by: str | None = "sequence_id",
        sort_order: str = "asc",
        filter_logic: str = "and",
        trace_id: str | None = None,
        trace_id_contains: str | None = None,
        span_id: str | None = None,
        span_id_contains: str | None = None,
        parent_id: str | None = None,
        parent_id_contains: str | None = None,
        name: str | None = None,
        name_contains: str | None = None,
        ctx: TenantContext = CALLER,
    ) -> Response:
        query = _query(QuerySpansRequest, locals())
        return Response(_store(request).query_spans(ctx.tenant_id, query), media_type="application/json")

    @api.post("/spans/search")
    def search_spans(body: QuerySpansRequest, request: Request, ctx: TenantContext = CALLER) -> Response:
        return Response(_store(request).query_spans(ctx.tenant_id, body), media_type="application/json")

    @api.post("/spans/next")
    def next_sequence_id(body: NextSequenceIdRequest, request: Request, ctx: TenantContext = CALLER) -> dict:
        return {"sequence_id": _store(request).next_sequence_id(ctx.tenant_id, body.rollout_id)}


def _add_wait_routes(api: APIRouter) -> None:
    """``/waits/rollouts``: wait, up to 30 seconds, for rollouts to finish."""

    @api.post("/waits/rollouts")
    async def wait_for_rollouts(
        body: WaitForRolloutsRequest, request: Request, ctx: TenantContext = CALLER
    ) -> list:
        """The rollouts among ``rollout_ids`` that finish within ``timeout`` seconds (at most 30)."""
        deadline = time.monotonic() + min(
            body.timeout if body.timeout is not None else WAIT_MAX_S, WAIT_MAX_S
        )
        while True:
            done = await run_in_threadpool(_store(request).finished, ctx.tenant_id, body.rollout_ids)
            if len(done) == len(set(body.rollout_ids)) or time.monotonic() >= deadline:
                return done
            await asyncio.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


def _status_response(status: int, code: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        otlp.status_body(code, message), status_code=status, media_type=otlp.PROTOBUF, headers=headers
    )


def otlp_router() -> APIRouter:
    """``POST /traces``: OTLP/HTTP protobuf span export, answered in OTLP's own terms."""
    api = APIRouter(tags=["agent store"])

    @api.post("/traces")
    async def export_traces(request: Request) -> Response:
        """Store the spans of an OTLP export. Spans without a rollout and attempt id, or naming a rollout
        or attempt the caller does not have, are not stored and are reported in ``partial_success``."""
        try:
            ctx = await store_tenant(request)
        except ApiError as exc:
            code = GRPC_UNAUTHENTICATED if exc.status == 401 else GRPC_UNAVAILABLE
            return _status_response(exc.status, code, exc.message, exc.headers)
        limit = request.app.state.settings.max_body_bytes * OTLP_INFLATE_FACTOR
        body = await request.body()
        content_type = request.headers.get("content-type", "")
        encoding = request.headers.get("content-encoding", "")

        def ingest() -> tuple[otlp.DecodedExport, SpanOutcome]:
            decoded = otlp.decode_export(otlp.request_bytes(body, content_type, encoding, limit))
            return decoded, _store(request).add_spans(ctx.tenant_id, decoded.spans)

        try:
            decoded, outcome = await run_in_threadpool(ingest)
        except otlp.OtlpRequestError as exc:
            return _status_response(400, GRPC_INVALID_ARGUMENT, str(exc))
        except StorageQuotaError as exc:
            return _status_response(507, GRPC_RESOURCE_EXHAUSTED, str(exc))
        except ResonanceError as exc:
            return _status_response(exc.http_status, GRPC_INVALID_ARGUMENT, str(exc))
        SPANS.labels("stored").inc(outcome.stored)
        SPANS.labels("duplicate").inc(outcome.duplicates)
        SPANS.labels("no_ids").inc(decoded.without_ids)
        SPANS.labels("unknown_rollout").inc(outcome.unknown)
        reasons = []
        if decoded.without_ids:
            reasons.append(
                f"{decoded.without_ids} spans have no agentlightning.rollout_id and agentlightning.attempt_id "
                "(set both as resource or span attributes)"
            )
        if outcome.unknown:
            named = ", ".join(outcome.unknown_ids[:5]) + (", ..." if len(outcome.unknown_ids) > 5 else "")
            reasons.append(f"{outcome.unknown} spans name no rollout/attempt of yours ({named})")
        return Response(
            otlp.export_response(decoded.without_ids + outcome.unknown, "; ".join(reasons)),
            media_type=otlp.PROTOBUF,
        )

    @api.post("/metrics", include_in_schema=False)
    @api.post("/logs", include_in_schema=False)
    def not_traces() -> Response:
        return _status_response(501, 12, "only traces are accepted here (POST /v1/traces)")

    return api


def store_urls_router() -> APIRouter:
    api = APIRouter(prefix="/v1/agl-store-urls", tags=["agent store"])

    @api.post("", status_code=201)
    def create(request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
        """A new store URL for your tenant: give it to an Agent Lightning runner as its store address
        (``LightningStoreClient(url)``); it is shown once."""
        token = create_token(request.app.state.service.db, ctx.tenant_id)
        return {"url": store_url(str(request.base_url), token), "prefix": token[:12]}

    @api.get("")
    def list_urls(request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
        rows = list_tokens(request.app.state.service.db, ctx.tenant_id)
        return {
            "store_urls": [
                {"prefix": r.prefix, "created_at": r.created_at, "revoked_at": r.revoked_at} for r in rows
            ]
        }

    @api.delete("/{prefix}")
    def revoke(prefix: str, request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
        """Revoke the store URL whose token starts with ``prefix`` (as listed)."""
        return {"revoked": revoke_token(request.app.state.service.db, ctx.tenant_id, prefix)}

    return api


def install_agent_store(app: FastAPI) -> None:
    """Serve the store and OTLP ingestion on ``app`` for Bearer keys and for store URLs (the service's
    database and storage quota)."""
    app.state.agl_store = AgentStore(app.state.service.db, app.state.service.quota)
    app.state.agl_started = time.time()
    app.include_router(store_urls_router())
    for root in ("", f"{URL_PATH}/{{{STORE_TOKEN_PARAM}}}"):
        app.include_router(store_router(), prefix=f"{root}/v1")
        app.include_router(otlp_router(), prefix=f"{root}/v1")
        app.include_router(recording_router(), prefix=root)
