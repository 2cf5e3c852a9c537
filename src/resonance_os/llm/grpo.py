"""GRPO: the trainer that turns rewards on sampled completions into updates of an ``LMPolicy``.

One step (Shao et al. 2024, *DeepSeekMath*; the loss family of ``llm.losses``) reads top to bottom
in :meth:`GRPO._train_step`:

    1. generate   P prompts x G completions with ``llm.sampling`` (old log-probs come from sampling)
    2. score      every reward function on (prompts, completions); R = sum_k w_k r_k
    3. advantages ``group_advantages`` (group / batch / no std), optional zero-variance filtering,
                  reference log-probs (adapters disabled) when beta > 0
    4. train      K = ``num_iterations`` epochs over minibatches of whole groups:
                  ``token_logprobs`` -> ``policy_loss`` -> backward -> clip grad norm -> AdamW
    5. log        one row of metrics through ``rl``'s ``MetricsLogger`` (JSON Lines, progress bar)

Usage::

    from resonance_os.llm.grpo import GRPO, GRPOConfig

    def has_cat(prompts, completions):
        return [1.0 if "cat" in c.split() else 0.0 for c in completions]

    trainer = GRPO(policy, [(has_cat, 1.0), (short, 0.1)], prompts, GRPOConfig(group_size=8, seed=0),
                   log_dir="runs/grpo")
    trainer.learn(100)
    trainer.save("runs/grpo/ckpt")
    trainer = GRPO.load("runs/grpo/ckpt", policy=fresh_policy, reward_fn=..., prompts=...)
    trainer.learn(100, reset_num_timesteps=False)

Seeded: the prompts of step s, the sampling seed and the minibatch order are functions of
``(seed, s)`` only, so the same seed gives the same metrics, and a run resumed from a checkpoint
continues exactly as the uninterrupted one would. docs/llm_rl.md ("The trainer") lists the metrics.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from resonance_os.llm import training
from resonance_os.llm.errors import LLMError, PromptTooLongError
from resonance_os.llm.losses import (
    AGGREGATIONS,
    LOSS_TYPES,
    ROLLOUT_CORRECTIONS,
    SCALE_REWARDS,
    group_advantages,
    nonzero_variance_mask,
    policy_loss,
    rollout_correction,
)
from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.remote_sampler import RemoteSampler
from resonance_os.llm.sampling import Samples, concat_samples, sample_ids
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.errors import CheckpointError, ConfigError

RewardFn = Callable[[list[Any], list[str]], Sequence[float]]
TRAINER_KIND = "GRPO"
LOW_PRECISION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
"""``GRPOConfig.rollout_dtype`` and ``mixed_precision`` values and the dtypes they name."""
ADAPTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ROLLOUT_API_KEY_ENV = "RESONANCE_ROLLOUT_API_KEY"
"""Where ``GRPOConfig.rollout_server``'s API key is read from (kept out of configs and checkpoints)."""


class RewardError(LLMError, ValueError):
    """A reward function returned the wrong number of rewards, a non-number, NaN or inf; names the function."""

    http_status = 422


