"""Spans -> transitions: the span tree, LLM-call detection and reward matching of Agent Lightning's
TracerTraceToTriplet, on spans the OpenTelemetry SDK produced and the OTLP wire format carried."""

from __future__ import annotations

import pytest
from agent_spans import AgentTracer, run, two_turns_with_failed_tool

from resonance_os.traces import RewardMatchPolicy, Span, TraceTree, TransitionConfig, spans_to_transitions
from resonance_os.traces.rewards import reward_dimensions, reward_value


def test_each_llm_call_is_a_transition_with_its_token_ids_and_matched_reward():
    spans = run(two_turns_with_failed_tool).spans()
    transitions = spans_to_transitions(spans)
    assert [t.prompt_token_ids for t in transitions] == [[1, 2, 3], [1, 2, 3, 10, 11, 4]]
    assert [t.response_token_ids for t in transitions] == [[10, 11], [12, 13, 14]]
    assert [t.reward for t in transitions] == [0.25, 1.0]
    assert [t.response_id for t in transitions] == ["resp-1", "resp-2"]
    assert transitions[0].prompt == [{"role": "user", "content": "question"}]
    assert transitions[0].response == [{"role": "assistant", "content": "answer"}]
    by_id = {s.span_id: s for s in spans}
    assert all(by_id[t.span_id].name == "openai.chat.completion" for t in transitions)
    assert {(t.rollout_id, t.attempt_id) for t in transitions} == {("ro-000000000001", "at-00000001")}


def test_the_primary_dimension_of_a_multi_dimensional_reward_is_the_reward():
    spans = run(two_turns_with_failed_tool).spans()
    final = [s for s in spans if s.name == "agentlightning.annotation"][-1]
    assert reward_dimensions(final) == [("primary", 1.0), ("accuracy", 1.0)]


def test_a_call_traced_twice_counts_once():
    def nested_duplicate(agent: AgentTracer) -> None:
        with agent.span(
            "openai.chat.completion",
            {"gen_ai.response.id": "r", "prompt_token_ids": [1], "response_token_ids": [2]},
        ):
            agent.llm_call([1], [2], "r")  # an inner instrumentation of the same call
        agent.reward(1.0)

    transitions = spans_to_transitions(run(nested_duplicate).spans())
    assert len(transitions) == 1 and transitions[0].reward == 1.0


def test_a_reward_that_started_before_the_call_ended_is_not_its_reward():
    def overlapping(agent: AgentTracer) -> None:
        with agent.span("openai.chat.completion", {"prompt_token_ids": [1], "response_token_ids": [2]}):
            agent.reward(0.5)  # emitted inside the call: belongs to no earlier call
        agent.llm_call([3], [4], "r2")
        agent.reward(1.0)

    transitions = spans_to_transitions(run(overlapping).spans())
    assert [t.reward for t in transitions] == [None, 1.0]


def test_rewards_go_to_the_latest_unrewarded_call_before_them():
    def two_calls_then_two_rewards(agent: AgentTracer) -> None:
        agent.llm_call([1], [2], "a")
        agent.llm_call([3], [4], "b")
        agent.reward(0.1)
        agent.reward(0.9)

    transitions = spans_to_transitions(run(two_calls_then_two_rewards).spans())
    assert [t.reward for t in transitions] == [0.9, 0.1]


def test_llm_calls_inside_a_reward_computation_are_not_trained_on():
    def judged(agent: AgentTracer) -> None:
        agent.llm_call([1], [2], "policy")
        with agent.span(
            "agentlightning.operation", {"agentlightning.operation.name": "agentlightning.reward"}
        ):
            agent.llm_call([7], [8], "judge")
        agent.reward(1.0)

    transitions = spans_to_transitions(run(judged).spans())
    assert [t.response_id for t in transitions] == ["policy"]


def test_agent_match_keeps_only_the_named_agents_calls():
    def two_agents(agent: AgentTracer) -> None:
        with agent.span("writer", {"agent.name": "writer"}):
            agent.llm_call([1], [2], "w")
        with agent.span("critic", {"agent.name": "critic"}):
            agent.llm_call([3], [4], "c")

    spans = run(two_agents).spans()
    writer = spans_to_transitions(spans, TransitionConfig(agent_match="^writer$"))
    assert [(t.response_id, t.agent_name) for t in writer] == [("w", "writer")]
    assert [t.agent_name for t in spans_to_transitions(spans)] == ["writer", "critic"]


def test_several_roots_and_a_lost_parent_still_make_one_tree():
    spans = run(two_turns_with_failed_tool).spans()
    session = next(s for s in spans if s.name == "rollout.session")
    without_session = [s for s in spans if s is not session]  # the session span was never exported
    tree = TraceTree.from_spans(without_session)
    assert tree.span.span_id == session.span_id and tree.span.name == "agentlightning.virtual"
    assert [t.reward for t in spans_to_transitions(without_session)] == [0.25, 1.0]

    extra_root = Span("r", "a", 99, "0" * 32, "f" * 16, None, "separate.root", start_time=0.0, end_time=0.0)
    tree = TraceTree.from_spans([*spans, extra_root])
    assert tree.id == "virtual-root" and len(tree.children) == 2


def test_spans_floating_at_the_top_are_moved_under_the_span_that_encloses_them():
    def floating(agent: AgentTracer) -> None:
        agent_span = agent.tracer.start_span(
            "agent", attributes={"agent.name": "solver"}, start_time=agent.clock.tick()
        )
        agent.llm_call([1], [2], "x")  # exported by another tracer, under no parent
        agent_span.end(end_time=agent.clock.tick())

    spans = run(floating).spans()
    with_repair = spans_to_transitions(spans, TransitionConfig(agent_match="solver"))
    without = spans_to_transitions(spans, TransitionConfig(agent_match="solver", repair_hierarchy=False))
    assert [t.agent_name for t in with_repair] == ["solver"] and without == []


def test_first_sibling_matches_rewards_among_one_spans_children():
    spans = run(two_turns_with_failed_tool).spans()
    transitions = spans_to_transitions(spans, TransitionConfig(reward_match=RewardMatchPolicy.FIRST_SIBLING))
    assert [t.reward for t in transitions] == [0.25, 1.0]


@pytest.mark.parametrize(
    "attributes, name, expected",
    [
        ({"agentops.task.output": '{"type": "reward", "value": 0.5}'}, "reward", 0.5),
        ({"agentops.entity.output": {"type": "reward", "value": 2.0}}, "reward", 2.0),
        ({"reward": 0.75}, "agentlightning.annotation", 0.75),
        ({"reward": 0.75}, "some.span", None),
        ({"agentops.task.output": "not json"}, "reward", None),
    ],
)
def test_older_reward_formats_are_read(attributes, name, expected):
    span = Span("r", "a", 1, "0" * 32, "1" * 16, None, name, attributes=attributes)
    assert reward_value(span) == expected


def test_empty_token_spans_are_kept_unless_asked_to_skip():
    def anonymous(agent: AgentTracer) -> None:
        with agent.span("openai.chat.completion", {"gen_ai.response.id": "no-ids"}):
            pass
        agent.llm_call([1], [2], "ids")
        agent.reward(1.0)

    spans = run(anonymous).spans()
    assert len(spans_to_transitions(spans)) == 2
    kept = spans_to_transitions(spans, TransitionConfig(skip_empty_token_spans=True))
    assert [t.response_id for t in kept] == ["ids"] and kept[0].reward == 1.0


def test_no_spans_no_transitions():
    assert spans_to_transitions([]) == []
