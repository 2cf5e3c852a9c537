"""Agent traces (OpenTelemetry spans, as Agent Lightning 0.3 stores them) -> transitions for training.

- :mod:`~resonance_os.traces.spans`: the stored span (:class:`Span`, from Agent Lightning's JSON shape).
- :mod:`~resonance_os.traces.tree`: the span tree, LLM-call detection and reward matching, exactly as
  ``agentlightning.TracerTraceToTriplet`` does them.
- :mod:`~resonance_os.traces.transitions`: spans -> :class:`Transition` (prompt token ids, response token
  ids, reward), one per LLM call.
- :mod:`~resonance_os.traces.credit`: credit assignment across the calls of one rollout (Agent
  Lightning's identical assignment, or a discounted return).
- :mod:`~resonance_os.traces.advantages`: GRPO advantages across the rollouts of one task, as Agent
  Lightning's trainer (verl) computes them.
- :mod:`~resonance_os.traces.air`: automatic intermediate rewards from what the runtime saw (a tool call
  whose span ended in error).
"""

from resonance_os.traces.advantages import RolloutReturns, task_advantages
from resonance_os.traces.air import AirConfig, tool_error_rewards
from resonance_os.traces.credit import assign_credit, final_reward
from resonance_os.traces.spans import Span
from resonance_os.traces.transitions import Transition, TransitionConfig, spans_to_transitions
from resonance_os.traces.tree import RewardMatchPolicy, TraceTree

__all__ = [
    "AirConfig",
    "RewardMatchPolicy",
    "RolloutReturns",
    "Span",
    "TraceTree",
    "Transition",
    "TransitionConfig",
    "assign_credit",
    "final_reward",
    "spans_to_transitions",
    "task_advantages",
    "tool_error_rewards",
]
