"""Spans -> transitions: one per LLM call, with its token ids and matched reward.

:func:`spans_to_transitions` is ``agentlightning.TracerTraceToTriplet().adapt(spans)`` (0.3.0): the same
tree, LLM calls, token-id attributes and reward matching, so the same spans give the same transitions
(``tests/traces`` checks this against spans the OpenTelemetry SDK produced). With an
:class:`~resonance_os.traces.air.AirConfig`, each transition also carries its automatic intermediate
reward (``air_reward``), which the matched rewards never see.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from resonance_os.traces.air import AirConfig, tool_error_rewards
from resonance_os.traces.attributes import unflatten_under
from resonance_os.traces.spans import Span
from resonance_os.traces.tree import RESPONSE_ID_KEYS, RewardMatchPolicy, TraceTree, first_string

log = logging.getLogger(__name__)

PROMPT_TOKEN_KEYS = ("prompt_token_ids", "agentlightning.operation.output.prompt_token_ids")
RESPONSE_TOKEN_KEYS = (
    "response_token_ids",
    "agentlightning.operation.output.response_token_ids.0",
    "agentlightning.operation.output.choices.0.token_ids",
    "agentlightning.operation.output.choices.0.provider_specific_fields.token_ids",
)
PROMPT_CONTENT_PREFIXES = ("gen_ai.prompt", "agentlightning.operation.input.messages")
COMPLETION_CONTENT_PREFIXES = ("gen_ai.completion", "agentlightning.operation.output.choices")


@dataclass(frozen=True)
class TransitionConfig:
    """How LLM calls and rewards are found (``TracerTraceToTriplet``'s arguments and defaults)."""

    llm_call_match: str = r"openai\.chat\.completion"
    agent_match: str | None = None
    repair_hierarchy: bool = True
    exclude_llm_call_in_reward: bool = True
    reward_match: RewardMatchPolicy = RewardMatchPolicy.FIRST_OCCURRENCE
    skip_empty_token_spans: bool = False


@dataclass
class Transition:
    """One LLM call: what the policy saw and produced, and the reward matched to it.

    ``span_id``, ``rollout_id`` and ``attempt_id`` name the stored span it came from."""

    prompt_token_ids: list[int]
    response_token_ids: list[int]
    reward: float | None
    span_id: str
    rollout_id: str
    attempt_id: str
    agent_name: str
    response_id: str | None = None
    prompt: Any = None
    response: Any = None
    logprobs: Any = None
    air_reward: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)


def token_ids(attributes: dict[str, Any], keys: Sequence[str]) -> list[int]:
    """The first of ``keys`` holding a list of ints (a key holding anything else is skipped)."""
    for key in keys:
        if key not in attributes:
            continue
        value = attributes[key]
        if isinstance(value, (list, tuple)) and all(isinstance(x, int) for x in value):
            return list(value)
        log.warning("attribute %s is not a list of token ids: %r", key, value)
    return []


def _first_unflattened(attributes: dict[str, Any], prefixes: Sequence[str]) -> Any:
    for prefix in prefixes:
        value = unflatten_under(attributes, prefix)
        if value:
            return value
    return None


def call_to_transition(span: Span, agent: str) -> Transition:
    attributes = span.attributes
    logprobs = attributes.get("logprobs.content")
    return Transition(
        prompt_token_ids=token_ids(attributes, PROMPT_TOKEN_KEYS),
        response_token_ids=token_ids(attributes, RESPONSE_TOKEN_KEYS),
        reward=None,
        span_id=span.span_id,
        rollout_id=span.rollout_id,
        attempt_id=span.attempt_id,
        agent_name=agent,
        response_id=first_string(attributes, RESPONSE_ID_KEYS),
        prompt=_first_unflattened(attributes, PROMPT_CONTENT_PREFIXES),
        response=_first_unflattened(attributes, COMPLETION_CONTENT_PREFIXES),
        logprobs=json.loads(logprobs) if isinstance(logprobs, str) else None,
        metadata={"sequence_id": span.sequence_id},
    )


def spans_to_transitions(
    spans: Sequence[Span], config: TransitionConfig | None = None, air: AirConfig | None = None
) -> list[Transition]:
    """The transitions of one attempt's spans, in call order (empty when there are no spans)."""
    config = config or TransitionConfig()
    if not spans:
        return []
    tree = TraceTree.from_spans(list(spans))
    if config.repair_hierarchy:
        tree.repair_hierarchy()
    calls = tree.find_llm_calls(
        config.llm_call_match,
        config.agent_match,
        "*" if config.agent_match is None else None,
        False if config.exclude_llm_call_in_reward else None,
        False,
        set(),
    )
    kept: list[tuple[TraceTree, Transition]] = []
    for node, agent in calls:
        transition = call_to_transition(node.span, agent)
        if config.skip_empty_token_spans and not (
            transition.prompt_token_ids and transition.response_token_ids
        ):
            log.warning("skipping LLM call %s without recorded token ids", node.span.span_id)
            continue
        kept.append((node, transition))
    rewards = tree.match_rewards(config.reward_match, [node for node, _ in kept])
    penalties = tool_error_rewards(tree, [node for node, _ in kept], air) if air is not None else {}
    for node, transition in kept:
        transition.reward = rewards.get(node.id)
        transition.air_reward = penalties.get(node.id, 0.0)
    return [transition for _, transition in kept]
