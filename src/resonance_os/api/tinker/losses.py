"""The SDK's built-in losses, with Tinker's semantics: per-token terms summed (no averaging).

Per datum, with ``logp`` the trained model's log-probability of each ``target_tokens`` entry and
``q`` the sampler's (``loss_fn_inputs["logprobs"]``), ratio ``r = exp(logp - q)``, advantages ``A``:

    cross_entropy        -sum(logp * weights)                                  (weights default 1)
    importance_sampling  -sum(r * A)
    ppo                  -sum(min(r * A, clip(r, low, high) * A))               low/high: 0.8/1.2
    cispo                -sum(sg(clip(r, low, high)) * logp * A)
    dro                  -sum(logp * A - beta / 2 * (logp - q)^2)               beta: 0.05

``low``/``high`` come from ``loss_fn_config`` (``clip_low_threshold``, ``clip_high_threshold``) or per
token from ``loss_fn_inputs`` of the same names; ``beta`` from ``loss_fn_config``. Our GRPO trainer's
losses (:mod:`resonance_os.llm.losses`) average over tokens and sequences instead; these are the
sums the Tinker SDK and cookbook expect, so a Tinker user's learning rates carry over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from resonance_os.api.tinker.errors import UserError

RL_INPUTS = {"target_tokens", "logprobs", "advantages"}
CLIP_INPUTS = {"clip_low_threshold", "clip_high_threshold"}

REQUIRED_INPUTS: dict[str, set[str]] = {
    "cross_entropy": {"target_tokens"},
    "importance_sampling": RL_INPUTS,
    "ppo": RL_INPUTS,
    "cispo": RL_INPUTS,
    "dro": RL_INPUTS,
}
OPTIONAL_INPUTS: dict[str, set[str]] = {
    "cross_entropy": {"weights"},
    "importance_sampling": {"weights"},
    "ppo": CLIP_INPUTS | {"weights"},
    "cispo": CLIP_INPUTS | {"weights"},
    "dro": {"weights"},
}
CONFIG_DEFAULTS: dict[str, dict[str, float]] = {
    "cross_entropy": {},
    "importance_sampling": {},
    "ppo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    "cispo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    "dro": {"beta": 0.05},
}
SUPPORTED = tuple(REQUIRED_INPUTS)
UNSUPPORTED_WHY = {
    "gspo": "needs sequence_ratio_mask semantics we do not implement yet",
    "stable_reinforce": "needs the sampler's stability records (record_stability_info), which we do not keep",
    "custom": "server-side custom losses are off (client config custom_loss_server_side=false); "
    "forward_backward_custom runs the loss on the client",
}


def check_request(
    loss_fn: str, config: Mapping[str, float | str], input_names: set[str], where: str
) -> dict[str, float]:
    """The loss's config with defaults filled in; a UserError naming the field for anything unknown."""
    if loss_fn not in REQUIRED_INPUTS:
        why = UNSUPPORTED_WHY.get(loss_fn, "unknown loss")
        raise UserError(f"loss_fn={loss_fn!r} is not supported ({why}); use one of {', '.join(SUPPORTED)}")
    missing = REQUIRED_INPUTS[loss_fn] - input_names
    if missing:
        raise UserError(f"{where}.loss_fn_inputs lacks {sorted(missing)}, which loss_fn={loss_fn!r} needs")
    extra = input_names - REQUIRED_INPUTS[loss_fn] - OPTIONAL_INPUTS[loss_fn]
    if extra:
        allowed = sorted(REQUIRED_INPUTS[loss_fn] | OPTIONAL_INPUTS[loss_fn])
        raise UserError(
            f"{where}.loss_fn_inputs has {sorted(extra)}, which loss_fn={loss_fn!r} does not use (it takes {allowed})"
        )
    merged = dict(CONFIG_DEFAULTS[loss_fn])
    for key, value in config.items():
        if key not in merged:
            raise UserError(
                f"loss_fn_config[{key!r}] is not an option of {loss_fn!r} (options: {sorted(merged) or 'none'})"
            )
        if isinstance(value, str):
            raise UserError(f"loss_fn_config[{key!r}] must be a number, got {value!r}")
        merged[key] = float(value)
    return merged


def _clip_bounds(
    inputs: Mapping[str, torch.Tensor], config: Mapping[str, float]
) -> tuple[torch.Tensor | float, torch.Tensor | float]:
    low = inputs.get("clip_low_threshold", config["clip_low_threshold"])
    high = inputs.get("clip_high_threshold", config["clip_high_threshold"])
    return low, high


def _cross_entropy(logp, inputs, config):
    return -logp


def _importance_sampling(logp, inputs, config):
    return -torch.exp(logp - inputs["logprobs"]) * inputs["advantages"]


def _ppo(logp, inputs, config):
    ratio = torch.exp(logp - inputs["logprobs"])
    low, high = _clip_bounds(inputs, config)
    advantages = inputs["advantages"]
    return -torch.minimum(ratio * advantages, torch.clamp(ratio, low, high) * advantages)


def _cispo(logp, inputs, config):
    ratio = torch.exp(logp - inputs["logprobs"]).detach()
    low, high = _clip_bounds(inputs, config)
    return -torch.clamp(ratio, low, high) * logp * inputs["advantages"]


def _dro(logp, inputs, config):
    return -(logp * inputs["advantages"] - 0.5 * config["beta"] * (logp - inputs["logprobs"]) ** 2)


TERMS: dict[str, Callable[[torch.Tensor, Mapping[str, torch.Tensor], Mapping[str, float]], torch.Tensor]] = {
    "cross_entropy": _cross_entropy,
    "importance_sampling": _importance_sampling,
    "ppo": _ppo,
    "cispo": _cispo,
    "dro": _dro,
}


def elementwise_loss(
    loss_fn: str, logp: torch.Tensor, inputs: Mapping[str, torch.Tensor], config: Mapping[str, float]
) -> torch.Tensor:
    """Each token's loss term times its weight (``weights``, default 1): sum it for the datum's loss."""
    term = TERMS[loss_fn](logp, inputs, config)
    weights = inputs.get("weights")
    return term if weights is None else term * weights
