"""Credit assignment across one rollout's calls (Agent Lightning's identical assignment, a discounted
return) and AIR: a failed tool call as a negative intermediate reward on the call that asked for it."""

from __future__ import annotations

import pytest
from agent_spans import AgentTracer, run, two_turns_with_failed_tool

from resonance_os.traces import AirConfig, assign_credit, final_reward, spans_to_transitions


def test_identical_assignment_gives_every_call_the_final_reward():
    transitions = spans_to_transitions(run(two_turns_with_failed_tool).spans())
    assert final_reward(transitions) == 1.0
    assert assign_credit(transitions) == [1.0, 1.0]


def test_without_any_reward_the_fill_value_is_the_return():
    def unrewarded(agent: AgentTracer) -> None:
        agent.llm_call([1], [2], "a")
        agent.llm_call([3], [4], "b")

    transitions = spans_to_transitions(run(unrewarded).spans())
    assert final_reward(transitions) is None
    assert assign_credit(transitions) == [0.0, 0.0]
    assert assign_credit(transitions, fillna=-1.0) == [-1.0, -1.0]
    assert assign_credit(transitions, "discounted", gamma=0.5, fillna=-1.0) == [-0.5, -1.0]


def test_the_final_reward_is_the_last_matched_one_even_if_the_last_call_has_none():
    def reward_then_call(agent: AgentTracer) -> None:
        agent.llm_call([1], [2], "a")
        agent.reward(0.3)
        agent.llm_call([3], [4], "b")

    transitions = spans_to_transitions(run(reward_then_call).spans())
    assert [t.reward for t in transitions] == [0.3, None]
    assert assign_credit(transitions) == [0.3, 0.3]


def test_discounted_return_sums_later_rewards():
    transitions = spans_to_transitions(run(two_turns_with_failed_tool).spans())
    assert assign_credit(transitions, "discounted", gamma=1.0) == [1.25, 1.0]
    assert assign_credit(transitions, "discounted", gamma=0.5) == [0.75, 1.0]
    with pytest.raises(ValueError, match="gamma"):
        assign_credit(transitions, "discounted", gamma=1.5)
    with pytest.raises(ValueError, match="unknown credit assignment"):
        assign_credit(transitions, "mean")  # type: ignore[arg-type]


def test_a_failed_tool_call_penalises_the_call_that_asked_for_it():
    spans = run(two_turns_with_failed_tool).spans()
    transitions = spans_to_transitions(spans, air=AirConfig(tool_error_reward=-0.2))
    assert [t.air_reward for t in transitions] == [-0.2, 0.0]
    assert [t.reward for t in transitions] == [0.25, 1.0]  # matched rewards never see AIR
    assert assign_credit(transitions) == pytest.approx([0.8, 1.0])
    assert assign_credit(transitions, "discounted", gamma=0.5) == pytest.approx([0.55, 1.0])
    assert [t.air_reward for t in spans_to_transitions(spans)] == [0.0, 0.0]  # AIR off: Agent Lightning's


def test_successful_tools_and_failures_before_any_call_give_nothing():
    def tools(agent: AgentTracer) -> None:
        agent.tool("lookup", error="timeout")  # before any call: nobody asked for it
        agent.llm_call([1], [2], "a")
        agent.tool("lookup")
        agent.tool("lookup", error="bad input")
        agent.tool("lookup", error="bad input again")
        agent.llm_call([3], [4], "b")
        agent.reward(1.0)

    transitions = spans_to_transitions(run(tools).spans(), air=AirConfig(tool_error_reward=-0.1))
    assert [t.air_reward for t in transitions] == pytest.approx([-0.2, 0.0])


def test_tool_spans_are_recognised_by_agentops_kind_and_by_name():
    def mixed(agent: AgentTracer) -> None:
        agent.llm_call([1], [2], "a")
        with agent.span("search", {"agentops.span.kind": "tool"}, error="404"):
            pass
        with agent.span("my_tool.call", {}, error="boom"):
            pass

    spans = run(mixed).spans()
    assert [t.air_reward for t in spans_to_transitions(spans, air=AirConfig())] == [-0.1]
    by_name = AirConfig(tool_error_reward=-1.0, tool_name_match=r"^my_tool\.")
    assert [t.air_reward for t in spans_to_transitions(spans, air=by_name)] == [-2.0]
