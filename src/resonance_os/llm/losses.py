"""The GRPO family of policy losses for language models, and the group-relative advantages they use.

Reads top to bottom: advantages, the filters on groups, then one ``policy_loss`` whose three steps
(importance ratio, per-token objective, aggregation) are each a few visible lines. Notation, for a
batch of B completions y_i (G per prompt, T padded tokens, mask m_{i,t}, |y_i| = sum_t m_{i,t}):

    advantage       A_i = (R_i - mean(R_group(i))) / (std(R_group(i)) + eps)            (GRPO; std unbiased)
                    std over the whole batch instead ("batch", PPO Lite / ScaleRL), or none (Dr. GRPO)
    token ratio     r_{i,t}(θ) = π_θ(y_{i,t}) / π_θold(y_{i,t}) = exp(logp - old_logp)
    sequence ratio  s_i(θ) = exp((1/|y_i|) Σ_t m_{i,t} log r_{i,t})                        (GSPO)
    GSPO-token      s_{i,t}(θ) = sg[s_i(θ)] · π_θ(y_{i,t}) / sg[π_θ(y_{i,t})]              (GSPO, eq. 13)
    GSPO+           the GSPO-token weight with "token" aggregation: the sequence-level correction
                    stays, every token weighs the same whatever its sequence's length (NousCoder)
    clipped term    ℓ_{i,t} = -min(w A_i, clip(w, 1 - ε_low, 1 + ε_high) A_i)   w = r, s or s_{i,t}
                    (GRPO/PPO surrogate; DAPO's "clip-higher" is ε_high > ε_low)
    CISPO term      ℓ_{i,t} = -sg[min(r_{i,t}, ε_max)] A_i log π_θ(y_{i,t})                (MiniMax-M1)
    k3 KL           D_{i,t} = π_ref/π_θ - log(π_ref/π_θ) - 1, times the ratio w when kl_ratio_correction
                    (DeepSeek-V3.2's unbiased estimator, TRL's default); ℓ_{i,t} += β D_{i,t}

    rollout weight  ℓ_{i,t} ← c_{i,t} ℓ_{i,t} before the KL term, when the completions were sampled by a
                    copy of the policy that is not π_θold itself (bf16 rollouts, vLLM): with
                    ρ = π_θold / π_rollout per token (or their product over the sequence), c is ρ
                    truncated to [c_min, c_max] or 0 outside it (TRL 1.16's
                    ``vllm_importance_sampling_mode``; Yao et al. 2025, "truncated importance sampling")

and the loss is the aggregation of ℓ over the unmasked tokens:

    "sequence"  mean_i (1/|y_i|) Σ_t ℓ_{i,t}                 grpo, gspo, gspo_token (the papers' 1/G Σ 1/|y| Σ)
    "token"     Σ_{i,t} ℓ_{i,t} / N                           bnpo (N = tokens in this batch), dapo, cispo and
                                                              gspo_plus (N = tokens of the accumulated batch)
    "constant"  Σ_{i,t} ℓ_{i,t} / (B · max_completion_length) dr_grpo (Dr. GRPO)
    "prompt"    mean_prompts Σ_{group} ℓ / Σ_{group} |y|      ScaleRL's prompt-level average

Every loss type TRL 1.16 has gives the same loss and gradient as TRL's ``GRPOTrainer._compute_loss``
(``gspo`` is TRL's ``importance_sampling_level="sequence"`` with ``loss_type="grpo"``); tests/llm/
test_losses.py checks it to 1e-6 on random batches. docs/llm_rl.md has the papers and the options.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from resonance_os.rl.errors import ConfigError, RLError

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "gspo", "gspo_token", "gspo_plus")
"""The supported ``loss_type`` values."""

AGGREGATIONS = ("token", "sequence", "prompt", "constant")
"""The supported ``aggregation`` values (``None``: the loss type's own, see ``DEFAULT_AGGREGATION``)."""

DEFAULT_AGGREGATION = {
    "grpo": "sequence",
    "bnpo": "token",
    "dr_grpo": "constant",
    "dapo": "token",
    "cispo": "token",
    "gspo": "sequence",
    "gspo_token": "sequence",
    "gspo_plus": "token",
}

SCALE_REWARDS = ("group", "batch", "none")
"""The supported ``scale_rewards`` values of :func:`group_advantages` (``None`` means ``"none"``)."""

CISPO_DEFAULT_EPSILON_MAX = 5.0
"""CISPO's cap on the importance weight when ``epsilon_high`` is not given (ScaleRL's value)."""


ROLLOUT_CORRECTIONS = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask", "none")
"""The supported ``mode`` values of :func:`rollout_correction` (TRL's ``vllm_importance_sampling_mode``,
plus ``"none"``)."""


class BatchError(RLError, ValueError):
    """A batch handed to a loss has the wrong shape or type, or holds NaN/inf; the message names it."""


# ---------------------------------------------------------------------------------------------- advantages


def group_advantages(
    rewards: torch.Tensor | Sequence[float],
    group_size: int,
    scale_rewards: str | None = "group",
    eps: float = 1e-4,
) -> torch.Tensor:
    """Group-relative advantages ``A_i = (R_i - mean of its group) / (std + eps)``.

    Args:
        rewards: ``(B,)`` rewards, the ``group_size`` completions of each prompt consecutive
            (``B = prompts * group_size``). A list or array becomes a float32 tensor.
        group_size: G, completions per prompt (>= 1).
        scale_rewards: ``"group"`` (GRPO: unbiased std of the group), ``"batch"`` (group mean, but the
            unbiased std of all B rewards: PPO Lite, ScaleRL's batch-level normalisation) or
            ``"none"``/``None`` (Dr. GRPO: only the group mean is subtracted). A std over one reward is 0.
        eps: added to the std (TRL's 1e-4), so zero-variance groups get advantage 0, not NaN.

    Returns:
        ``(B,)`` advantages, same dtype and device as ``rewards``.
    """
    rewards = _as_reward_tensor(rewards, group_size)
    scale = "none" if scale_rewards is None else scale_rewards
    if scale not in SCALE_REWARDS:
        raise ConfigError(f"scale_rewards={scale_rewards!r} is not one of 'group', 'batch', 'none' (or None)")
    if not eps >= 0:
        raise ConfigError(f"eps={eps!r} must be >= 0 (TRL uses 1e-4)")
    grouped = rewards.view(-1, group_size)
    advantages = (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1)
    if scale == "group":
        std = grouped.std(dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(grouped)
        advantages = advantages / (std.expand_as(grouped).reshape(-1) + eps)
    elif scale == "batch":
        std = rewards.std() if rewards.numel() > 1 else torch.zeros_like(rewards[0])
        advantages = advantages / (std + eps)
    return advantages


def nonzero_variance_mask(rewards: torch.Tensor | Sequence[float], group_size: int) -> torch.Tensor:
    """ScaleRL's (and DAPO's dynamic sampling's) zero-variance filter: which completions to keep.

    A group whose rewards are all equal (all solved, all failed) has advantage 0 everywhere and gives
    no gradient, yet it would still count in the loss's denominator. Returns a ``(B,)`` bool tensor,
    False for every completion of such a group; index the batch with it (``logp[keep]``, ...) so
    whole groups are dropped and the remaining ones stay consecutive.
    """
    rewards = _as_reward_tensor(rewards, group_size)
    grouped = rewards.view(-1, group_size)
    varied = grouped.amax(dim=1) > grouped.amin(dim=1)
    return varied.repeat_interleave(group_size)


def _as_reward_tensor(rewards: torch.Tensor | Sequence[float], group_size: int) -> torch.Tensor:
    if not isinstance(group_size, int) or isinstance(group_size, bool) or group_size < 1:
        raise ConfigError(f"group_size={group_size!r} must be an integer >= 1 (completions per prompt)")
    if not isinstance(rewards, torch.Tensor):
        rewards = torch.as_tensor(rewards, dtype=torch.float32)
    if rewards.dim() != 1:
        raise BatchError(f"rewards must have shape (batch,), got {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    if rewards.numel() == 0 or rewards.numel() % group_size:
        raise BatchError(
            f"rewards has {rewards.numel()} entries, not a positive multiple of group_size={group_size}: "
            "pass group_size completions per prompt, consecutive"
        )
    if not bool(torch.isfinite(rewards).all()):
        where = torch.nonzero(~torch.isfinite(rewards))[0].item()
        raise BatchError(
            f"rewards[{where}] is {rewards[where].item()}: a reward function returned NaN or inf"
        )
    return rewards


# ---------------------------------------------------------------------------------------------- the loss


def rollout_correction(
    old_logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "sequence_mask",
    clip_min: float | None = None,
    clip_max: float | None = 3.0,
) -> torch.Tensor | None:
    """The weights ``c`` that correct a loss for completions sampled by a rollout copy of the policy.

    ``old_logp``: ``(B, T)`` log π_θold of the tokens, computed by the trained model; ``rollout_logp``:
    the sampler's log-probs of the same tokens; ``mask``: ``(B, T)``. ``mode``: ``"token_*"`` weighs
    each token by ρ_t = exp(old_logp - rollout_logp), ``"sequence_*"`` each completion by the product
    of its tokens' ρ; ``"*_truncate"`` clamps ρ to ``[clip_min, clip_max]``, ``"*_mask"`` sets the
    weights outside that range to 0 (a bound of None is no bound); ``"none"`` returns None. TRL 1.16's
    formulas (masked positions count as ρ = 1). Returns ``(B, T)`` for token modes, ``(B, 1)`` for
    sequence modes; pass it to :func:`policy_loss` as ``rollout_weights``.
    """
    if mode not in ROLLOUT_CORRECTIONS:
        raise ConfigError(f"rollout correction mode={mode!r} is not one of {', '.join(ROLLOUT_CORRECTIONS)}")
    for name, bound in (("clip_min", clip_min), ("clip_max", clip_max)):
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound >= 0
        ):
            raise ConfigError(f"{name}={bound!r} must be a number >= 0 or None (no bound)")
    if clip_min is not None and clip_max is not None and clip_min > clip_max:
        raise ConfigError(f"clip_min={clip_min} is above clip_max={clip_max}")
    if mode == "none":
        return None
    diff = torch.nan_to_num((old_logp.detach() - rollout_logp.detach()) * mask.to(old_logp.dtype), nan=0.0)
    if mode.startswith("sequence"):
        diff = diff.sum(-1, keepdim=True)
    ratio = torch.exp(diff)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    low = -float("inf") if clip_min is None else clip_min
    high = float("inf") if clip_max is None else clip_max
    return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str = "dapo",
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    beta: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    max_completion_length: int | None = None,
    *,
    aggregation: str | None = None,
    group_size: int | None = None,
    num_tokens: float | torch.Tensor | None = None,
    kl_ratio_correction: bool = True,
    rollout_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One GRPO-family policy loss on a batch of completions (formulas in the module docstring).

    Args:
        logp: ``(B, T)`` log π_θ of the sampled completion tokens, with grad.
        old_logp: ``(B, T)`` log π_θold of the same tokens (the sampling policy); no grad is taken.
            Pass ``logp.detach()`` when on-policy (one update per generation).
        adv: ``(B,)`` advantages (one per completion), or ``(B, T)`` per token.
        mask: ``(B, T)`` 1 for completion tokens, 0 for padding (bool, int or float of 0/1).
        loss_type: one of ``LOSS_TYPES``; default ``"dapo"`` as TRL.
        epsilon: ε_low, the lower clip ``1 - ε`` (and the upper one unless ``epsilon_high``). 0.2.
        epsilon_high: ε_high, the upper clip ``1 + ε_high`` (DAPO recommends 0.28); for ``"cispo"`` the
            absolute cap ε_max on the detached weight (default 5.0, ScaleRL's value; TRL would fall back
            to ``epsilon``).
        beta: weight of the k3 KL to the reference policy; needs ``ref_logp`` when non-zero. 0.
        ref_logp: ``(B, T)`` log π_ref of the tokens; no grad is taken.
        max_completion_length: the constant of ``"constant"`` aggregation (dr_grpo); default T.
        aggregation: override the loss type's aggregation: ``"token"``, ``"sequence"``, ``"prompt"``
            (needs ``group_size``) or ``"constant"``.
        group_size: completions per prompt, consecutive in the batch; for ``"prompt"`` aggregation.
        num_tokens: the token count N of ``"token"`` aggregation: the tokens of every micro-batch
            accumulated into one optimiser step (TRL's ``num_items_in_batch``), so the accumulated
            gradient is a mean over all of them. Default: the tokens of this batch. Not for ``"bnpo"``,
            which is by definition normalised by its own batch.
        kl_ratio_correction: multiply the KL term by the importance ratio (TRL 1.16's default,
            ``use_bias_correction_kl``). True.
        rollout_weights: ``(B, T)`` or ``(B, 1)`` weights from :func:`rollout_correction` when the
            completions came from a rollout copy of the policy (bf16 sampling); they multiply each
            token's policy term, not the KL term, as TRL's ``vllm_importance_sampling_correction``.

    Returns:
        ``(loss, metrics)``: the scalar loss to minimise, and detached 0-d tensors
        ``clip_fraction_low`` (ratio below 1 - ε_low with A < 0), ``clip_fraction_high`` (above
        1 + ε_high, or above ε_max for CISPO, with A > 0), ``clip_fraction`` (either), ``ratio_mean``,
        and ``kl`` (mean KL term, as added to the loss) when ``ref_logp`` is given. Fractions and means
        are over unmasked tokens, or over sequences for ``"gspo"`` (one ratio per sequence), as TRL logs them.
    """
    aggregation, epsilon_high = _check_options(
        loss_type, aggregation, epsilon, epsilon_high, beta, ref_logp, num_tokens
    )
    _check_batch(logp, old_logp, adv, mask, ref_logp)
    max_completion_length = _check_batch_options(
        logp, aggregation, group_size, max_completion_length, rollout_weights
    )
    mask, old_logp = mask.to(logp.dtype), old_logp.detach()
    adv = (adv.unsqueeze(1) if adv.dim() == 1 else adv).detach().to(logp.dtype)  # (B, 1) or (B, T)

    # -- 1. importance weight: r, s or s_{i,t}; (B, T), or (B, 1) for gspo
    ratio = torch.exp(_importance_log_weight(loss_type, logp, old_logp, mask))
    # -- 2. per-token objective ℓ_{i,t}: the loss type's term, the rollout weight, the KL
    if loss_type == "cispo":
        per_token_loss = _cispo_term(ratio, adv, logp, epsilon_high)
    else:
        per_token_loss = _clipped_surrogate(ratio, adv, epsilon, epsilon_high)
    if rollout_weights is not None:
        per_token_loss = per_token_loss * rollout_weights.detach().to(logp.dtype)
    kl = None if ref_logp is None else _k3_kl(logp, ref_logp.detach(), ratio if kl_ratio_correction else None)
    if beta != 0:
        per_token_loss = per_token_loss + beta * kl
    # -- 3. aggregation over unmasked tokens
    loss = _aggregate(per_token_loss * mask, mask, aggregation, num_tokens, max_completion_length, group_size)
    return loss, _clip_metrics(loss_type, ratio, adv, mask, epsilon, epsilon_high, kl)


def _importance_log_weight(
    loss_type: str, logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """log w: the token ratio log r (GRPO, DAPO, CISPO, ...), the sequence's log s_i (``"gspo"``,
    ``(B, 1)``), or log s_{i,t} = sg[log s_i] + log π_θ - sg[log π_θ] (``"gspo_token"``, ``"gspo_plus"``)."""
    log_ratio = logp - old_logp
    if loss_type not in ("gspo", "gspo_token", "gspo_plus"):
        return log_ratio
    seq_log_ratio = (log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # log s_i
    seq_log_ratio = seq_log_ratio.unsqueeze(-1)  # (B, 1)
    if loss_type == "gspo":
        return seq_log_ratio
    return seq_log_ratio.detach() + logp - logp.detach()  # log s_{i,t}


def _clipped_surrogate(
    ratio: torch.Tensor, adv: torch.Tensor, epsilon: float, epsilon_high: float
) -> torch.Tensor:
    """The PPO/GRPO term ``-min(w A, clip(w, 1 - ε_low, 1 + ε_high) A)``."""
    clipped_ratio = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high)
    return -torch.min(ratio * adv, clipped_ratio * adv)


def _cispo_term(
    ratio: torch.Tensor, adv: torch.Tensor, logp: torch.Tensor, epsilon_max: float
) -> torch.Tensor:
    """CISPO's term ``-sg[min(r, ε_max)] A log π_θ``: the weight is capped and detached, never clipped away."""
    is_weight = torch.clamp(ratio, max=epsilon_max).detach()  # sg[min(r, ε_max)]
    return -is_weight * adv * logp


def _k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor, ratio: torch.Tensor | None = None) -> torch.Tensor:
    """The k3 estimator of KL(π_θ || π_ref) per token, ``π_ref/π_θ - log(π_ref/π_θ) - 1``, times
    ``ratio`` when given (the importance-corrected, unbiased estimator)."""
    kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
    return kl if ratio is None else kl * ratio


def _aggregate(
    masked_loss: torch.Tensor,
    mask: torch.Tensor,
    aggregation: str,
    num_tokens: float | torch.Tensor | None,
    max_completion_length: int,
    group_size: int | None,
) -> torch.Tensor:
    """The scalar loss from the masked per-token terms, by ``aggregation`` (see the module docstring)."""
    if aggregation == "sequence":
        return (masked_loss.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if aggregation == "token":
        count = (
            mask.sum()
            if num_tokens is None
            else torch.as_tensor(num_tokens, dtype=mask.dtype, device=mask.device)
        )
        return masked_loss.sum() / count.clamp(min=1.0)
    if aggregation == "constant":
        return masked_loss.sum() / (mask.shape[0] * max_completion_length)
    # "prompt": each prompt's group is one mean over its tokens
    width = group_size * mask.shape[1]
    per_prompt_sum = masked_loss.view(-1, width).sum(-1)
    per_prompt_tokens = mask.view(-1, width).sum(-1)
    return (per_prompt_sum / per_prompt_tokens.clamp(min=1.0)).mean()


@torch.no_grad()
def _clip_metrics(
    loss_type: str,
    ratio: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    epsilon: float,
    epsilon_high: float,
    kl: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """The loss's detached metrics, averaged as TRL logs them (see :func:`policy_loss`)."""

    def mean_over_batch(x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] == 1:  # one value per sequence
            return x.sum() / x.shape[0]
        return (x * mask).sum() / mask.sum().clamp(min=1.0)

    if loss_type == "cispo":
        high = (ratio > epsilon_high) & (adv > 0)
        low = torch.zeros_like(high)
    else:
        low = (ratio < 1 - epsilon) & (adv < 0)
        high = (ratio > 1 + epsilon_high) & (adv > 0)
    metrics = {
        "clip_fraction_low": mean_over_batch(low.to(mask.dtype)),
        "clip_fraction_high": mean_over_batch(high.to(mask.dtype)),
        "clip_fraction": mean_over_batch((low | high).to(mask.dtype)),
        "ratio_mean": mean_over_batch(ratio.detach()),
    }
    if kl is not None:
        metrics["kl"] = mean_over_batch(kl.detach())
    return metrics


def _check_options(
    loss_type: str,
    aggregation: str | None,
    epsilon: float,
    epsilon_high: float | None,
    beta: float,
    ref_logp: torch.Tensor | None,
    num_tokens: float | torch.Tensor | None,
) -> tuple[str, float]:
    """Check the loss's settings; returns the aggregation and the upper bound (1 + ε_high's ε_high, or
    CISPO's cap ε_max) with their defaults filled in."""
    if loss_type not in LOSS_TYPES:
        raise ConfigError(f"loss_type={loss_type!r} is not one of {', '.join(LOSS_TYPES)}")
    aggregation = DEFAULT_AGGREGATION[loss_type] if aggregation is None else aggregation
    if aggregation not in AGGREGATIONS:
        raise ConfigError(f"aggregation={aggregation!r} is not one of {', '.join(AGGREGATIONS)} (or None)")
    if loss_type == "cispo":
        epsilon_max = CISPO_DEFAULT_EPSILON_MAX if epsilon_high is None else epsilon_high
        if not epsilon_max > 0:
            raise ConfigError(
                f"epsilon_high={epsilon_high!r} (CISPO's cap on the weight) must be > 0, e.g. 5.0"
            )
        high = epsilon_max
    else:
        if not 0 <= epsilon < 1:
            raise ConfigError(f"epsilon={epsilon!r} must be in [0, 1) (the clip range is 1 - epsilon ...)")
        high = epsilon if epsilon_high is None else epsilon_high
        if not high >= 0:
            raise ConfigError(f"epsilon_high={high!r} must be >= 0 (DAPO recommends 0.28)")
    if not beta >= 0:
        raise ConfigError(f"beta={beta!r} must be >= 0 (the KL coefficient)")
    if beta != 0 and ref_logp is None:
        raise ConfigError(f"beta={beta} needs ref_logp, the reference policy's log-probs (or set beta=0)")
    if num_tokens is not None and loss_type == "bnpo":
        raise ConfigError(
            "num_tokens is not used by 'bnpo' (normalised by its own batch); use 'dapo' instead"
        )
    return aggregation, high


def _check_batch_options(
    logp: torch.Tensor,
    aggregation: str,
    group_size: int | None,
    max_completion_length: int | None,
    rollout_weights: torch.Tensor | None,
) -> int:
    """Check the settings that depend on the batch's shape; returns ``max_completion_length`` (default T)."""
    batch, tokens = logp.shape
    if rollout_weights is not None and (
        not isinstance(rollout_weights, torch.Tensor)
        or rollout_weights.shape not in ((batch, tokens), (batch, 1))
    ):
        raise BatchError(
            f"rollout_weights must be a tensor of shape ({batch}, {tokens}) or ({batch}, 1) (from "
            f"rollout_correction), got {getattr(rollout_weights, 'shape', type(rollout_weights).__name__)}"
        )
    if aggregation == "prompt" and (not isinstance(group_size, int) or group_size < 1 or batch % group_size):
        raise ConfigError(
            f"aggregation='prompt' needs group_size, an integer >= 1 dividing the batch of {batch} "
            f"completions (got {group_size!r})"
        )
    if max_completion_length is None:
        return tokens
    if not isinstance(max_completion_length, int) or max_completion_length < 1:
        raise ConfigError(f"max_completion_length={max_completion_length!r} must be a positive integer")
    return max_completion_length


def _check_batch(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    ref_logp: torch.Tensor | None,
) -> None:
    """Shapes, dtypes and finiteness of the loss's inputs, with one device sync for the value checks."""
    named = {"logp": logp, "old_logp": old_logp, "adv": adv, "mask": mask}
    if ref_logp is not None:
        named["ref_logp"] = ref_logp
    for name, x in named.items():
        if not isinstance(x, torch.Tensor):
            raise BatchError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if logp.dim() != 2:
        raise BatchError(f"logp must have shape (batch, tokens), got {tuple(logp.shape)}")
    if not logp.is_floating_point():
        raise BatchError(f"logp must be a floating-point tensor, got {logp.dtype}")
    for name in ("old_logp", "mask", "ref_logp"):
        if name in named and named[name].shape != logp.shape:
            raise BatchError(
                f"{name} has shape {tuple(named[name].shape)} but logp has {tuple(logp.shape)}: "
                "every per-token tensor is (batch, tokens)"
            )
    if adv.shape not in (logp.shape[:1], logp.shape):
        raise BatchError(
            f"adv has shape {tuple(adv.shape)}; expected ({logp.shape[0]},), one advantage per completion, "
            f"or {tuple(logp.shape)}, one per token"
        )
    values = [x for name, x in named.items() if name != "mask"]
    flags = [~torch.isfinite(x).all() for x in values]
    flags.append(((mask != 0) & (mask != 1)).any())
    bad = torch.stack(flags).tolist()
    for (name, x), is_bad in zip([(n, x) for n, x in named.items() if n != "mask"], bad[:-1]):
        if is_bad:
            where = tuple(torch.nonzero(~torch.isfinite(x))[0].tolist())
            raise BatchError(
                f"{name}{list(where)} is {x[where].item()}: log-probs and advantages must be finite, "
                "padding included (fill padded positions with 0)"
            )
    if bad[-1]:
        raise BatchError("mask must hold only 0 and 1 (1 for completion tokens, 0 for padding)")
