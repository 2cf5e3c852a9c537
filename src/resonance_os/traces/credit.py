"""Credit assignment across the LLM calls of one rollout.

``identical`` is what Agent Lightning 0.3.0's trainer does (``verl/daemon.py``): the rollout's final
reward is the last matched reward found searching back from the last call (``reward_fillna_value``,
default 0, when there is none), and every call of the rollout gets it; GRPO then normalises across the
rollouts of one task. ``discounted`` gives call t the return ``r_t + gamma * G_{t+1}`` of the matched
rewards (a call without one counts 0), the final reward standing on the last call when no call has one.
Either way a call's AIR reward (:mod:`resonance_os.traces.air`) is added to the reward of that call
only, so AIR off (all zero) is exactly Agent Lightning's assignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from resonance_os.traces.transitions import Transition

CreditMethod = Literal["identical", "discounted"]


def final_reward(transitions: Sequence[Transition]) -> float | None:
    """The last matched reward, searching back from the last call (``None`` when no call has one)."""
    for transition in reversed(transitions):
        if transition.reward is not None:
            return transition.reward
    return None


def assign_credit(
    transitions: Sequence[Transition],
    method: CreditMethod = "identical",
    gamma: float = 1.0,
    fillna: float = 0.0,
) -> list[float]:
    """The return each call of one rollout is trained toward, in call order."""
    if not transitions:
        return []
    if method == "identical":
        outcome = final_reward(transitions)
        outcome = fillna if outcome is None else outcome
        return [outcome + t.air_reward for t in transitions]
    if method != "discounted":
        raise ValueError(f"unknown credit assignment {method!r}; use 'identical' or 'discounted'")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    rewards = [0.0 if t.reward is None else t.reward for t in transitions]
    if final_reward(transitions) is None:
        rewards[-1] = fillna
    returns = [0.0] * len(transitions)
    following = 0.0
    for i in range(len(transitions) - 1, -1, -1):
        following = rewards[i] + transitions[i].air_reward + gamma * following
        returns[i] = following
    return returns
