"""Early stopping on held-out prompts, with a drift guard that the reward cannot game.

A policy trained on a reward model or a hand-made reward over-optimises it in the end (Gao, Schulman &
Hilton 2022, *Scaling Laws for Reward Model Overoptimization*): the reward keeps rising while the text
leaves the language the base model knows (HR-GRPO at 64 steps: every held-out paragraph one
children's-story formula, reward doubled). ``HeldOutEarlyStopping`` is a ``learn`` callback that
every ``every`` steps samples the held-out prompts with the policy (same seed each time) and measures

    heldout_reward = mean reward_fn(prompts, completions)
    judge          = mean over completion tokens of log pi_ref(y_t | x, y_<t),   y ~ pi_theta
    drift          = judge(pi_ref's own samples) - judge(now)          nats per token, 0 at the start

``judge`` is read by the reference policy itself (adapters disabled, or the frozen copy; no second
model in memory) at temperature 1. ``E_y~pi[log pi_ref(y)] = -H(pi) - KL(pi || pi_ref)``, so the drift
grows with the KL to the reference and with text the reference finds unlikely, which a formula or
nonsense is, whatever the reward says. Training stops when the drift exceeds ``max_drift`` or when
the held-out reward has not improved for ``patience`` checks; on a stop the trainable weights go back
to the best check (highest held-out reward among those within ``max_drift``; the start counts, so a
run that never helped returns the policy unchanged), as Keras' ``restore_best_weights`` does.

With ``drift_from="start"`` the start is the policy as it is when the object is made, not the
reference: for training that goes on from weights trained away from the reference on purpose (a
writer's voice adapter after SFT), so that only this training's drift counts and the start's held-out
reward is that of the weights a stop puts back.

Usage::

    stop = HeldOutEarlyStopping(policy, heldout_prompts, reward_fn, every=4, max_drift=0.5)
    GRPO(policy, reward_fn, prompts, config).learn(64, callback=stop)
    stop.restore_best()  # also after a run that was not stopped
    stop.checks          # one dict per check: step, heldout_reward, judge, drift, within_drift

``HeldOutLossStopping`` does the same for supervised fine-tuning with the loss on held-out pairs
(lower is better; no drift guard: the loss is the model's own likelihood of real text)::

    sft = SFT(policy, pairs, config)
    stop = HeldOutLossStopping(sft, heldout_pairs, every=12, patience=2)
    sft.learn(108, callback=stop)
    stop.finish()        # the lowest check's weights back
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Literal

import torch

from resonance_os.llm.errors import ConfigError
from resonance_os.llm.evaluate import RewardFn, drawn_rewards
from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sampling import Samples, sample


class HeldOutEarlyStopping:
    """``learn(callback=...)`` that checks held-out reward and drift every ``every`` steps.

    Args:
        policy: the policy being trained (its trainable weights are snapshotted now: the start).
        prompts: held-out prompts (strings or chat messages), never trained on.
        reward_fn: ``(prompts, completions) -> rewards``, the reward to monitor (usually the training one).
        every: steps between checks. samples: completions per prompt. seed: the sampling seed of every check.
        max_drift: nats per token the judge may fall below its start before training stops (None: never).
        patience: checks without a better held-out reward before training stops (None: never).
        max_new_tokens, temperature, top_p, chat_template: sampling, as in training.
        drift_from: ``"reference"`` (the start is the reference policy's own samples) or ``"start"``
            (the policy's as it is now).
    The start is measured when the object is made (one held-out evaluation).
    """

    def __init__(
        self,
        policy: LMPolicy,
        prompts: Sequence[Any],
        reward_fn: RewardFn,
        *,
        every: int = 4,
        samples: int = 2,
        max_drift: float | None = 0.5,
        patience: int | None = None,
        max_new_tokens: int = 64,
        temperature: float = 1.0,
        top_p: float = 1.0,
        chat_template: bool = True,
        seed: int = 0,
        drift_from: Literal["reference", "start"] = "reference",
    ) -> None:
        if drift_from not in ("reference", "start"):
            raise ConfigError(f"drift_from={drift_from!r} must be 'reference' or 'start'")
        if isinstance(prompts, str) or not prompts:
            raise ConfigError("prompts must be a non-empty list of held-out prompts")
        for name, value in (("every", every), ("samples", samples)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r} must be an integer >= 1")
        if max_drift is not None and not max_drift > 0:
            raise ConfigError(f"max_drift={max_drift!r} must be > 0 nats per token, or None for no limit")
        if patience is not None and (
            isinstance(patience, bool) or not isinstance(patience, int) or patience < 1
        ):
            raise ConfigError(
                f"patience={patience!r} must be an integer >= 1, or None to stop on drift alone"
            )
        if not callable(reward_fn):
            raise ConfigError("reward_fn must be a callable (prompts, completions) -> rewards")
        self.policy, self.prompts, self.reward_fn = policy, list(prompts), reward_fn
        self.every, self.samples, self.seed = every, samples, seed
        self.max_drift, self.patience = max_drift, patience
        self.sampling = {
            "max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p,
            "chat_template": chat_template,
        }  # fmt: skip
        self.checks: list[dict[str, Any]] = []
        self.stopped_at: int | None = None
        self._best_state = _snapshot(policy)
        with policy.reference() if drift_from == "reference" else nullcontext():
            reward, self.start_judge = self._evaluate()
        self._record(0, reward, self.start_judge)

    @property
    def best(self) -> dict[str, Any]:
        """The check whose weights ``restore_best`` puts back."""
        return max((c for c in self.checks if c["within_drift"]), key=lambda c: c["heldout_reward"])

    def __call__(self, trainer: Any, metrics: dict[str, Any]) -> bool:
        """The ``learn`` callback: a check every ``every`` steps; ``False`` (stop) on drift or patience."""
        step = int(trainer.num_timesteps)
        if step % self.every:
            return True
        reward, judge = self._evaluate()
        check = self._record(step, reward, judge)
        stale = [c for c in self.checks if c["step"] > self.best["step"]]
        if not check["within_drift"] or (self.patience is not None and len(stale) >= self.patience):
            self.stopped_at = step
            self.restore_best()
            return False
        return True

    def restore_best(self) -> dict[str, Any]:
        """Put the best check's trainable weights back into the policy; returns that check."""
        _restore(self.policy, self._best_state)
        return self.best

    def _record(self, step: int, reward: float, judge: float) -> dict[str, Any]:
        drift = self.start_judge - judge
        check = {
            "step": step,
            "heldout_reward": reward,
            "judge": judge,
            "drift": drift,
            "within_drift": self.max_drift is None or drift <= self.max_drift,
        }
        is_best = check["within_drift"] and (not self.checks or reward > self.best["heldout_reward"])
        self.checks.append(check)
        if is_best and step:
            self._best_state = _snapshot(self.policy)
        return check

    def _evaluate(self) -> tuple[float, float]:
        """(mean held-out reward, judge) of the policy as it computes now (seeded samples)."""
        policy = self.policy
        was_training = policy.set_mode(False)
        try:
            drawn = sample(policy, self.prompts, n=self.samples, seed=self.seed, **self.sampling)
            rewards = drawn_rewards(self.reward_fn, self.prompts, drawn)
            judge = _reference_loglik(policy, drawn)
        finally:
            policy.set_mode(was_training)
        return sum(rewards) / len(rewards), judge


class HeldOutLossStopping:
    """``learn(callback=...)`` for supervised fine-tuning: the loss on held-out pairs every ``every`` steps.

    Args:
        trainer: the ``SFT`` trainer (its ``evaluate(pairs)`` and ``num_timesteps``; its policy's
            trainable weights are kept at the lowest check).
        pairs: held-out ``(prompt, completion)`` pairs, never trained on.
        every: steps between checks. patience: checks without a lower loss before training stops.
        on_check: called with each check (``{"step", "loss"}``), the start's included.
    The start is measured when the object is made. After ``learn``, :meth:`finish` checks the last step
    when it was not checked and puts the lowest check's weights back.
    """

    def __init__(
        self,
        trainer: Any,
        pairs: Sequence[Any],
        *,
        every: int,
        patience: int,
        on_check: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        for name, value in (("every", every), ("patience", patience)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r} must be an integer >= 1")
        self.trainer, self.pairs = trainer, list(pairs)
        self.every, self.patience, self.on_check = every, patience, on_check
        self.checks: list[dict[str, Any]] = []
        self._check()

    @property
    def best(self) -> dict[str, Any]:
        """The check with the lowest held-out loss (the earliest of equals)."""
        return min(self.checks, key=lambda c: c["loss"])

    def __call__(self, trainer: Any, metrics: dict[str, Any]) -> bool:
        """The ``learn`` callback: a check every ``every`` steps; ``False`` (stop) once patience is spent."""
        if trainer.num_timesteps % self.every:
            return True
        self._check()
        return len([c for c in self.checks if c["step"] > self.best["step"]]) < self.patience

    def finish(self) -> dict[str, Any]:
        """Check the last step if it was not, put the lowest check's weights back; returns that check."""
        if self.checks[-1]["step"] != self.trainer.num_timesteps:
            self._check()
        _restore(self.trainer.policy, self._best_state)
        return self.best

    def _check(self) -> None:
        check = {"step": int(self.trainer.num_timesteps), "loss": self.trainer.evaluate(self.pairs)}
        if not self.checks or check["loss"] < self.best["loss"]:
            self._best_state = _snapshot(self.trainer.policy)
        self.checks.append(check)
        if self.on_check is not None:
            self.on_check(check)


def _snapshot(policy: LMPolicy) -> list[torch.Tensor]:
    """A copy of the policy's trainable weights."""
    return [p.detach().clone() for p in policy.trainable_parameters()]


def _restore(policy: LMPolicy, state: Sequence[torch.Tensor]) -> None:
    """Put weights from :func:`_snapshot` back into the policy."""
    with torch.no_grad():
        for parameter, saved in zip(policy.trainable_parameters(), state, strict=True):
            parameter.copy_(saved)


def _reference_loglik(policy: LMPolicy, drawn: Samples) -> float:
    """Mean per-token log-probability of the drawn completions under the reference policy (T = 1)."""
    mask = drawn.completion_mask
    with torch.no_grad(), policy.reference():
        logp = policy.token_logprobs(drawn.input_ids, drawn.attention_mask, mask)
    return float(logp.sum() / mask.sum().clamp(min=1))
