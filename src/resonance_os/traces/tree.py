"""The span tree of one rollout attempt, LLM-call detection and reward matching.

A port of ``agentlightning.adapter.triplet.TraceTree`` (0.3.0) that keeps its rules exactly, quirks
included, so that the transitions we train on are the ones Agent Lightning's trainer would build:

- roots are spans without a parent; a parent id that names no stored span becomes a virtual span
  spanning its children; several roots hang under one virtual root.
- ``repair_hierarchy`` moves a child of the root under the tightest other span whose time range
  encloses it (AgentOps wraps everything in a session span, and mixed tracers float LLM spans to the
  top); a root with a single child is repaired one level down.
- an LLM call is a span whose name matches ``llm_call_match`` inside a matching agent's subtree (any
  subtree without ``agent_match``), not under a reward span, and not a duplicate: a nested match without
  a response id, or one whose ``gen_ai.response.id`` was already seen, is the same call traced twice.
- rewards go, in start-time order, to the latest LLM call that ended before the reward span started and
  has no reward yet (``first_occurrence``); ``first_sibling`` does the same among one span's children.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from enum import Enum

from resonance_os.traces.rewards import is_reward_span, reward_value
from resonance_os.traces.spans import Span

RESPONSE_ID_KEYS = ("gen_ai.response.id", "agentlightning.operation.output.id")


class RewardMatchPolicy(str, Enum):
    FIRST_OCCURRENCE = "first_occurrence"
    FIRST_SIBLING = "first_sibling"


def first_string(attributes: dict, keys: Iterable[str]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str):
            return value
    return None


def _virtual_span(template: Span, span_id: str, name: str, start: float | None, end: float | None) -> Span:
    return Span(
        rollout_id=template.rollout_id,
        attempt_id=template.attempt_id,
        sequence_id=template.sequence_id,
        trace_id=template.trace_id,
        span_id=span_id,
        parent_id=None,
        name=name,
        start_time=start,
        end_time=end,
        status_code="OK",
    )


def agent_name(span: Span) -> str | None:
    """The agent a span stands for, by the conventions of the frameworks Agent Lightning knows."""
    attributes = span.attributes
    if (name := attributes.get("agent.name")) is not None:  # OpenAI Agents SDK
        return name
    if attributes.get("agentops.span.kind") == "agent" and attributes.get("operation.name") is not None:
        return attributes["operation.name"]
    for key in ("recipient_agent_type", "langchain.chain.type", "executor.id"):  # AutoGen, LangGraph, MAF
        if (name := attributes.get(key)) is not None:
            return name
    if (
        attributes.get("type") == "agent"
        and attributes.get("agentlightning.operation.input.name") is not None
    ):
        return attributes["agentlightning.operation.input.name"]  # Weave
    if span.name.startswith("langchain.Chain.") and attributes.get("lc_name") is not None:
        return attributes["lc_name"]
    return None


class TraceTree:
    """A span and its children."""

    def __init__(self, span: Span, children: list[TraceTree] | None = None, node_id: str | None = None):
        self.id = node_id or span.span_id
        self.span = span
        self.children = children or []

    @property
    def start_time(self) -> float | None:
        return self.span.start_time

    @property
    def end_time(self) -> float | None:
        return self.span.end_time

    def traverse(self) -> list[TraceTree]:
        """Every node, depth first, parents before children."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.traverse())
        return nodes

    @classmethod
    def from_spans(cls, spans: list[Span]) -> TraceTree:
        if not spans:
            raise ValueError("no spans to build a trace tree from")
        by_id = {span.span_id: span for span in spans}
        children_of: dict[str, list[str]] = {}
        roots: list[str] = []
        for span in spans:
            if span.parent_id is None:
                roots.append(span.span_id)
            else:
                children_of.setdefault(span.parent_id, []).append(span.span_id)
        roots.extend(parent for parent in children_of if parent not in by_id)

        def visit(node_id: str) -> TraceTree:
            children = [visit(child) for child in children_of.get(node_id, [])]
            if node_id in by_id:
                return cls(by_id[node_id], children)
            starts = [c.start_time for c in children if c.start_time is not None]
            ends = [c.end_time for c in children if c.end_time is not None]
            span = _virtual_span(
                children[0].span,
                node_id,
                "agentlightning.virtual",
                min(starts, default=None),
                max(ends, default=None),
            )
            return cls(span, children)

        if len(roots) == 1:
            return visit(roots[0])
        trees = [visit(root) for root in roots]
        root_span = _virtual_span(
            trees[0].span, secrets.token_hex(8), "virtual-root", trees[0].start_time, trees[-1].end_time
        )
        return cls(root_span, trees, node_id="virtual-root")

    def repair_hierarchy(self) -> None:
        if len(self.children) == 1:
            self.children[0].repair_hierarchy()
            return
        for orphan in list(self.children):
            if len(self.children) == 1:
                break
            if orphan.start_time is None or orphan.end_time is None:
                continue
            closest, closest_slack = None, float("inf")
            for node in self.traverse():
                if node.id == orphan.id or node is self or node.start_time is None or node.end_time is None:
                    continue
                if node.start_time <= orphan.start_time and node.end_time >= orphan.end_time:
                    slack = node.end_time - orphan.end_time + orphan.start_time - node.start_time
                    if 0 < slack < closest_slack:
                        closest, closest_slack = node, slack
            if closest is not None:
                self.children.remove(orphan)
                closest.children.append(orphan)

    def find_llm_calls(
        self,
        llm_call_match: str,
        agent_match: str | None,
        within_agent: str | None,
        within_reward: bool | None,
        within_llm_call: bool | None,
        seen_response_ids: set[str],
    ) -> list[tuple[TraceTree, str]]:
        """``(node, agent name)`` of every LLM call in this subtree, in depth-first order."""
        calls: list[tuple[TraceTree, str]] = []
        is_call = within_agent is not None and within_reward is not True
        if re.search(llm_call_match, self.span.name) is None:
            is_call = False
        if is_call:
            response_id = first_string(self.span.attributes, RESPONSE_ID_KEYS)
            if response_id is None and within_llm_call is True:
                is_call = False
            if response_id is not None and response_id in seen_response_ids:
                is_call = False
            if is_call:
                calls.append((self, within_agent))
                if response_id is not None:
                    seen_response_ids.add(response_id)
                if within_llm_call is not None:
                    within_llm_call = True
        name = agent_name(self.span)
        if name is not None:
            within_agent = name if agent_match is None or re.search(agent_match, name) else None
        if within_reward is not None and is_reward_span(self.span):
            within_reward = True
        for child in self.children:
            calls.extend(
                child.find_llm_calls(
                    llm_call_match,
                    agent_match,
                    within_agent,
                    within_reward,
                    within_llm_call,
                    seen_response_ids,
                )
            )
        return calls

    def match_rewards(self, policy: RewardMatchPolicy, llm_calls: list[TraceTree]) -> dict[str, float | None]:
        """LLM call node id -> the reward matched to it (calls without one are absent)."""
        call_ids = {call.id for call in llm_calls}
        rewards: dict[str, float | None] = {}

        def assign(sequence: list[TraceTree]) -> None:
            candidates: list[tuple[str, float | None]] = []
            for node in sequence:
                if node.id in call_ids:
                    candidates.append((node.id, node.end_time))
                value = reward_value(node.span)
                if value is None:
                    continue
                for call_id, call_end in reversed(candidates):
                    if call_end is not None and node.start_time is not None and call_end > node.start_time:
                        continue
                    if call_id in rewards:
                        continue
                    rewards[call_id] = value
                    break

        if policy == RewardMatchPolicy.FIRST_OCCURRENCE:
            assign(sorted(self.traverse(), key=lambda node: node.start_time or 0.0))
        else:
            for node in self.traverse():
                assign(node.children)
        return rewards
