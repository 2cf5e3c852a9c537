"""Reading a reward out of a span, in the three formats Agent Lightning 0.3 reads (``get_reward_value``).

1. ``agl.emit_reward`` (0.3): an ``agentlightning.annotation`` span with flat attributes
   ``agentlightning.reward.<i>.name`` / ``.value``; the first dimension is the primary reward.
2. AgentOps (0.1): ``agentops.task.output`` or ``agentops.entity.output`` holding ``{"type": "reward",
   "value": x}`` (a dict or its JSON).
3. 0.2: an ``agentlightning.annotation`` span with a ``reward`` attribute.
"""

from __future__ import annotations

import json
from typing import Any

from resonance_os.traces.attributes import unflatten_under
from resonance_os.traces.spans import Span

REWARD_PREFIX = "agentlightning.reward"
ANNOTATION_SPAN = "agentlightning.annotation"
OPERATION_SPAN = "agentlightning.operation"
OPERATION_NAME = "agentlightning.operation.name"
AGENTOPS_OUTPUT_KEYS = ("agentops.task.output", "agentops.entity.output")


def reward_dimensions(span: Span) -> list[tuple[str, float]]:
    """The ``(name, value)`` dimensions of an ``emit_reward`` span, primary first; ``[]`` otherwise."""
    if not any(key.startswith(REWARD_PREFIX) for key in span.attributes):
        return []
    entries = unflatten_under(span.attributes, REWARD_PREFIX)
    if not isinstance(entries, list):
        return []
    return [
        (str(entry.get("name")), float(entry["value"]))
        for entry in entries
        if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float))
    ]


def _agentops_payload(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def reward_value(span: Span) -> float | None:
    """The span's primary reward, or ``None`` when it carries none."""
    dimensions = reward_dimensions(span)
    if dimensions:
        return dimensions[0][1]
    for key in AGENTOPS_OUTPUT_KEYS:
        payload = _agentops_payload(span.attributes.get(key)) if span.attributes.get(key) else None
        if payload and payload.get("type") == "reward":
            value = payload.get("value")
            return None if value is None else float(value)
    if span.name == ANNOTATION_SPAN and span.attributes:
        value = span.attributes.get("reward")
        return None if value is None else float(value)
    return None


def is_reward_span(span: Span) -> bool:
    """A span that holds a reward, or an ``@operation`` span that computes one (rewards inside it are
    not LLM calls to train on)."""
    if reward_value(span) is not None:
        return True
    return span.name == OPERATION_SPAN and span.attributes.get(OPERATION_NAME) == REWARD_PREFIX
