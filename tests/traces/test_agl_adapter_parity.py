"""Our transitions equal Agent Lightning 0.3.0's own ``TracerTraceToTriplet`` on the same stored spans
(run in agentlightning's virtual environment; skipped, saying why, where it is not installed)."""

from __future__ import annotations

import json

import pytest
from agent_spans import AgentTracer, run, two_turns_with_failed_tool
from agl_venv import require_agentlightning, run_agl

from resonance_os.traces import RewardMatchPolicy, Span, TransitionConfig, spans_to_transitions

ADAPT = r"""
import json, sys
from agentlightning import TracerTraceToTriplet
from agentlightning.adapter.triplet import RewardMatchPolicy
from agentlightning.types import Span
cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    spans = [Span.model_validate(s) for s in case["spans"]]
    adapter = TracerTraceToTriplet(
        agent_match=case["agent_match"], reward_match=RewardMatchPolicy(case["reward_match"]),
        repair_hierarchy=case["repair_hierarchy"],
    )
    out.append([[t.prompt["token_ids"], t.response["token_ids"], t.reward, t.metadata["response_id"]]
                for t in adapter.adapt(spans)])
print(json.dumps(out))
"""


def _floating(agent: AgentTracer) -> None:
    outer = agent.tracer.start_span(
        "agent", attributes={"agent.name": "solver"}, start_time=agent.clock.tick()
    )
    agent.llm_call([1], [2], "x")
    agent.reward(0.5)
    outer.end(end_time=agent.clock.tick())


def _rewards_out_of_order(agent: AgentTracer) -> None:
    agent.llm_call([1], [2], "a")
    agent.llm_call([3], [4], "b")
    agent.reward(0.1)
    with agent.span("openai.chat.completion", {"prompt_token_ids": [5], "response_token_ids": [6]}):
        agent.reward(0.7)
    agent.reward(0.9)


def _two_agents(agent: AgentTracer) -> None:
    with agent.span("writer", {"agent.name": "writer"}):
        agent.llm_call([1], [2], "w")
        agent.reward(0.4)
    with agent.span("critic", {"agent.name": "critic"}):
        agent.llm_call([3], [4], "c")
        with agent.span("openai.chat.completion", {"gen_ai.response.id": "c"}):
            pass
    agent.reward(1.0)


CASES = [
    (two_turns_with_failed_tool, None, RewardMatchPolicy.FIRST_OCCURRENCE, True),
    (two_turns_with_failed_tool, None, RewardMatchPolicy.FIRST_SIBLING, True),
    (_floating, "solver", RewardMatchPolicy.FIRST_OCCURRENCE, True),
    (_floating, "solver", RewardMatchPolicy.FIRST_OCCURRENCE, False),
    (_rewards_out_of_order, None, RewardMatchPolicy.FIRST_OCCURRENCE, True),
    (_rewards_out_of_order, None, RewardMatchPolicy.FIRST_SIBLING, True),
    (_two_agents, None, RewardMatchPolicy.FIRST_OCCURRENCE, True),
    (_two_agents, "critic", RewardMatchPolicy.FIRST_OCCURRENCE, True),
]


@pytest.mark.slow
def test_transitions_match_agentlightnings_adapter(tmp_path):
    require_agentlightning()
    cases, ours = [], []
    for script, agent_match, policy, repair in CASES:
        spans = run(script).span_dicts()
        cases.append(
            {
                "spans": spans,
                "agent_match": agent_match,
                "reward_match": policy.value,
                "repair_hierarchy": repair,
            }
        )
        config = TransitionConfig(agent_match=agent_match, reward_match=policy, repair_hierarchy=repair)
        transitions = spans_to_transitions([Span.from_dict(s) for s in spans], config)
        ours.append(
            [[t.prompt_token_ids, t.response_token_ids, t.reward, t.response_id] for t in transitions]
        )
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    theirs = json.loads(run_agl(ADAPT, str(tmp_path / "cases.json")).stdout.strip().splitlines()[-1])
    assert ours == theirs
    assert any(len(case) >= 2 for case in ours)  # the cases do exercise matching across calls