# ---------------------------------------------------------------------------------------------- config


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class GRPOConfig(JsonConfig):
    """GRPO hyperparameters. Round-trips through JSON (``to_json`` / ``from_json``).

    Attributes:
        group_size: G, completions sampled per prompt (>= 2: advantages compare within a group). 8.
        prompts_per_step: prompts per step; a step trains on ``prompts_per_step * group_size``
            completions. Prompts are visited in a seeded shuffled order, epoch after epoch. 4.
        max_new_tokens: completion budget per sample. 64.
        temperature: sampling temperature in (0, 2] (the log-probs of the loss use the same one). 1.0.
        top_p: nucleus sampling threshold in (0, 1]. 1.0.
        stop: stop strings (a completion ends once its text contains one). [].
        chat_template: wrap string prompts in the tokenizer's chat template. True.
        learning_rate: AdamW step size on the trainable parameters. 1e-5.
        weight_decay: AdamW weight decay (TRL uses 0). 0.0.
        num_iterations: K, epochs over each step's completions (1 = on-policy, as TRL's default). 1.
        minibatch_size: completions per optimiser step, a multiple of ``group_size`` (minibatches hold
            whole groups); None = the whole step in one minibatch. None.
        loss_type: one of ``llm.losses.LOSS_TYPES``. "dapo" (TRL's default).
        epsilon, epsilon_high: lower and upper clip (``epsilon_high`` None = ``epsilon``; for "cispo"
            the cap on the weight, default 5.0). 0.2, None.
        beta: k3 KL coefficient to the reference policy (adapters disabled, or the frozen copy). 0.0.
        aggregation: override the loss type's aggregation ("token", "sequence", "prompt",
            "constant"); None = the loss type's own. None.
        scale_rewards: "group", "batch" or "none" (see ``group_advantages``). "group".
        filter_zero_variance: drop groups whose rewards are all equal before the update (ScaleRL). False.
        retire_pass_rate: ScaleRL's no-positive-resampling: a prompt whose group reached this pass rate
            (share of completions with reward > 0) is not drawn again in later passes over the prompts
            (0.9 in ScaleRL; passes never shrink below one step's prompts). None = off.
        dynamic_sampling: DAPO's dynamic sampling: groups whose rewards are all equal are dropped and
            more prompts sampled (up to ``max_sampling_rounds`` generations per step) until
            ``prompts_per_step`` groups with differing rewards are collected. False.
        max_sampling_rounds: generations per step at most with ``dynamic_sampling``. 3.
        overlong_filter: completions cut at ``max_new_tokens`` (no EOS or stop string) get advantage
            0: they are not judged on an answer they could not finish (DAPO's overlong filtering,
            NousCoder). False.
        overlong_buffer: DAPO's soft overlong punishment L_cache: a completion longer than
            ``max_new_tokens - overlong_buffer`` tokens loses ``overlong_penalty`` times the share of the
            buffer it used (all of it at ``max_new_tokens``), added to its reward. 0 = off.
        overlong_penalty: the punishment at full length. 1.0.
        max_grad_norm: clip the global gradient norm; None = no clipping (the norm is still logged). 1.0.
        rollout_dtype: sample from a copy of the policy in this dtype, ``"bfloat16"`` or ``"float16"``
            (``LMPolicy.rollout_precision``: 1.7-1.9x faster sampling on SmolLM2 on a CPU with AMX), as
            vLLM samples for verl and TRL; the trainer then computes pi_old with the policy itself and
            weighs the loss by ``rollout_correction``. None = sample from the policy (exact). None.
        mixed_precision: ``"bfloat16"`` runs the update's forward passes under ``torch.autocast`` in
            bf16 (``LMPolicy.autocast``: float32 master weights, gradients and AdamW; the LM head in
            float32 with ``PolicyConfig.fp32_head``), as TRL's ``bf16=True``; None = float32. None.
        rollout_correction: how the loss corrects for a sampler whose log-probs are not the update's
            (a rollout copy, or float32 sampling for a mixed-precision update): ``"token_truncate"``,
            ``"token_mask"``, ``"sequence_truncate"``, ``"sequence_mask"`` (TRL's
            ``vllm_importance_sampling_mode`` and default) or ``"none"``. "sequence_mask".
        rollout_correction_min, rollout_correction_max: the bounds of that correction (None = no
            bound; TRL's ``vllm_importance_sampling_clip_min/max``). None, 3.0.
        rollout_server: sample on a vLLM server (or ``resonance serve``) at this OpenAI base URL, e.g.
            ``"http://gpu-box:8000/v1"`` (``llm.remote_sampler``): its API key from
            ``$RESONANCE_ROLLOUT_API_KEY``; the LoRA adapter is written to ``rollout_folder`` and loaded
            there as ``rollout_adapter`` before the first step and after each update, and its log-probs
            are corrected for as ``rollout_dtype``'s are. None = sample here. None.
        rollout_adapter: the name the adapter is served under on the rollout server. "grpo-policy".
        rollout_folder: a folder this process writes the adapter to and the server reads (needed
            with ``rollout_server``). None.
        rollout_server_folder: that folder as the server sees it (None: the same path). None.
        rollout_server_timeout: seconds a request to the rollout server may take. 600.
        seed: seeds prompt order, sampling, minibatch order and dropout, through local generators and
            a forked RNG (torch's global RNG is left as it was); None draws one (stored, so a
            checkpoint resumes with it). None.
    """

    config_name: ClassVar[str] = "GRPO"

    group_size: int = 8
    prompts_per_step: int = 4
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = field(default_factory=list)
    chat_template: bool = True
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    num_iterations: int = 1
    minibatch_size: int | None = None
    loss_type: str = "dapo"
    epsilon: float = 0.2
    epsilon_high: float | None = None
    beta: float = 0.0
    aggregation: str | None = None
    scale_rewards: str | None = "group"
    filter_zero_variance: bool = False
    retire_pass_rate: float | None = None
    dynamic_sampling: bool = False
    max_sampling_rounds: int = 3
    overlong_filter: bool = False
    overlong_buffer: int = 0
    overlong_penalty: float = 1.0
    max_grad_norm: float | None = 1.0
    rollout_dtype: str | None = None
    mixed_precision: str | None = None
    rollout_correction: str = "sequence_mask"
    rollout_correction_min: float | None = None
    rollout_correction_max: float | None = 3.0
    rollout_server: str | None = None
    rollout_adapter: str = "grpo-policy"
    rollout_folder: str | None = None
    rollout_server_folder: str | None = None
    rollout_server_timeout: float = 600.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        elif isinstance(self.stop, tuple):
            self.stop = list(self.stop)
        self._check_rollouts()
        self._check_update()
        self._check_precision()
        self._check_rollout_server()

    def _invalid(self, name: str, fix: str) -> ConfigError:
        return ConfigError(f"GRPOConfig.{name}={getattr(self, name)!r}: {fix}")

    def _check_rollouts(self) -> None:
        """Sampling, groups, filters and the seed."""
        if not _is_int(self.group_size) or self.group_size < 2:
            raise self._invalid(
                "group_size", "must be an integer >= 2 (advantages compare completions of a prompt)"
            )
        for name in ("prompts_per_step", "max_new_tokens", "num_iterations"):
            if not _is_int(getattr(self, name)) or getattr(self, name) < 1:
                raise self._invalid(name, "must be an integer >= 1")
        if not _is_num(self.temperature) or not 0 < self.temperature <= 2:
            raise self._invalid(
                "temperature", "must be a number in (0, 2] (training needs a sampling distribution; 1.0)"
            )
        if not _is_num(self.top_p) or not 0 < self.top_p <= 1:
            raise self._invalid("top_p", "must be in (0, 1] (1.0 = no nucleus cut)")
        if not isinstance(self.stop, list) or any(not isinstance(s, str) or not s for s in self.stop):
            raise self._invalid("stop", "must be a list of non-empty strings")
        if not isinstance(self.chat_template, bool):
            raise self._invalid("chat_template", "must be true or false")
        if self.retire_pass_rate is not None and (
            not _is_num(self.retire_pass_rate) or not 0 < self.retire_pass_rate <= 1
        ):
            raise self._invalid(
                "retire_pass_rate", "must be in (0, 1] (ScaleRL: 0.9) or None for no retirement"
            )
        for name in ("filter_zero_variance", "dynamic_sampling", "overlong_filter"):
            if not isinstance(getattr(self, name), bool):
                raise self._invalid(name, "must be true or false")
        if not _is_int(self.max_sampling_rounds) or self.max_sampling_rounds < 1:
            raise self._invalid("max_sampling_rounds", "must be an integer >= 1 (generations per step)")
        if not _is_int(self.overlong_buffer) or not 0 <= self.overlong_buffer < self.max_new_tokens:
            raise self._invalid(
                "overlong_buffer",
                f"must be an integer from 0 (off) to max_new_tokens - 1 = {self.max_new_tokens - 1}",
            )
        if not _is_num(self.overlong_penalty) or self.overlong_penalty < 0:
            raise self._invalid(
                "overlong_penalty", "must be a number >= 0 (the punishment at full length; 1.0)"
            )
        if self.seed is not None and not _is_int(self.seed):
            raise self._invalid("seed", "must be an integer or None")

    def _check_update(self) -> None:
        """The optimiser, the minibatches and the loss."""
        if not _is_num(self.learning_rate) or not self.learning_rate > 0:
            raise self._invalid("learning_rate", "must be a number > 0 (LoRA: 1e-5 to 1e-4)")
        if not _is_num(self.weight_decay) or self.weight_decay < 0:
            raise self._invalid("weight_decay", "must be a number >= 0")
        if self.minibatch_size is not None and (
            not _is_int(self.minibatch_size)
            or self.minibatch_size < self.group_size
            or self.minibatch_size % self.group_size
        ):
            raise self._invalid(
                "minibatch_size",
                f"must be a positive multiple of group_size={self.group_size} (minibatches hold whole "
                "groups), or None for the whole step",
            )
        if self.loss_type not in LOSS_TYPES:
            raise self._invalid("loss_type", f"must be one of {', '.join(LOSS_TYPES)}")
        if self.aggregation is not None and self.aggregation not in AGGREGATIONS:
            raise self._invalid("aggregation", f"must be one of {', '.join(AGGREGATIONS)} or None")
        if not _is_num(self.epsilon) or not 0 <= self.epsilon < 1:
            raise self._invalid("epsilon", "must be in [0, 1) (the clip range 1 - epsilon; 0.2)")
        if self.epsilon_high is not None and (not _is_num(self.epsilon_high) or not self.epsilon_high > 0):
            raise self._invalid("epsilon_high", "must be > 0 or None (DAPO: 0.28; CISPO's cap: 5.0)")
        if not _is_num(self.beta) or self.beta < 0:
            raise self._invalid("beta", "must be a number >= 0 (the KL coefficient; 0 = no reference pass)")
        if self.scale_rewards is not None and self.scale_rewards not in SCALE_REWARDS:
            raise self._invalid("scale_rewards", f"must be one of {', '.join(SCALE_REWARDS)} or None")
        if self.max_grad_norm is not None and (not _is_num(self.max_grad_norm) or not self.max_grad_norm > 0):
            raise self._invalid("max_grad_norm", "must be a number > 0, or None for no clipping")

    def _check_precision(self) -> None:
        """Low-precision rollouts and updates, and the rollout correction."""
        if self.rollout_dtype is not None and self.rollout_dtype not in LOW_PRECISION_DTYPES:
            raise self._invalid(
                "rollout_dtype",
                f"must be one of {', '.join(LOW_PRECISION_DTYPES)} or None (sample from the policy)",
            )
        if self.mixed_precision not in (None, "bfloat16"):
            raise self._invalid("mixed_precision", "must be 'bfloat16' or None (float32)")
        if self.rollout_correction not in ROLLOUT_CORRECTIONS:
            raise self._invalid("rollout_correction", f"must be one of {', '.join(ROLLOUT_CORRECTIONS)}")
        for name in ("rollout_correction_min", "rollout_correction_max"):
            if getattr(self, name) is not None and (
                not _is_num(getattr(self, name)) or getattr(self, name) < 0
            ):
                raise self._invalid(name, "must be a number >= 0, or None for no bound")
        if (
            self.rollout_correction_min is not None
            and self.rollout_correction_max is not None
            and self.rollout_correction_min > self.rollout_correction_max
        ):
            raise self._invalid(
                "rollout_correction_min",
                f"must be at most rollout_correction_max={self.rollout_correction_max}",
            )

    def _check_rollout_server(self) -> None:
        """Sampling on a vLLM server."""
        if self.rollout_server is None:
            return
        if not isinstance(self.rollout_server, str) or not self.rollout_server.startswith(
            ("http://", "https://")
        ):
            raise self._invalid(
                "rollout_server", "must be the server's OpenAI base URL, e.g. http://host:8000/v1"
            )
        if self.rollout_dtype is not None:
            raise self._invalid(
                "rollout_dtype", "must be None with rollout_server (the server's precision is its own)"
            )
        if not isinstance(self.rollout_folder, str) or not self.rollout_folder:
            raise self._invalid(
                "rollout_folder",
                "must be a folder this process writes the adapter to and the rollout server reads",
            )
        if not isinstance(self.rollout_adapter, str) or not ADAPTER_NAME.fullmatch(self.rollout_adapter):
            raise self._invalid(
                "rollout_adapter", "must be 1-64 letters, digits, '.', '_' or '-', e.g. grpo-policy"
            )
        if self.rollout_server_folder is not None and not isinstance(self.rollout_server_folder, str):
            raise self._invalid("rollout_server_folder", "must be a path, or None for rollout_folder's")
        if not _is_num(self.rollout_server_timeout) or not self.rollout_server_timeout > 0:
            raise self._invalid("rollout_server_timeout", "must be a number of seconds > 0")


