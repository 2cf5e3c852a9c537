"""OTLP/HTTP trace export requests (binary protobuf, optionally gzip) -> Agent Lightning span dicts.

The conversion is ``agentlightning.utils.otlp.spans_from_proto`` (0.3.0): the rollout and attempt come
from the span's ``agentlightning.rollout_id`` / ``agentlightning.attempt_id`` attributes, else the
resource's; ``agentlightning.span_sequence_id`` (span, then resource) pins the sequence id, else the
store issues one. Unlike Agent Lightning, a span without both ids is not dropped silently: it is counted
and reported back in the response's ``partial_success``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from resonance_os.core.errors import ValidationError

PROTOBUF = "application/x-protobuf"
ROLLOUT_ID = "agentlightning.rollout_id"
ATTEMPT_ID = "agentlightning.attempt_id"
SEQUENCE_ID = "agentlightning.span_sequence_id"
STATUS_CODES = {0: "UNSET", 1: "OK", 2: "ERROR"}


class OtlpRequestError(ValidationError):
    """The body is not an OTLP/HTTP protobuf trace export (answered 400 with a ``google.rpc.Status``)."""

    http_status = 400


@dataclass
class DecodedExport:
    spans: list[dict[str, Any]] = field(default_factory=list)
    without_ids: int = 0


def request_bytes(body: bytes, content_type: str, content_encoding: str, max_bytes: int) -> bytes:
    """The protobuf bytes of a request: checks the media type and inflates gzip up to ``max_bytes``."""
    media_type = content_type.split(";")[0].strip().lower()
    if media_type != PROTOBUF:
        raise OtlpRequestError(
            f"unsupported Content-Type {media_type or '(none)'!r}; send OTLP/HTTP binary protobuf as "
            f"{PROTOBUF!r} (the OpenTelemetry OTLPSpanExporter's http/protobuf protocol)"
        )
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise OtlpRequestError(f"unsupported Content-Encoding {encoding!r}; send gzip or no encoding")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise OtlpRequestError(f"the gzip body cannot be decompressed ({exc}); send valid gzip") from None
    if len(data) > max_bytes:
        raise OtlpRequestError(
            f"the decompressed body is larger than {max_bytes} bytes; export fewer spans per request "
            "(BatchSpanProcessor(max_export_batch_size=...))"
        )
    if not inflater.eof:
        raise OtlpRequestError("the gzip body is truncated; send the whole compressed body")
    return data


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None


def _attributes(key_values) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in key_values}


def _seconds(unix_nano: int) -> float | None:
    return unix_nano / 1e9 if unix_nano else None


def _sequence_id(raw: Any) -> int | None:
    try:
        value = int(str(raw))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _context(trace_id: str, span_id: str) -> dict[str, Any]:
    return {"trace_id": trace_id, "span_id": span_id, "is_remote": False, "trace_state": {}}


def decode_export(data: bytes) -> DecodedExport:
    """Span dicts in Agent Lightning's ``Span`` JSON shape; ``sequence_id`` is ``None`` where the store
    must issue one. Raises :class:`OtlpRequestError` for bytes that are not an export request."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:
        raise OtlpRequestError(f"the body is not an OTLP ExportTraceServiceRequest ({exc})") from None
    decoded = DecodedExport()
    for resource_spans in request.resource_spans:
        resource_attributes = _attributes(resource_spans.resource.attributes)
        resource = {"attributes": resource_attributes, "schema_url": resource_spans.schema_url or ""}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attributes = _attributes(span.attributes)
                rollout_id = attributes.get(ROLLOUT_ID, resource_attributes.get(ROLLOUT_ID))
                attempt_id = attributes.get(ATTEMPT_ID, resource_attributes.get(ATTEMPT_ID))
                if rollout_id is None or attempt_id is None:
                    decoded.without_ids += 1
                    continue
                trace_id = span.trace_id.hex().rjust(32, "0")
                span_id = span.span_id.hex().rjust(16, "0")
                decoded.spans.append(
                    {
                        "rollout_id": str(rollout_id),
                        "attempt_id": str(attempt_id),
                        "sequence_id": _sequence_id(
                            attributes.get(SEQUENCE_ID, resource_attributes.get(SEQUENCE_ID))
                        ),
                        "trace_id": trace_id,
                        "span_id": span_id,
                        "parent_id": span.parent_span_id.hex().rjust(16, "0")
                        if span.parent_span_id
                        else None,
                        "name": span.name,
                        "status": {
                            "status_code": STATUS_CODES.get(span.status.code, "UNSET"),
                            "description": span.status.message or None,
                        },
                        "attributes": attributes,
                        "events": [
                            {
                                "name": event.name,
                                "attributes": _attributes(event.attributes),
                                "timestamp": _seconds(event.time_unix_nano),
                            }
                            for event in span.events
                        ],
                        "links": [
                            {
                                "context": _context(
                                    link.trace_id.hex().rjust(32, "0"), link.span_id.hex().rjust(16, "0")
                                ),
                                "attributes": _attributes(link.attributes) or None,
                            }
                            for link in span.links
                        ],
                        "start_time": _seconds(span.start_time_unix_nano),
                        "end_time": _seconds(span.end_time_unix_nano),
                        "context": _context(trace_id, span_id),
                        "parent": None,
                        "resource": resource,
                    }
                )
    return decoded


def export_response(rejected: int, message: str) -> bytes:
    """An ``ExportTraceServiceResponse``; with rejected spans, its ``partial_success`` says how many and why."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return response.SerializeToString()


def status_body(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` (OTLP/HTTP's error body) with a gRPC ``code`` and ``message``."""
    return Status(code=code, message=message).SerializeToString()
