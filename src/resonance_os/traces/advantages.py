"""GRPO advantages across the rollouts of one task, as Agent Lightning's trainer computes them.

Agent Lightning 0.3.0 hands verl one sample per LLM call, its score the call's return, grouped by task
(``uid = data_id``); verl's GRPO (``compute_grpo_outcome_advantage``) then gives each sample
``(score - mean) / (std + 1e-6)`` over its group, the unbiased std, and a group of one sample mean 0 and
std 1. So at ``level="transition"`` (0.3.0) a rollout with more calls weighs more in its task's mean;
``level="rollout"`` (Agent Lightning 1.0) takes one score per rollout (its first call's return) and gives
its advantage to all its calls. ``scale="none"`` subtracts the mean only (Dr. GRPO).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

EPSILON = 1e-6


@dataclass(frozen=True)
class RolloutReturns:
    """One rollout: its task (the GRPO group) and the return of each of its calls (``assign_credit``)."""

    task: Hashable
    returns: Sequence[float]


def _normalised(scores: list[float], groups: list[Hashable], scale: str) -> list[float]:
    members: dict[Hashable, list[float]] = {}
    for group, score in zip(groups, scores):
        members.setdefault(group, []).append(score)
    stats = {
        group: (0.0, 1.0) if len(values) == 1 else (statistics.fmean(values), statistics.stdev(values))
        for group, values in members.items()
    }
    if scale == "group":
        return [(s - stats[g][0]) / (stats[g][1] + EPSILON) for s, g in zip(scores, groups)]
    return [s - stats[g][0] for s, g in zip(scores, groups)]


def task_advantages(
    rollouts: Sequence[RolloutReturns],
    level: Literal["transition", "rollout"] = "transition",
    scale: Literal["group", "none"] = "group",
) -> list[list[float]]:
    """The advantage of every call of every rollout (same nesting as ``rollouts``)."""
    if level not in ("transition", "rollout"):
        raise ValueError(f"unknown level {level!r}; use 'transition' or 'rollout'")
    if scale not in ("group", "none"):
        raise ValueError(f"unknown scale {scale!r}; use 'group' or 'none'")
    kept = [r for r in rollouts if len(r.returns)]
    if level == "rollout":
        per_rollout = iter(_normalised([r.returns[0] for r in kept], [r.task for r in kept], scale))
        return [[next(per_rollout)] * len(r.returns) if len(r.returns) else [] for r in rollouts]
    flat = _normalised([x for r in kept for x in r.returns], [r.task for r in kept for _ in r.returns], scale)
    out, position = [], 0
    for rollout in rollouts:
        out.append(flat[position : position + len(rollout.returns)])
        position += len(rollout.returns)
    return out
