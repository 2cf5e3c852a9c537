"""Request bodies of the store's REST API, field for field Agent Lightning 0.3.0's
(``agentlightning.store.client_server`` and ``agentlightning.types``), so its ``LightningStoreClient``
and ours send the same JSON. Responses are built from the rows in :mod:`resonance_os.api.agl.store`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RolloutStatus = Literal["queuing", "preparing", "running", "failed", "succeeded", "cancelled", "requeuing"]
AttemptStatus = Literal["preparing", "running", "failed", "succeeded", "unresponsive", "timeout"]
WorkerStatus = Literal["idle", "busy", "unknown"]
RolloutMode = Literal["train", "val", "test"]
SortOrder = Literal["asc", "desc"]
FilterLogic = Literal["and", "or"]


class RolloutConfig(BaseModel):
    timeout_seconds: float | None = None
    unresponsive_seconds: float | None = None
    max_attempts: int = Field(default=1, ge=1)
    retry_condition: list[AttemptStatus] = Field(default_factory=list)


class RolloutRequest(BaseModel):
    input: Any = None
    mode: RolloutMode | None = None
    resources_id: str | None = Field(default=None, max_length=64)
    config: RolloutConfig | None = None
    metadata: dict[str, Any] | None = None
    worker_id: str | None = Field(default=None, max_length=256)


class EnqueueRolloutRequest(BaseModel):
    input: Any = None
    mode: RolloutMode | None = None
    resources_id: str | None = Field(default=None, max_length=64)
    config: RolloutConfig | None = None
    metadata: dict[str, Any] | None = None


class EnqueueManyRolloutsRequest(BaseModel):
    rollouts: list[EnqueueRolloutRequest] = Field(max_length=1000)


class DequeueManyRolloutsRequest(BaseModel):
    limit: int = 1
    worker_id: str | None = Field(default=None, max_length=256)


class StartAttemptRequest(BaseModel):
    worker_id: str | None = Field(default=None, max_length=256)


class UpdateRolloutRequest(BaseModel):
    input: Any = None
    mode: RolloutMode | None = None
    resources_id: str | None = Field(default=None, max_length=64)
    status: RolloutStatus | None = None
    config: RolloutConfig | None = None
    metadata: dict[str, Any] | None = None


class UpdateAttemptRequest(BaseModel):
    status: AttemptStatus | None = None
    worker_id: str | None = Field(default=None, max_length=256)
    last_heartbeat_time: float | None = None
    metadata: dict[str, Any] | None = None


class UpdateWorkerRequest(BaseModel):
    heartbeat_stats: dict[str, Any] | None = None


class Page(BaseModel):
    limit: int = -1
    offset: int = 0
    sort_by: str | None = None
    sort_order: SortOrder = "asc"


class QueryRolloutsRequest(Page):
    status_in: list[RolloutStatus] | None = None
    rollout_id_in: list[str] | None = None
    rollout_id_contains: str | None = None
    filter_logic: FilterLogic = "and"


class QueryAttemptsRequest(Page):
    sort_by: str | None = "sequence_id"


class QueryWorkersRequest(Page):
    status_in: list[WorkerStatus] | None = None
    worker_id_contains: str | None = None
    filter_logic: FilterLogic = "and"


class QueryResourcesRequest(Page):
    resources_id: str | None = None
    resources_id_contains: str | None = None


class QuerySpansRequest(Page):
    rollout_id: str
    attempt_id: str | None = None
    trace_id: str | None = None
    trace_id_contains: str | None = None
    span_id: str | None = None
    span_id_contains: str | None = None
    parent_id: str | None = None
    parent_id_contains: str | None = None
    name: str | None = None
    name_contains: str | None = None
    filter_logic: FilterLogic = "and"
    sort_by: str | None = "sequence_id"


class NextSequenceIdRequest(BaseModel):
    rollout_id: str
    attempt_id: str


class WaitForRolloutsRequest(BaseModel):
    rollout_ids: list[str] = Field(max_length=1000)
    timeout: float | None = None


class SpanStatus(BaseModel):
    model_config = ConfigDict(extra="allow")
    status_code: Literal["UNSET", "OK", "ERROR"]
    description: str | None = None


class SpanIn(BaseModel):
    """``agentlightning.Span``: the named fields are checked, any others are kept as sent."""

    model_config = ConfigDict(extra="allow")
    rollout_id: str = Field(max_length=64)
    attempt_id: str = Field(max_length=64)
    sequence_id: int
    trace_id: str = Field(max_length=32)
    span_id: str = Field(max_length=16)
    parent_id: str | None = Field(max_length=16)
    name: str
    status: SpanStatus
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    links: list[dict[str, Any]]
    start_time: float | None
    end_time: float | None
    context: dict[str, Any] | None
    parent: dict[str, Any] | None
    resource: dict[str, Any]


class Resource(BaseModel):
    """One named resource (``LLM``, ``ProxyLLM``, ``PromptTemplate``): its type, the rest as sent."""

    model_config = ConfigDict(extra="allow")
    resource_type: Literal["llm", "proxy_llm", "prompt_template"]


ROLLOUT_SORT_FIELDS = ("rollout_id", "start_time", "end_time", "mode", "resources_id", "status")
ATTEMPT_SORT_FIELDS = ("sequence_id", "attempt_id", "start_time", "end_time", "status", "worker_id")
SPAN_SORT_FIELDS = ("sequence_id", "trace_id", "span_id", "parent_id", "name", "start_time", "end_time")
WORKER_SORT_FIELDS = ("worker_id", "status", "last_heartbeat_time", "last_dequeue_time")
RESOURCES_SORT_FIELDS = ("resources_id", "create_time", "update_time", "version")
