"""AIR, automatic intermediate rewards: what the agent's runtime observed, turned into reward.

Agent Lightning's paper describes AIR (a tool call's return status as an intermediate reward) but 0.3.0
ships no code for it. Here a tool-call span whose status is ``ERROR`` gives ``tool_error_reward`` to the
LLM call that asked for the tool: the latest call that ended before the tool span started. Several
failed tools after one call add up. A tool-call span is one with ``gen_ai.operation.name =
"execute_tool"`` (OpenTelemetry's GenAI conventions), ``agentops.span.kind = "tool"`` (AgentOps'
``@tool``), or a name matching ``tool_name_match``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from resonance_os.traces.spans import Span

if TYPE_CHECKING:
    from resonance_os.traces.tree import TraceTree


@dataclass(frozen=True)
class AirConfig:
    tool_error_reward: float = -0.1
    tool_name_match: str = r"^execute_tool\b"

    def __post_init__(self) -> None:
        re.compile(self.tool_name_match)


def is_tool_span(span: Span, config: AirConfig) -> bool:
    attributes = span.attributes
    return (
        attributes.get("gen_ai.operation.name") == "execute_tool"
        or attributes.get("agentops.span.kind") == "tool"
        or re.search(config.tool_name_match, span.name) is not None
    )


def tool_error_rewards(tree: TraceTree, llm_calls: list[TraceTree], config: AirConfig) -> dict[str, float]:
    """LLM call node id -> the summed intermediate reward of the failed tool calls it led to."""
    ended = sorted(
        (call for call in llm_calls if call.end_time is not None), key=lambda call: call.end_time or 0.0
    )
    rewards: dict[str, float] = {}
    for node in tree.traverse():
        if not (node.span.is_error and is_tool_span(node.span, config)) or node.start_time is None:
            continue
        before = [call for call in ended if call.end_time <= node.start_time]
        if before:
            call_id = before[-1].id
            rewards[call_id] = rewards.get(call_id, 0.0) + config.tool_error_reward
    return rewards
