"""GRPO advantages across the rollouts of one task: verl's compute_grpo_outcome_advantage (the trainer
Agent Lightning 0.3.0 feeds) at the level of calls, and per rollout as Agent Lightning 1.0 does."""

from __future__ import annotations

import pytest
import torch
from agent_spans import AgentTracer, run

from resonance_os.traces import RolloutReturns, assign_credit, spans_to_transitions, task_advantages


def verl_grpo(
    scores: list[float], index: list[str], norm_by_std: bool = True, epsilon: float = 1e-6
) -> list[float]:
    """verl's compute_grpo_outcome_advantage on one score per sample, transcribed with torch."""
    scores_t = torch.tensor(scores, dtype=torch.float64)
    by_id: dict[str, list[torch.Tensor]] = {}
    for i, uid in enumerate(index):
        by_id.setdefault(uid, []).append(scores_t[i])
    mean, std = {}, {}
    for uid, values in by_id.items():
        if len(values) == 1:
            mean[uid], std[uid] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            stacked = torch.stack(values)
            mean[uid], std[uid] = torch.mean(stacked), torch.std(stacked)
    out = scores_t.clone()
    for i, uid in enumerate(index):
        out[i] = (out[i] - mean[uid]) / (std[uid] + epsilon) if norm_by_std else out[i] - mean[uid]
    return out.tolist()


def _rollout(calls: int, reward: float | None, task: str) -> RolloutReturns:
    def script(agent: AgentTracer) -> None:
        for i in range(calls):
            agent.llm_call([1, i], [2, i], f"{task}-{i}")
        if reward is not None:
            agent.reward(reward)

    return RolloutReturns(task, assign_credit(spans_to_transitions(run(script).spans())))


@pytest.mark.parametrize("scale", ["group", "none"])
def test_call_level_advantages_are_verls_grpo_over_each_tasks_calls(scale):
    rollouts = [
        _rollout(1, 1.0, "q1"), _rollout(3, 0.0, "q1"), _rollout(2, 0.5, "q1"),
        _rollout(2, None, "q2"), _rollout(1, 1.0, "q2"),
        _rollout(2, 1.0, "q3"),  # a task with one rollout, two calls
        _rollout(1, 0.7, "q4"),  # a task with a single call: mean 0, std 1
    ]  # fmt: skip
    ours = task_advantages(rollouts, "transition", scale)
    scores = [x for r in rollouts for x in r.returns]
    index = [r.task for r in rollouts for _ in r.returns]
    assert [x for row in ours for x in row] == pytest.approx(verl_grpo(scores, index, scale == "group"))
    assert [len(row) for row in ours] == [1, 3, 2, 2, 1, 2, 1]
    assert ours[5] == pytest.approx([0.0, 0.0]) and ours[6] == pytest.approx([0.7])
    assert len(set(ours[1])) == 1  # identical assignment: one advantage for every call of a rollout


def test_rollout_level_gives_each_rollout_one_advantage_whatever_its_length():
    rollouts = [_rollout(1, 1.0, "q"), _rollout(4, 0.0, "q"), _rollout(0, None, "q")]
    ours = task_advantages(rollouts, "rollout")
    expected = verl_grpo([1.0, 0.0], ["q", "q"])
    assert ours == [pytest.approx([expected[0]]), pytest.approx([expected[1]] * 4), []]
    longer_weighs_more = task_advantages(rollouts, "transition")
    assert longer_weighs_more[0][0] > ours[0][0]  # the 4-call rollout pulls the call-level mean down


def test_unknown_levels_and_scales_are_refused():
    with pytest.raises(ValueError, match="level"):
        task_advantages([], "episode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scale"):
        task_advantages([], "rollout", "batch")  # type: ignore[arg-type]
