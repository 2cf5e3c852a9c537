"""SFT: supervised fine-tuning of an ``LMPolicy`` on prompt/completion pairs (the warm-up before RL).

The loss is the negative log-likelihood of the completion tokens given the prompt, averaged over
every completion token of the batch (TRL's ``SFTTrainer`` on a prompt-completion dataset, with its
default ``completion_only_loss=True``):

    L(theta) = - (1 / N) sum_i sum_t log pi_theta(y_{i,t} | x_i, y_{i,<t}),   N = sum_i |y_i|

Each completion ends with the tokenizer's EOS token, so the model learns where to stop. One step
(:meth:`SFT._train_step`) takes ``batch_size`` pairs from a seeded shuffle (pass after pass over the
data), lays them out as the sampler does (prompts left-padded, completions right-padded), runs
``LMPolicy.token_logprobs``, backward, clips the gradient norm and steps AdamW.

Usage::

    from resonance_os.llm.sft import SFT, SFTConfig

    pairs = [("sort: three one two", "one two three"), {"prompt": "sort: nine four", "completion": "four nine"}]
    trainer = SFT(policy, pairs, SFTConfig(batch_size=16, learning_rate=1e-3, seed=0), log_dir="runs/sft")
    trainer.learn(200)                    # optimiser steps; callback(trainer, row) -> False stops
    trainer.save("runs/sft/ckpt")         # a policy checkpoint: LMPolicy.load or GRPO can start from it
    trainer = SFT.load("runs/sft/ckpt", policy=fresh_policy, pairs=pairs)
    trainer.learn(100, reset_num_timesteps=False)

The same policy wrapper, logger, checkpoint format and trainer surface as ``llm.grpo.GRPO``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from resonance_os.llm import training
from resonance_os.llm.errors import PromptTooLongError
from resonance_os.llm.policy import LMPolicy
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.contract import seeded_torch
from resonance_os.rl.errors import ConfigError

TRAINER_KIND = "SFT"


@dataclass
class SFTConfig(JsonConfig):
    """SFT hyperparameters. Round-trips through JSON (``to_json`` / ``from_json``).

    Attributes:
        batch_size: prompt/completion pairs per optimiser step. 8.
        learning_rate: AdamW step size on the trainable parameters. 1e-4.
        weight_decay: AdamW weight decay. 0.0.
        max_grad_norm: clip the global gradient norm; None = no clipping (the norm is still logged). 1.0.
        chat_template: wrap string prompts in the tokenizer's chat template (as ``GRPOConfig`` does,
            so a warm-up and the RL run that follows see the same prompt tokens). True.
        add_eos: end every completion with the tokenizer's EOS token (learn to stop). True.
        seed: seeds the order of the pairs and dropout; None draws one (stored in checkpoints). None.
    """

    config_name: ClassVar[str] = "SFT"

    batch_size: int = 8
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    max_grad_norm: float | None = 1.0
    chat_template: bool = True
    add_eos: bool = True
    seed: int | None = None

    def __post_init__(self) -> None:
        def fail(name: str, fix: str) -> ConfigError:
            return ConfigError(f"SFTConfig.{name}={getattr(self, name)!r}: {fix}")

        def is_num(value: Any) -> bool:
            return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise fail("batch_size", "must be an integer >= 1 (pairs per optimiser step)")
        if not is_num(self.learning_rate) or not self.learning_rate > 0:
            raise fail("learning_rate", "must be a number > 0 (LoRA: 1e-4 to 1e-3)")
        if not is_num(self.weight_decay) or self.weight_decay < 0:
            raise fail("weight_decay", "must be a number >= 0")
        if self.max_grad_norm is not None and (not is_num(self.max_grad_norm) or not self.max_grad_norm > 0):
            raise fail("max_grad_norm", "must be a number > 0, or None for no clipping")
        for name in ("chat_template", "add_eos"):
            if not isinstance(getattr(self, name), bool):
                raise fail(name, "must be true or false")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise fail("seed", "must be an integer or None")


def _as_pairs(pairs: Any) -> list[tuple[Any, str]]:
    """``(prompt, completion)`` tuples or ``{"prompt", "completion"}`` dicts -> a checked list of tuples."""
    if isinstance(pairs, (str, dict)) or not isinstance(pairs, Sequence) or not pairs:
        raise ConfigError(
            "pairs must be a non-empty list of (prompt, completion) tuples or {'prompt', 'completion'} dicts"
        )
    out = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, dict) and {"prompt", "completion"} <= set(pair):
            prompt, completion = pair["prompt"], pair["completion"]
        elif isinstance(pair, (tuple, list)) and len(pair) == 2:
            prompt, completion = pair
        else:
            raise ConfigError(
                f"pairs[{i}]={pair!r} must be a (prompt, completion) tuple or a dict with 'prompt' and "
                "'completion'"
            )
        if not isinstance(completion, str) or not completion.strip():
            raise ConfigError(
                f"pairs[{i}] has completion {completion!r}; completions must be non-empty strings"
            )
        out.append((prompt, completion))
    return out


class SFT(training.StepTrainer):
    """Supervised fine-tuning of an ``LMPolicy`` on prompt/completion pairs (completion tokens only).

    Follows the trainers' shared surface (``resonance_os.rl.contract``) as GRPO does:
    ``learn(steps, callback, progress_bar=False, reset_num_timesteps)``, ``history``,
    ``num_timesteps`` (optimiser steps), ``save`` / ``load``.

    Args:
        policy: the ``LMPolicy`` to train (LoRA or full); its trainable parameters get an AdamW.
        pairs: ``(prompt, completion)`` tuples or ``{"prompt", "completion"}`` dicts; a prompt is a
            string or a list of chat messages, a completion a non-empty string.
        config: an ``SFTConfig`` (or a dict of its fields); keyword ``overrides`` replace fields.
        log_dir: folder for ``metrics.jsonl`` (appended to). tensorboard: also write TensorBoard scalars.

    Raises ``PromptTooLongError`` when a prompt plus its completion exceeds the model's context.
    """

    algorithm: ClassVar[str] = "SFT"

    def __init__(
        self,
        policy: LMPolicy,
        pairs: Sequence[Any],
        config: SFTConfig | dict[str, Any] | None = None,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
        **overrides: Any,
    ) -> None:
        training.check_policy(policy)
        config = training.trainer_config(SFTConfig, config, overrides)
        self.config, self.policy = config, policy
        self.log_dir, self.tensorboard = log_dir, tensorboard
        self.pairs = _as_pairs(pairs)
        self._prompt_ids, self._completion_ids = self._tokenize(self.pairs)
        self.optimizer = torch.optim.AdamW(
            policy.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
        )
        self.num_timesteps = 0
        self.history: list[dict[str, Any]] = []

    def _tokenize(self, pairs: list[tuple[Any, str]]) -> tuple[list[list[int]], list[list[int]]]:
        """Prompt ids (chat template as configured) and completion ids (+ EOS) of ``pairs``."""
        tokenizer, context = self.policy.tokenizer, self.policy.context_length
        prompt_ids = self.policy.encode_prompts(
            [p for p, _ in pairs], chat_template=self.config.chat_template
        )
        eos = (
            [int(tokenizer.eos_token_id)]
            if self.config.add_eos and tokenizer.eos_token_id is not None
            else []
        )
        completion_ids = []
        for i, (_, completion) in enumerate(pairs):
            ids = list(tokenizer(completion, add_special_tokens=False)["input_ids"]) + eos
            if context is not None and len(prompt_ids[i]) + len(ids) > context:
                raise PromptTooLongError(
                    f"pair {i} has {len(prompt_ids[i])} prompt and {len(ids)} completion tokens: "
                    f"{len(prompt_ids[i]) + len(ids)} > the model's context of {context} tokens; shorten it"
                )
            completion_ids.append(ids)
        return prompt_ids, completion_ids

    def _stream_seed(self, step: int, stream: int) -> int:
        """A seed for (step, purpose): pair order per pass (0), dropout (1)."""
        return training.stream_seed(self.config.seed, step, stream)

    def _batch_indices(self, step: int) -> list[int]:
        """The pairs of ``step``: a seeded permutation per pass over the data, consumed in order."""
        n, per = len(self.pairs), self.config.batch_size
        out = []
        for k in range(step * per, (step + 1) * per):
            epoch, pos = divmod(k, n)
            order = torch.randperm(n, generator=torch.Generator().manual_seed(self._stream_seed(epoch, 0)))
            out.append(int(order[pos]))
        return out

    def _collate(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The training pairs ``indices`` as a batch (see :meth:`_layout`)."""
        return self._layout(
            [self._prompt_ids[i] for i in indices], [self._completion_ids[i] for i in indices]
        )

    def _layout(
        self, prompts: list[list[int]], completions: list[list[int]]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(input_ids, attention_mask, completion_mask): prompts left-padded, completions right-padded."""
        pad = int(self.policy.tokenizer.pad_token_id)
        width_p, width_c = max(map(len, prompts)), max(map(len, completions))
        ids, attention, completion_mask = [], [], []
        for p, c in zip(prompts, completions):
            left, right = width_p - len(p), width_c - len(c)
            ids.append([pad] * left + p + c + [pad] * right)
            attention.append([0] * left + [1] * (len(p) + len(c)) + [0] * right)
            completion_mask.append([1] * len(c) + [0] * right)
        device = self.policy.device
        return (
            torch.tensor(ids, device=device),
            torch.tensor(attention, device=device),
            torch.tensor(completion_mask, device=device),
        )

    def _train_step(self, step: int) -> dict[str, float]:
        cfg, policy = self.config, self.policy
        t_start = time.perf_counter()
        input_ids, attention_mask, mask = self._collate(self._batch_indices(step))
        was_training = policy.set_mode(True)
        with seeded_torch(self._stream_seed(step, 1)):
            logp = policy.token_logprobs(input_ids, attention_mask, mask)
            tokens = mask.sum()
            loss = -(logp * mask).sum() / tokens  # mean NLL over the batch's completion tokens
            grad_norm = training.optimizer_step(self.optimizer, loss, cfg.max_grad_norm)
        policy.set_mode(was_training)
        elapsed = time.perf_counter() - t_start
        n_tokens = int(tokens)
        return {
            "loss": float(loss.detach()),
            "grad_norm": float(grad_norm),
            "num_tokens": n_tokens,
            "epoch": (step + 1) * cfg.batch_size / len(self.pairs),
            "learning_rate": self.optimizer.param_groups[0]["lr"],
            "tokens_per_second": n_tokens / max(elapsed, 1e-9),
            "time_step": elapsed,
        }

    def evaluate(self, pairs: Sequence[Any] | None = None, batch_size: int | None = None) -> float:
        """The loss (mean NLL per completion token, no gradient, dropout off) on ``pairs`` (held-out
        pairs, in the same forms as training's; default the training pairs), in batches of ``batch_size``
        (default the config's)."""
        checked = self.pairs if pairs is None else _as_pairs(pairs)
        prompt_ids, completion_ids = (
            (self._prompt_ids, self._completion_ids) if pairs is None else self._tokenize(checked)
        )
        size = self.config.batch_size if batch_size is None else batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"batch_size={batch_size!r} must be an integer >= 1")
        total, tokens = 0.0, 0
        was_training = self.policy.set_mode(False)
        with torch.no_grad():
            for start in range(0, len(checked), size):
                batch = slice(start, start + size)
                input_ids, attention_mask, mask = self._layout(prompt_ids[batch], completion_ids[batch])
                total -= float((self.policy.token_logprobs(input_ids, attention_mask, mask) * mask).sum())
                tokens += int(mask.sum())
        self.policy.set_mode(was_training)
        return total / tokens

    def save(self, path: str | os.PathLike[str]) -> Path:
        """One atomic checkpoint folder: the policy's weights (``LMPolicy.save``), this config, the step
        count and the optimiser state. ``SFT.load`` resumes it; ``LMPolicy.load`` reads the policy alone
        (e.g. to start GRPO from the warmed-up weights)."""
        return training.save_trainer(
            self, path, {"trainer": TRAINER_KIND, "sft_config": self.config.to_dict()}
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        policy: LMPolicy,
        pairs: Sequence[Any],
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
    ) -> SFT:
        """Resume from a folder written by :meth:`save` into a fresh ``policy`` built the way the saved
        one was. Continue with ``learn(steps, reset_num_timesteps=False)``."""
        ckpt, config = training.open_trainer_checkpoint(path, policy, TRAINER_KIND, SFTConfig, "sft_config")
        trainer = cls(policy, pairs, config, log_dir=log_dir, tensorboard=tensorboard)
        training.restore_optimizer(trainer, ckpt, path)
        return trainer
