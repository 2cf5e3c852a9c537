"""pass@k of an ``LMPolicy`` on held-out prompts: sample n completions per prompt, count the passes.

Chen et al. (2021, *Evaluating Large Language Models Trained on Code*, eq. 1) estimate pass@k from
``n >= k`` samples of which ``c`` pass, without bias, as

    pass@k = E_problems[ 1 - C(n - c, k) / C(n, k) ]

(pass@1 is then the mean of c / n). A completion passes when its reward is > 0, the convention of the
GRPO trainer's ``pass_rate`` metric (a +1/-1 verifier, or any reward that is positive on success).

Usage::

    from resonance_os.llm.evaluate import evaluate_pass_at_k

    result = evaluate_pass_at_k(policy, prompts, reward_fn, samples=8, max_new_tokens=96, seed=0)
    result.pass_at[1], result.passes  # mean pass@1, passes per prompt (out of 8)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from resonance_os.llm.errors import ConfigError
from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sampling import Samples, sample

RewardFn = Callable[[list[Any], list[str]], Sequence[float]]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al.'s unbiased pass@k of one problem with ``c`` passes among ``n`` samples (k <= n)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ConfigError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass
class PassAtK:
    """The evaluation of a policy on ``len(passes)`` prompts with ``samples`` completions each.

    passes: passing completions per prompt, in prompt order. pass_at: mean pass@k per k.
    completion_length: mean tokens per completion. truncated_fraction: share cut at max_new_tokens.
    """

    samples: int
    passes: list[int]
    pass_at: dict[int, float] = field(default_factory=dict)
    completion_length: float = 0.0
    truncated_fraction: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "passes": list(self.passes),
            "pass_at": {str(k): v for k, v in self.pass_at.items()},
            "completion_length": self.completion_length,
            "truncated_fraction": self.truncated_fraction,
        }


def drawn_rewards(reward_fn: RewardFn, prompts: Sequence[Any], drawn: Samples) -> list[float]:
    """``reward_fn`` on the completions ``sample(policy, prompts, ...)`` drew, each with its prompt;
    raises ``ConfigError`` when it returns another number of rewards."""
    rewards = [float(r) for r in reward_fn([prompts[i] for i in drawn.prompt_index], list(drawn.texts))]
    if len(rewards) != len(drawn.texts):
        raise ConfigError(
            f"the reward function returned {len(rewards)} rewards for {len(drawn.texts)} completions"
        )
    return rewards


def evaluate_pass_at_k(
    policy: LMPolicy,
    prompts: Sequence[Any],
    reward_fn: RewardFn,
    *,
    samples: int = 8,
    ks: Sequence[int] = (1,),
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_p: float = 1.0,
    stop: Sequence[str] | None = None,
    chat_template: bool = True,
    prompts_per_batch: int = 4,
    seed: int = 0,
) -> PassAtK:
    """Sample ``samples`` completions of every prompt (``prompts_per_batch`` prompts per batch), score
    them with ``reward_fn`` and return pass@k for each ``k`` in ``ks``. Same seed, same result."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ConfigError(f"samples={samples!r} must be an integer >= 1 (completions per prompt)")
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= samples for k in ks):
        raise ConfigError(f"ks={list(ks)!r} must be integers from 1 to samples={samples}")
    if isinstance(prompts, str) or not prompts:
        raise ConfigError("prompts must be a non-empty list of prompts")
    if prompts_per_batch < 1:
        raise ConfigError(f"prompts_per_batch={prompts_per_batch!r} must be >= 1")
    passes: list[int] = []
    tokens = truncated = 0
    for start in range(0, len(prompts), prompts_per_batch):
        batch = list(prompts[start : start + prompts_per_batch])
        drawn = sample(
            policy, batch, n=samples, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
            stop=stop, seed=seed + start, chat_template=chat_template,
        )  # fmt: skip
        rewards = drawn_rewards(reward_fn, batch, drawn)
        for i in range(len(batch)):
            passes.append(sum(float(r) > 0 for r in rewards[i * samples : (i + 1) * samples]))
        tokens += int(drawn.completion_lengths.sum())
        truncated += sum(reason == "length" for reason in drawn.finish_reasons)
    total = samples * len(prompts)
    return PassAtK(
        samples=samples,
        passes=passes,
        pass_at={k: sum(pass_at_k(samples, c, k) for c in passes) / len(passes) for k in ks},
        completion_length=tokens / total,
        truncated_fraction=truncated / total,
    )
