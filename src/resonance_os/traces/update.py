"""One policy update from recorded transitions: the calls of finished rollouts, each with its advantage
(:func:`~resonance_os.traces.advantages.task_advantages`), teacher-forced through an
:class:`~resonance_os.llm.policy.LMPolicy` and trained with a GRPO-family loss (:mod:`resonance_os.llm.losses`).

Where a transition kept the log-probabilities its tokens were sampled with (the recorded OpenAI endpoint
keeps them when the agent asks for ``logprobs``), they are the loss's ``pi_old``, so the clipped ratio
corrects for a policy that moved since the rollout; otherwise the update is taken as on-policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from resonance_os.llm.losses import policy_loss
from resonance_os.llm.policy import LMPolicy
from resonance_os.traces.transitions import Transition


@dataclass(frozen=True)
class UpdateConfig:
    learning_rate: float = 1e-5
    loss_type: str = "grpo"
    epsilon: float = 0.2
    max_grad_norm: float = 1.0


def sampled_logprobs(transition: Transition) -> list[float] | None:
    """The recorded log-probability of each response token, if the call kept them all."""
    entries = transition.logprobs
    if not isinstance(entries, list) or len(entries) != len(transition.response_token_ids):
        return None
    values = [entry.get("logprob") if isinstance(entry, dict) else None for entry in entries]
    return values if all(isinstance(v, (int, float)) for v in values) else None


def _batch(samples: Sequence[tuple[Transition, float]], pad_id: int) -> dict[str, torch.Tensor]:
    prompt_len = max(len(t.prompt_token_ids) for t, _ in samples)
    response_len = max(len(t.response_token_ids) for t, _ in samples)
    rows, attention, completion, old, has_old = [], [], [], [], []
    for transition, _ in samples:
        prompt, response = transition.prompt_token_ids, transition.response_token_ids
        left, right = prompt_len - len(prompt), response_len - len(response)
        rows.append([pad_id] * left + prompt + response + [pad_id] * right)
        attention.append([0] * left + [1] * (len(prompt) + len(response)) + [0] * right)
        completion.append([1] * len(response) + [0] * right)
        recorded = sampled_logprobs(transition)
        old.append((recorded or [0.0] * len(response)) + [0.0] * right)
        has_old.append(recorded is not None)
    return {
        "input_ids": torch.tensor(rows),
        "attention_mask": torch.tensor(attention),
        "completion_mask": torch.tensor(completion, dtype=torch.float32),
        "old_logp": torch.tensor(old, dtype=torch.float32),
        "has_old": torch.tensor(has_old),
        "advantages": torch.tensor([adv for _, adv in samples], dtype=torch.float32),
    }


class TransitionUpdater:
    """Applies updates to ``policy`` (its trainable parameters: the LoRA adapter by default)."""

    def __init__(self, policy: LMPolicy, config: UpdateConfig | None = None) -> None:
        self.policy = policy
        self.config = config or UpdateConfig()
        self.optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=self.config.learning_rate)
        self.pad_id = policy.tokenizer.pad_token_id if policy.tokenizer.pad_token_id is not None else 0

    def step(self, samples: Sequence[tuple[Transition, float]]) -> dict[str, float]:
        """One optimiser step on ``(transition, advantage)`` pairs; calls without tokens are skipped."""
        usable = [(t, a) for t, a in samples if t.prompt_token_ids and t.response_token_ids]
        if not usable:
            raise ValueError("no transition has both prompt and response token ids to train on")
        batch = _batch(usable, self.pad_id)
        self.policy.train()
        logp = self.policy.token_logprobs(
            batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
        )
        old = torch.where(batch["has_old"].unsqueeze(1), batch["old_logp"], logp.detach())
        loss, metrics = policy_loss(
            logp,
            old,
            batch["advantages"],
            batch["completion_mask"],
            self.config.loss_type,
            self.config.epsilon,
        )
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.trainable_parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        return {
            "loss": float(loss.detach()),
            "samples": float(len(usable)),
            **{k: float(v) for k, v in metrics.items()},
        }