# ---------------------------------------------------------------------------------------------- rollouts

ROLLOUT_METRICS = ("rollout_kl", "rollout_weight_mean", "rollout_weight_zero")
"""Metrics of a step whose sampler's log-probs are not the update's (``GRPOConfig.rollout_dtype``,
``rollout_server`` or ``mixed_precision``)."""


@dataclass
class _Rollouts:
    """One step's completions and rewards (``GRPO._rollouts``)."""

    indices: list[int]
    samples: Samples
    rewards: torch.Tensor
    per_function: dict[str, torch.Tensor]
    on_policy_rows: int  # the step's own prompts: what the reward metrics describe
    rounds: int  # generations (dynamic sampling's rounds)
    seconds: list[float]  # generating, scoring


def _k3(log_ratio: torch.Tensor) -> torch.Tensor:
    """The k3 estimator ``exp(x) - 1 - x`` of a KL per token, from the log-ratio x of the two policies."""
    return torch.exp(log_ratio) - 1 - log_ratio


def _rollout_metrics(
    old_logp: torch.Tensor, rollout_logp: torch.Tensor, tokens: torch.Tensor, weights: torch.Tensor | None
) -> dict[str, torch.Tensor]:
    """How far the sampler's distribution is from the policy's: k3 KL(pi_rollout || pi_old) per token,
    and the mean and zero share of the correction's weights (per token, or per completion)."""
    out = {"rollout_kl": _k3((old_logp - rollout_logp)[tokens]).mean()}
    if weights is not None:
        per = weights[tokens] if weights.shape == tokens.shape else weights.flatten()
        out["rollout_weight_mean"] = per.mean()
        out["rollout_weight_zero"] = (per == 0).float().mean()
    return out


