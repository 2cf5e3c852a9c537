"""One stored span, in the shape Agent Lightning 0.3 stores and serves (``agentlightning.Span``).

Times are float seconds; ids are hex (32 digits for a trace, 16 for a span); ``attributes`` are flat
OpenTelemetry attributes; ``status_code`` is ``"UNSET"``, ``"OK"`` or ``"ERROR"``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Span:
    rollout_id: str
    attempt_id: str
    sequence_id: int
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    start_time: float | None = None
    end_time: float | None = None
    status_code: str = "UNSET"
    status_description: str | None = None
    resource_attributes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Span:
        """A span from Agent Lightning's JSON (``POST /v1/agl/spans``, ``spans/search`` items)."""
        status = data.get("status") or {}
        resource = data.get("resource") or {}
        return cls(
            rollout_id=data.get("rollout_id", ""),
            attempt_id=data.get("attempt_id", ""),
            sequence_id=int(data.get("sequence_id", 0)),
            trace_id=data.get("trace_id", ""),
            span_id=data["span_id"],
            parent_id=data.get("parent_id"),
            name=data.get("name", ""),
            attributes=dict(data.get("attributes") or {}),
            start_time=data.get("start_time"),
            end_time=data.get("end_time"),
            status_code=status.get("status_code", "UNSET"),
            status_description=status.get("description"),
            resource_attributes=dict(resource.get("attributes") or {}),
        )

    @property
    def is_error(self) -> bool:
        return self.status_code == "ERROR"


def new_span_record(
    rollout_id: str,
    attempt_id: str,
    name: str,
    attributes: dict[str, Any],
    start_time: float,
    end_time: float,
    *,
    trace_id: str | None = None,
    parent_id: str | None = None,
    resource_attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A new ``OK`` span as Agent Lightning's JSON (what ``POST /v1/agl/spans`` takes): a fresh span id,
    a fresh trace id unless ``trace_id`` is given, ``sequence_id`` ``None`` (the store issues it)."""
    trace_id = trace_id or secrets.token_hex(16)
    span_id = secrets.token_hex(8)
    return {
        "rollout_id": rollout_id,
        "attempt_id": attempt_id,
        "sequence_id": None,
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_id": parent_id,
        "name": name,
        "status": {"status_code": "OK", "description": None},
        "attributes": attributes,
        "events": [],
        "links": [],
        "start_time": start_time,
        "end_time": end_time,
        "context": {"trace_id": trace_id, "span_id": span_id, "is_remote": False, "trace_state": {}},
        "parent": None,
        "resource": {"attributes": dict(resource_attributes or {}), "schema_url": ""},
    }