# ---------------------------------------------------------------------------------------------- rewards


def _reward_functions(reward_fn: Any) -> list[tuple[str, RewardFn, float]]:
    """``reward_fn`` (a callable, or a list of callables and ``(callable, weight)`` pairs) -> named, weighted."""
    entries = [reward_fn] if callable(reward_fn) else reward_fn
    if not isinstance(entries, (list, tuple)) or not entries:
        raise ConfigError(
            "reward_fn must be a callable (prompts, completions) -> list[float], or a non-empty list of "
            "callables and (callable, weight) pairs"
        )
    out: list[tuple[str, RewardFn, float]] = []
    for i, entry in enumerate(entries):
        fn, weight = (
            (entry, 1.0) if callable(entry) else (entry if isinstance(entry, tuple) else (None, None))
        )
        if not callable(fn) or isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise ConfigError(f"reward_fn[{i}]={entry!r} must be a callable or a (callable, weight) pair")
        if not math.isfinite(float(weight)):
            raise ConfigError(f"reward_fn[{i}] has weight {weight!r}; weights must be finite numbers")
        name = getattr(fn, "__name__", "")
        if not name.isidentifier() or name in {n for n, _, _ in out}:
            name = f"fn{i}"
        out.append((name, fn, float(weight)))
    return out


def _call_reward(name: str, fn: RewardFn, prompts: list[Any], completions: list[str]) -> torch.Tensor:
    """Run one reward function and check it returned one finite number per completion."""
    returned = fn(prompts, completions)  # an exception inside the function propagates as it is
    try:
        values = list(returned)
    except TypeError as exc:
        raise RewardError(
            f"reward function {name!r} returned {type(returned).__name__}; return a list of floats, one "
            "per completion"
        ) from exc
    if len(values) != len(completions):
        raise RewardError(
            f"reward function {name!r} returned {len(values)} rewards for {len(completions)} completions; "
            "return one float per completion, in order"
        )
    out = []
    for i, value in enumerate(values):
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if not isinstance(value, numbers.Real):
            raise RewardError(
                f"reward function {name!r} returned {value!r} ({type(value).__name__}) for completion {i}; "
                "rewards must be numbers"
            )
        if not math.isfinite(float(value)):
            raise RewardError(
                f"reward function {name!r} returned {float(value)} for completion {i}: rewards must be finite "
                f"(completion: {completions[i][:80]!r})"
            )
        out.append(float(value))
    return torch.tensor(out, dtype=torch.float32)


def soft_overlong_punishment(
    lengths: torch.Tensor, max_new_tokens: int, buffer: int, penalty: float = 1.0
) -> torch.Tensor:
    """DAPO's soft overlong punishment (Yu et al. 2025, eq. 13), added to the reward: 0 up to
    ``max_new_tokens - buffer`` tokens, then falling linearly to ``-penalty`` at ``max_new_tokens``."""
    start = max_new_tokens - buffer
    return -penalty * ((lengths.float() - start) / buffer).clamp(min=0.0, max=1.0)


def _varied_groups(rewards: torch.Tensor, group_size: int) -> int:
    """How many groups of ``rewards`` have differing rewards (a gradient to give)."""
    return int(nonzero_variance_mask(rewards, group_size).sum()) // group_size


# ---------------------------------------------------------------------------------------------- trainer


class GRPO(training.StepTrainer):
    """Group Relative Policy Optimisation of an ``LMPolicy`` on plain-callable rewards.

    Follows the trainers' shared surface (``resonance_os.rl.contract``) as PPO and SAC do:
    ``learn(steps, callback, progress_bar=False, reset_num_timesteps)``, ``history``,
    ``num_timesteps`` (optimiser steps), ``num_timesteps``/``last_metrics`` in checkpoints.

    Args:
        policy: the ``LMPolicy`` to train (LoRA or full); its trainable parameters get an AdamW.
        reward_fn: ``(prompts, completions) -> list[float]``, or a list of such callables and
            ``(callable, weight)`` pairs, summed with their weights. ``prompts`` holds each
            completion's prompt (repeated G times), ``completions`` the decoded texts.
        prompts: the training prompts (strings, or chat message lists).
        config: a ``GRPOConfig`` (or a dict of its fields); keyword ``overrides`` replace fields.
        log_dir: folder for ``metrics.jsonl`` (appended to, so a resumed run continues the file).
        tensorboard: also write TensorBoard scalars.
    """

    algorithm: ClassVar[str] = "GRPO"

    def __init__(
        self,
        policy: LMPolicy,
        reward_fn: RewardFn | Sequence[RewardFn | tuple[RewardFn, float]],
        prompts: Sequence[Any],
        config: GRPOConfig | dict[str, Any] | None = None,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
        **overrides: Any,
    ) -> None:
        training.check_policy(policy)
        config = training.trainer_config(GRPOConfig, config, overrides)
        self.config = config
        self.policy = policy
        self.reward_functions = _reward_functions(reward_fn)
        self.log_dir, self.tensorboard = log_dir, tensorboard

        if isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
            raise ConfigError("prompts must be a non-empty list of prompts (strings or chat message lists)")
        self.prompts = list(prompts)
        self._prompt_ids = policy.encode_prompts(self.prompts, chat_template=config.chat_template)
        context = policy.context_length
        for i, ids in enumerate(self._prompt_ids):
            if context is not None and len(ids) + config.max_new_tokens > context:
                raise PromptTooLongError(
                    f"prompt {i} has {len(ids)} tokens and max_new_tokens={config.max_new_tokens}: "
                    f"{len(ids) + config.max_new_tokens} > the model's context of {context} tokens; "
                    "shorten the prompt or lower max_new_tokens"
                )

        self.optimizer = torch.optim.AdamW(
            policy.trainable_parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
        )
        self.num_timesteps = 0  # optimiser steps of GRPO done (one per call of _train_step)
        self.history: list[dict[str, Any]] = []
        self.retired: set[int] = set()
        """Prompts (indices into ``prompts``) retired by ``retire_pass_rate``."""
        self._schedule: list[int] = []  # prompt order, one seeded pass after another, built as needed
        self._passes = 0
        self.rollout_server: RemoteSampler | None = None
        """The vLLM-compatible server completions are sampled on (``GRPOConfig.rollout_server``)."""
        if config.rollout_server is not None:
            self.rollout_server = self._connect_rollout_server()

    def _connect_rollout_server(self) -> RemoteSampler:
        """Check the rollout server, load the policy's adapter on it and compare its log-probs with the
        policy's on the first prompt (``RemoteSampler.check_logprobs``)."""
        cfg = self.config
        server = RemoteSampler(
            cfg.rollout_server, cfg.rollout_adapter, cfg.rollout_folder, server_folder=cfg.rollout_server_folder,
            api_key=os.environ.get(ROLLOUT_API_KEY_ENV) or None, timeout=cfg.rollout_server_timeout,
        )  # fmt: skip
        try:
            server.connect(self.policy)
            server.sync(self.policy, self.num_timesteps)
            server.check_logprobs(self.policy, self._prompt_ids[0], cfg.temperature)
        except BaseException:
            server.close()
            raise
        return server

    @property
    def rollout_dtype(self) -> torch.dtype | None:
        """The dtype completions are sampled in when it is not the policy's own (``GRPOConfig.rollout_dtype``)."""
        dtype = LOW_PRECISION_DTYPES.get(self.config.rollout_dtype) if self.config.rollout_dtype else None
        return None if dtype == next(self.policy.base_model.parameters()).dtype else dtype

    # ------------------------------------------------------------------------------ seeded streams
    def _stream_seed(self, step: int, stream: int) -> int:
        """A seed for (step, purpose): sampling (0), minibatch order (1), dropout (2), prompt order (3),
        dynamic sampling's extra prompts (10 + round) and their sampling (20 + round)."""
        return training.stream_seed(self.config.seed, step, stream)

    def _prompt_indices(self, step: int) -> list[int]:
        """The prompts of ``step``: a seeded permutation per pass over the prompts, consumed in order. A
        pass is fixed when first needed and leaves out the prompts retired by then (``retire_pass_rate``),
        unless fewer than one step's prompts would remain."""
        per = self.config.prompts_per_step
        while len(self._schedule) < (step + 1) * per:
            active = [i for i in range(len(self.prompts)) if i not in self.retired]
            if len(active) < per:
                active = list(range(len(self.prompts)))
            seed = self._stream_seed(self._passes, 3)
            order = torch.randperm(len(active), generator=torch.Generator().manual_seed(seed))
            self._schedule.extend(active[int(k)] for k in order)
            self._passes += 1
        return self._schedule[step * per : (step + 1) * per]

    def _extra_prompt_indices(self, step: int, sampling_round: int) -> list[int]:
        """Dynamic sampling's prompts for extra round ``sampling_round`` of ``step``: a seeded draw."""
        order = torch.randperm(
            len(self.prompts),
            generator=torch.Generator().manual_seed(self._stream_seed(step, 10 + sampling_round)),
        )
        return order[: self.config.prompts_per_step].tolist()

    def _generate(self, indices: list[int], seed: int, policy: LMPolicy | None = None) -> Samples:
        """G completions of each prompt in ``indices`` (``policy``: an inference copy instead of the
        trained policy)."""
        cfg = self.config
        if self.rollout_server is not None:  # on the server, with the weights of the last update
            if self.rollout_server.version != self.num_timesteps:
                self.rollout_server.sync(self.policy, self.num_timesteps)
            return self.rollout_server.sample(
                [self._prompt_ids[i] for i in indices], n=cfg.group_size, max_new_tokens=cfg.max_new_tokens,
                temperature=cfg.temperature, top_p=cfg.top_p, stop=cfg.stop, seed=seed, policy=self.policy,
            )  # fmt: skip
        return sample_ids(
            policy or self.policy, [self._prompt_ids[i] for i in indices], n=cfg.group_size,
            max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p, stop=cfg.stop,
            seed=seed, dtype=self.rollout_dtype,
        )  # fmt: skip

    def _score(self, indices: list[int], samples: Samples) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Every reward function's scores and the weighted sum R (plus DAPO's soft overlong punishment
        when ``overlong_buffer`` > 0)."""
        cfg = self.config
        prompts = [self.prompts[indices[k]] for k in samples.prompt_index]
        per_function: dict[str, torch.Tensor] = {}
        rewards = torch.zeros(len(samples.texts))
        for name, fn, weight in self.reward_functions:
            per_function[name] = _call_reward(name, fn, prompts, list(samples.texts))
            rewards += weight * per_function[name]
        if cfg.overlong_buffer:
            per_function["overlong"] = soft_overlong_punishment(
                samples.completion_lengths, cfg.max_new_tokens, cfg.overlong_buffer, cfg.overlong_penalty
            )
            rewards += per_function["overlong"]
        return rewards, per_function

    def _generate_and_score(
        self, indices: list[int], seed: int
    ) -> tuple[Samples, torch.Tensor, dict[str, torch.Tensor], list[float]]:
        """``_generate`` then ``_score``, and the seconds spent generating and scoring."""
        t0 = time.perf_counter()
        samples = self._generate(indices, seed)
        t1 = time.perf_counter()
        rewards, per_function = self._score(indices, samples)
        return samples, rewards, per_function, [t1 - t0, time.perf_counter() - t1]

    # ------------------------------------------------------------------------------ learning
    def _train_step(self, step: int) -> dict[str, float]:
        cfg, G = self.config, self.config.group_size
        t_start = time.perf_counter()

        # -- 1-2. generate P prompts x G completions (the sampling log-probs are pi_old) and score them
        rollouts = self._rollouts(step)
        samples, rewards = rollouts.samples, rollouts.rewards
        if cfg.retire_pass_rate is not None:  # ScaleRL: solved prompts leave later passes
            solved = (rewards > 0).float().view(-1, G).mean(dim=1) >= cfg.retire_pass_rate
            self.retired.update(i for i, done in zip(rollouts.indices, solved.tolist()) if done)

        # -- 3. the groups to train on, advantages (overlong filter), reference log-probs, pi_old
        kept_groups = self._kept_groups(rewards)
        truncated = torch.tensor([reason == "length" for reason in samples.finish_reasons])
        advantages = group_advantages(rewards, G, cfg.scale_rewards)
        if cfg.overlong_filter:
            advantages = advantages.masked_fill(truncated, 0.0)
        ref_logp = None
        if cfg.beta > 0 and len(kept_groups):
            ref_logp = self._kept_logprobs(samples, kept_groups, self.policy.reference())
        old_logp = self._old_logprobs(samples, kept_groups)
        t_reference = time.perf_counter()

        # -- 4. train: K epochs over minibatches of whole groups
        means = self._update(
            step, samples, kept_groups, advantages.to(self.policy.device), old_logp, ref_logp
        )
        t_trained = time.perf_counter()

        # -- 5. metrics of the step
        t_generated = t_start + rollouts.seconds[0]
        t_scored = t_generated + rollouts.seconds[1]
        seconds = {
            "time_generate": t_generated - t_start,
            "time_score": t_scored - t_generated,
            "time_reference": t_reference - t_scored,
            "time_train": t_trained - t_reference,
            "time_step": t_trained - t_start,
        }
        return self._metrics_row(rollouts, len(kept_groups), means, old_logp, truncated, seconds)

    def _rollouts(self, step: int) -> _Rollouts:
        """Generate and score ``step``'s prompts; with DAPO's dynamic sampling, more rounds of prompts
        until ``prompts_per_step`` groups have differing rewards (or ``max_sampling_rounds``)."""
        cfg = self.config
        indices = self._prompt_indices(step)
        samples, rewards, per_function, times = self._generate_and_score(indices, self._stream_seed(step, 0))
        on_policy_rows = len(rewards)  # the step's own prompts: what the reward metrics describe
        rounds = 1
        if cfg.dynamic_sampling:
            parts, reward_parts, function_parts = [samples], [rewards], [per_function]
            while rounds < cfg.max_sampling_rounds and _varied_groups(
                torch.cat(reward_parts), cfg.group_size
            ) < len(indices):
                more = self._extra_prompt_indices(step, rounds)
                part, part_rewards, part_functions, part_times = self._generate_and_score(
                    more, self._stream_seed(step, 20 + rounds)
                )
                indices += more
                parts.append(part), reward_parts.append(part_rewards), function_parts.append(part_functions)
                times = [a + b for a, b in zip(times, part_times)]
                rounds += 1
            samples = concat_samples(parts, int(self.policy.tokenizer.pad_token_id))
            rewards = torch.cat(reward_parts)
            per_function = {name: torch.cat([f[name] for f in function_parts]) for name in per_function}
        return _Rollouts(indices, samples, rewards, per_function, on_policy_rows, rounds, times)

    def _kept_groups(self, rewards: torch.Tensor) -> torch.Tensor:
        """Row indices of the groups to train on, one group per line: all of them, those with differing
        rewards (``filter_zero_variance``), or the first ``prompts_per_step`` such (dynamic sampling)."""
        cfg, G = self.config, self.config.group_size
        if cfg.dynamic_sampling:  # the first P groups with differing rewards
            varied = nonzero_variance_mask(rewards, G).view(-1, G)[:, 0].nonzero().flatten()
            keep = torch.zeros(len(rewards), dtype=torch.bool)
            for g in varied[: cfg.prompts_per_step].tolist():
                keep[g * G : (g + 1) * G] = True
        elif cfg.filter_zero_variance:
            keep = nonzero_variance_mask(rewards, G)
        else:
            keep = torch.ones(len(rewards), dtype=torch.bool)
        return keep.nonzero().flatten().view(-1, G)

    def _kept_logprobs(
        self, samples: Samples, kept_groups: torch.Tensor, within: AbstractContextManager[Any]
    ) -> torch.Tensor:
        """Log-probs of the kept groups' tokens without gradients, computed ``within`` a context (the
        reference policy, or the policy itself); 0 on the groups left out."""
        policy = self.policy
        out = torch.zeros_like(samples.logprobs)
        rows = kept_groups.flatten().to(policy.device)
        with torch.no_grad(), within, policy.autocast(self._autocast_dtype):
            out[rows] = policy.token_logprobs(
                samples.input_ids[rows], samples.attention_mask[rows], samples.completion_mask[rows],
                temperature=self.config.temperature, group_size=self.config.group_size,
            )  # fmt: skip
        return out

    @property
    def _autocast_dtype(self) -> torch.dtype | None:
        """The dtype of the update's forward passes under ``mixed_precision`` (None: float32)."""
        return LOW_PRECISION_DTYPES[self.config.mixed_precision] if self.config.mixed_precision else None

    @property
    def _sampler_differs(self) -> bool:
        """Whether the sampler's log-probs are not the update's: completions from a rollout copy (bf16)
        or a rollout server, or an update in mixed precision. Then pi_old is the update's own, and the
        sampler's weigh the loss (``rollout_correction``)."""
        return (
            self.rollout_dtype is not None
            or self.rollout_server is not None
            or self.config.mixed_precision is not None
        )

    def _groups_per_minibatch(self, kept: int) -> int:
        """Groups per optimiser step: ``minibatch_size / group_size``, or all ``kept`` groups."""
        return (
            kept
            if self.config.minibatch_size is None
            else self.config.minibatch_size // self.config.group_size
        )

    def _single_update(self, kept: int) -> bool:
        """One optimiser step on the step's completions (one epoch, one minibatch)."""
        return self.config.num_iterations == 1 and self._groups_per_minibatch(kept) >= kept

    def _old_logprobs(self, samples: Samples, kept_groups: torch.Tensor) -> torch.Tensor:
        """pi_old: the sampler's log-probs; when the sampler differs (``_sampler_differs``), the
        policy's own, computed before the first of several updates (a single update reads them off its
        own forward instead, ``logp.detach()``, as TRL does on-policy)."""
        kept = len(kept_groups)
        if self._sampler_differs and not self._single_update(kept) and kept:
            return self._kept_logprobs(samples, kept_groups, nullcontext())
        return samples.logprobs

    def _update(
        self,
        step: int,
        samples: Samples,
        kept_groups: torch.Tensor,
        advantages: torch.Tensor,
        old_logp: torch.Tensor,
        ref_logp: torch.Tensor | None,
    ) -> dict[str, float]:
        """K = ``num_iterations`` epochs over seeded minibatches of whole kept groups, one optimiser step
        each; returns each update metric's mean over the steps (empty when no group is kept)."""
        cfg, policy = self.config, self.policy
        sums: dict[str, float] = {}
        updates = 0
        groups_per_batch = self._groups_per_minibatch(len(kept_groups))
        on_policy_old = self._sampler_differs and self._single_update(len(kept_groups))
        order_gen = torch.Generator().manual_seed(self._stream_seed(step, 1))
        was_training = policy.set_mode(True)  # skipped when no dropout could change the forward
        with _seeded_rng(self._stream_seed(step, 2), policy.device):
            for _epoch in range(cfg.num_iterations):
                if not len(kept_groups):
                    break
                order = torch.randperm(len(kept_groups), generator=order_gen)
                for start in range(0, len(kept_groups), groups_per_batch):
                    rows = kept_groups[order[start : start + groups_per_batch]].flatten().to(policy.device)
                    values = self._minibatch_update(
                        samples, rows, advantages, old_logp, ref_logp, on_policy_old
                    )
                    for key, value in values.items():
                        sums[key] = sums.get(key, 0.0) + float(value.detach())
                    updates += 1
        policy.set_mode(was_training)
        return {key: total / updates for key, total in sums.items()}

    def _minibatch_update(
        self,
        samples: Samples,
        rows: torch.Tensor,
        advantages: torch.Tensor,
        old_logp: torch.Tensor,
        ref_logp: torch.Tensor | None,
        on_policy_old: bool,
    ) -> dict[str, torch.Tensor]:
        """``token_logprobs`` -> ``policy_loss`` -> backward -> clip grad norm -> AdamW on the completions
        ``rows``; returns the update's metrics (``on_policy_old``: pi_old is this forward's, detached)."""
        cfg, mask = self.config, samples.completion_mask[rows]
        with self.policy.autocast(self._autocast_dtype):
            logp = self.policy.token_logprobs(
                samples.input_ids[rows],
                samples.attention_mask[rows],
                mask,
                temperature=cfg.temperature,
                group_size=cfg.group_size,
            )
        old_rows = logp.detach() if on_policy_old else old_logp[rows]
        weights = None
        if self._sampler_differs:
            weights = rollout_correction(
                old_rows, samples.logprobs[rows], mask, cfg.rollout_correction,
                cfg.rollout_correction_min, cfg.rollout_correction_max,
            )  # fmt: skip
        loss, m = policy_loss(
            logp, old_rows, advantages[rows], mask,
            loss_type=cfg.loss_type, epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high,
            beta=cfg.beta, ref_logp=None if ref_logp is None else ref_logp[rows],
            max_completion_length=cfg.max_new_tokens, aggregation=cfg.aggregation, group_size=cfg.group_size,
            rollout_weights=weights,
        )  # fmt: skip
        grad_norm = training.optimizer_step(self.optimizer, loss, cfg.max_grad_norm)
        tokens_of_rows = mask.bool()
        with torch.no_grad():  # k3 estimate of KL(pi_old || pi_theta) before this update
            approx_kl = _k3((logp - old_rows)[tokens_of_rows]).mean()
        values = {"loss": loss, "clip_fraction": m["clip_fraction"], "approx_kl": approx_kl}
        values["grad_norm"] = grad_norm
        if "kl" in m:
            values["kl"] = m["kl"]
        if self._sampler_differs:
            values.update(_rollout_metrics(old_rows, samples.logprobs[rows], tokens_of_rows, weights))
        return values

    def _metrics_row(
        self,
        rollouts: _Rollouts,
        kept: int,
        means: dict[str, float],
        old_logp: torch.Tensor,
        truncated: torch.Tensor,
        seconds: dict[str, float],
    ) -> dict[str, float]:
        """The step's row of metrics: rewards of its own prompts, the updates' means, lengths, timings."""
        cfg, samples, rewards = self.config, rollouts.samples, rollouts.rewards
        mask = samples.completion_mask
        tokens = mask.sum().item()
        own = slice(0, rollouts.on_policy_rows)
        metrics: dict[str, float] = {
            "episode_reward_mean": rewards[own].mean().item(),
            "episode_reward_std": rewards[own].std().item() if rollouts.on_policy_rows > 1 else 0.0,
            **{f"reward_{name}": values[own].mean().item() for name, values in rollouts.per_function.items()},
            "pass_rate": (rewards[own] > 0).float().mean().item(),
            "groups_kept": kept / cfg.prompts_per_step,
        }
        if cfg.dynamic_sampling:
            metrics["sampling_rounds"] = rollouts.rounds
        if cfg.retire_pass_rate is not None:
            metrics["prompts_retired"] = len(self.retired)
        for key in ("loss", "kl", "approx_kl", "clip_fraction", "grad_norm"):
            if key == "kl" and cfg.beta == 0:
                continue
            metrics[key] = means.get(key, float("nan"))
        metrics.update({key: means[key] for key in ROLLOUT_METRICS if key in means})
        metrics.update(
            {
                "entropy": (-(old_logp * mask).sum() / max(tokens, 1)).item(),
                "completion_length": samples.completion_lengths[own].float().mean().item(),
                "prefill_tokens": samples.prefill_tokens,
                "truncated_fraction": truncated[own].float().mean().item(),
                "learning_rate": self.optimizer.param_groups[0]["lr"],
                "tokens_per_second": tokens / max(seconds["time_step"], 1e-9),
                **seconds,
            }
        )
        return metrics

    # ------------------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """One atomic checkpoint folder: the policy's weights (``LMPolicy.save``), this config, the step
        count and the optimiser state. Load it with :meth:`load`, or the policy alone with ``LMPolicy.load``."""
        return training.save_trainer(
            self,
            path,
            {
                "trainer": TRAINER_KIND,
                "grpo_config": self.config.to_dict(),
                "retired_prompts": sorted(self.retired),
                "prompt_schedule": {"order": self._schedule, "passes": self._passes},
            },
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        policy: LMPolicy,
        reward_fn: RewardFn | Sequence[RewardFn | tuple[RewardFn, float]],
        prompts: Sequence[Any],
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
    ) -> GRPO:
        """Resume from a folder written by :meth:`save`.

        ``policy`` is a fresh ``LMPolicy`` built the way the saved one was (same base model and
        ``PolicyConfig``); the saved weights are loaded into it, so its reference policy stays the
        base model. Continue with ``learn(steps, reset_num_timesteps=False)``.
        """
        ckpt, config = training.open_trainer_checkpoint(path, policy, TRAINER_KIND, GRPOConfig, "grpo_config")
        trainer = cls(policy, reward_fn, prompts, config, log_dir=log_dir, tensorboard=tensorboard)
        training.restore_optimizer(trainer, ckpt, path)
        schedule = ckpt.metadata.get("prompt_schedule", {"order": [], "passes": 0})
        if any(
            not 0 <= i < len(trainer.prompts)
            for i in [*schedule["order"], *ckpt.metadata.get("retired_prompts", [])]
        ):
            raise CheckpointError(
                f"checkpoint {path} was trained on more prompts than the {len(trainer.prompts)} given; "
                "pass the run's prompts"
            )
        trainer.retired = set(ckpt.metadata.get("retired_prompts", []))
        trainer._schedule, trainer._passes = list(schedule["order"]), int(schedule["passes"])
        return trainer


@contextmanager
def _seeded_rng(seed: int, device: torch.device):  # type: ignore[no-untyped-def]
    """Seed torch's global RNG (dropout) for one update, restoring the caller's state afterwards."""
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
