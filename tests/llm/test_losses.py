"""The GRPO-family losses: exact against TRL 1.16's own loss code, and their documented behaviour.

The TRL comparison runs TRL's real ``GRPOTrainer._compute_loss``, unbound, on a stub ``self`` that
holds only the attributes that method reads (taken from a real ``GRPOConfig``, as the trainer's
``__init__`` takes them) and whose log-prob "model" returns a leaf tensor, so the loss and its gradient
w.r.t. the log-probs are TRL's own. ``trl`` is in the ``dev`` extra; without it those tests skip.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from resonance_os.llm.losses import (
    LOSS_TYPES,
    BatchError,
    group_advantages,
    nonzero_variance_mask,
    policy_loss,
    rollout_correction,
)
from resonance_os.rl.errors import ConfigError, RLError

TOL = 1e-6

# transformers warns on every GRPOConfig (a deprecated TrainingArguments field TRL sets); not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:`gradient_checkpointing` is deprecated:FutureWarning")

# Our loss_type -> (TRL loss_type, TRL importance_sampling_level): every type TRL 1.16 has.
TRL_EQUIVALENT = {
    "grpo": ("grpo", "token"),
    "bnpo": ("bnpo", "token"),
    "dr_grpo": ("dr_grpo", "token"),
    "dapo": ("dapo", "token"),
    "cispo": ("cispo", "token"),
    "gspo": ("grpo", "sequence"),
}


def random_batch(seed: int, batch: int = 8, tokens: int = 7, dtype=torch.float64, spread: float = 0.3):
    """Log-probs of a policy that moved away from the sampling one (ratios inside and outside the clip),
    advantages of both signs, masks of varied lengths with right and left padding, one empty row."""
    g = torch.Generator().manual_seed(seed)
    old_logp = -torch.rand(batch, tokens, generator=g, dtype=dtype) * 3 - 0.05
    logp = old_logp + spread * torch.randn(batch, tokens, generator=g, dtype=dtype)
    ref_logp = old_logp + 0.2 * torch.randn(batch, tokens, generator=g, dtype=dtype)
    adv = torch.randn(batch, generator=g, dtype=dtype)
    lengths = torch.randint(1, tokens + 1, (batch,), generator=g)
    positions = torch.arange(tokens)
    mask = (positions[None, :] < lengths[:, None]).long()
    mask[1] = mask[1].flip(0)  # left padding
    mask[2] = 0  # a completion with no tokens (e.g. masked as truncated)
    mask[3] = 1
    logp = logp.masked_fill(mask == 0, 0.0)  # padded positions hold 0, as a gather over padding gives
    return logp, old_logp, adv, mask, ref_logp


# ------------------------------------------------------------------------------------------- TRL reference


def trl_loss(
    loss_type, logp, old_logp, adv, mask, ref_logp, *, epsilon, epsilon_high, beta, max_len, num_items, is_ratio=None
):  # fmt: skip
    """TRL 1.16's loss (its ``_compute_loss``) and gradient w.r.t. logp, and the metrics it logged."""
    from trl import GRPOConfig
    from trl.trainer.grpo_trainer import GRPOTrainer

    trl_type, level = TRL_EQUIVALENT[loss_type]
    args = GRPOConfig(
        output_dir=tempfile.gettempdir(),
        report_to=[],
        use_cpu=True,
        loss_type=trl_type,
        importance_sampling_level=level,
        epsilon=epsilon,
        epsilon_high=epsilon_high,
        beta=beta,
        max_completion_length=max_len,
    )
    leaf = logp.detach().clone().requires_grad_(True)
    stub = SimpleNamespace(
        args=args,
        loss_type=args.loss_type,
        importance_sampling_level=args.importance_sampling_level,
        epsilon_low=args.epsilon,
        epsilon_high=args.epsilon_high if args.epsilon_high is not None else args.epsilon,
        beta=args.beta,
        max_completion_length=args.max_completion_length,
        top_entropy_quantile=args.top_entropy_quantile,
        off_policy_mask_threshold=args.off_policy_mask_threshold,
        use_vllm=is_ratio is not None,  # TRL corrects for its sampler only when vLLM samples
        vllm_importance_sampling_correction=args.vllm_importance_sampling_correction,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        current_gradient_accumulation_steps=1,
        model=SimpleNamespace(training=True),
        accelerator=SimpleNamespace(
            num_processes=1,
            gather=lambda x: x,
            gather_for_metrics=lambda x: x,
            reduce=lambda x, reduction="sum": x,
        ),
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *a, **k: (leaf, torch.zeros_like(leaf), None),
    )
    batch, tokens = logp.shape
    inputs = {
        "prompt_ids": torch.zeros(batch, 2, dtype=torch.long),
        "prompt_mask": torch.ones(batch, 2, dtype=torch.long),
        "completion_ids": torch.zeros(batch, tokens, dtype=torch.long),
        "completion_mask": mask,
        "advantages": adv,
        "old_per_token_logps": old_logp,
        "num_items_in_batch": torch.as_tensor(num_items, dtype=logp.dtype),
    }
    if beta != 0:
        inputs["ref_per_token_logps"] = ref_logp
    if is_ratio is not None:
        inputs["importance_sampling_ratio"] = is_ratio
    loss = GRPOTrainer._compute_loss(stub, None, inputs)
    loss.backward()
    return loss.detach(), leaf.grad, stub._metrics["train"]


CASES = [
    # (epsilon, epsilon_high, beta): symmetric clip, DAPO's clip-higher, with and without the KL term
    (0.2, None, 0.0),
    (0.2, 0.28, 0.0),
    (0.2, 0.28, 0.04),
    (0.1, None, 0.1),
]


@pytest.mark.parametrize("loss_type", sorted(TRL_EQUIVALENT))
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_loss_and_gradient_equal_trl(loss_type, case, dtype):
    pytest.importorskip("trl", reason="trl (dev extra) not installed: the TRL comparison needs TRL 1.16")
    epsilon, epsilon_high, beta = case
    if loss_type == "cispo":
        epsilon_high = 1.3 if epsilon_high is None else 5.0  # the absolute cap; 1.3 caps many weights
    for seed in range(4):
        logp, old_logp, adv, mask, ref_logp = random_batch(seed, dtype=dtype, spread=0.3 + 0.2 * seed)
        max_len = logp.shape[1] + 3
        leaf = logp.clone().requires_grad_(True)
        ours, metrics = policy_loss(
            leaf,
            old_logp,
            adv,
            mask,
            loss_type=loss_type,
            epsilon=epsilon,
            epsilon_high=epsilon_high,
            beta=beta,
            ref_logp=ref_logp if beta else None,
            max_completion_length=max_len,
        )
        ours.backward()
        theirs, their_grad, their_metrics = trl_loss(
            loss_type,
            logp,
            old_logp,
            adv,
            mask,
            ref_logp,
            epsilon=epsilon,
            epsilon_high=epsilon_high,
            beta=beta,
            max_len=max_len,
            num_items=mask.sum(),
        )
        assert abs(ours.item() - theirs.item()) <= TOL, (seed, ours.item(), theirs.item())
        assert torch.allclose(leaf.grad, their_grad, rtol=0, atol=TOL), (leaf.grad - their_grad).abs().max()
        assert their_grad.abs().max() > 1e-3  # the comparison is not between two zero gradients
        if loss_type == "cispo":
            assert metrics["clip_fraction_high"].item() == pytest.approx(their_metrics["cispo_clip_ratio"][0])
        else:
            for ours_key, trl_key in (
                ("clip_fraction_low", "clip_ratio/low_mean"),
                ("clip_fraction_high", "clip_ratio/high_mean"),
                ("clip_fraction", "clip_ratio/region_mean"),
            ):
                assert metrics[ours_key].item() == pytest.approx(their_metrics[trl_key][0], abs=1e-7)
        if beta:
            assert metrics["kl"].item() == pytest.approx(their_metrics["kl"][0], rel=1e-6)


@pytest.mark.parametrize("loss_type", sorted(TRL_EQUIVALENT))
@pytest.mark.parametrize("mode", ["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"])
def test_rollout_weighted_loss_equals_trl_vllm_importance_sampling_correction(loss_type, mode):
    """Completions sampled by a rollout copy: our weights from ``rollout_correction`` in
    ``policy_loss`` give TRL's loss and gradient with its ``vllm_importance_sampling_correction``."""
    pytest.importorskip("trl", reason="trl (dev extra) not installed: the TRL comparison needs TRL 1.16")
    epsilon_high = 5.0 if loss_type == "cispo" else 0.28
    for seed in range(3):
        logp, old_logp, adv, mask, ref_logp = random_batch(seed, spread=0.4)
        rollout_logp = old_logp + 0.15 * torch.randn(old_logp.shape, generator=torch.Generator().manual_seed(seed),
                                                     dtype=old_logp.dtype)  # fmt: skip
        weights = rollout_correction(old_logp, rollout_logp, mask, mode, clip_min=0.5, clip_max=1.5)
        leaf = logp.clone().requires_grad_(True)
        ours, _ = policy_loss(leaf, old_logp, adv, mask, loss_type=loss_type, epsilon_high=epsilon_high,
                              beta=0.04, ref_logp=ref_logp, max_completion_length=10, rollout_weights=weights)  # fmt: skip
        ours.backward()
        theirs, their_grad, _ = trl_loss(
            loss_type, logp, old_logp, adv, mask, ref_logp, epsilon=0.2, epsilon_high=epsilon_high, beta=0.04,
            max_len=10, num_items=mask.sum(), is_ratio=weights,
        )  # fmt: skip
        assert abs(ours.item() - theirs.item()) <= TOL
        assert torch.allclose(leaf.grad, their_grad, rtol=0, atol=TOL)
        unweighted, _ = policy_loss(logp, old_logp, adv, mask, loss_type=loss_type, epsilon_high=epsilon_high,
                                    beta=0.04, ref_logp=ref_logp, max_completion_length=10)  # fmt: skip
        assert abs(unweighted.item() - ours.item()) > 1e-4  # the weights did something


def test_rollout_correction_is_trls_truncated_or_masked_ratio():
    old = torch.tensor([[0.0, -1.0, -2.0], [-0.5, -0.5, 0.0]])
    rollout = torch.tensor([[-1.0, -1.0, -1.0], [0.5, -0.5, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])  # the last token is padding: counts as ratio 1
    e = torch.exp(torch.tensor(1.0)).item()
    token = rollout_correction(old, rollout, mask, "token_truncate", clip_min=None, clip_max=2.0)
    assert torch.allclose(token, torch.tensor([[2.0, 1.0, 1 / e], [1 / e, 1.0, 1.0]]))
    masked = rollout_correction(old, rollout, mask, "token_mask", clip_min=0.5, clip_max=2.0)
    assert torch.allclose(masked, torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    sequence = rollout_correction(old, rollout, mask, "sequence_truncate", clip_min=None, clip_max=3.0)
    assert sequence.shape == (2, 1) and torch.allclose(sequence, torch.tensor([[1.0], [1 / e]]))
    assert torch.equal(
        rollout_correction(old, rollout, mask, "sequence_mask", clip_min=0.5), torch.tensor([[1.0], [0.0]])
    )
    assert rollout_correction(old, rollout, mask, "none") is None
    with pytest.raises(ConfigError, match="not one of"):
        rollout_correction(old, rollout, mask, "clip")
    with pytest.raises(ConfigError, match="clip_min=2.0 is above clip_max=1.0"):
        rollout_correction(old, rollout, mask, "token_mask", clip_min=2.0, clip_max=1.0)
    with pytest.raises(BatchError, match="rollout_weights must be a tensor of shape"):
        policy_loss(old, old, torch.ones(2), mask, rollout_weights=torch.ones(3))


@pytest.mark.parametrize("loss_type", ["dapo", "cispo"])
def test_global_token_count_equals_trl_num_items_in_batch(loss_type):
    """dapo/cispo normalise by the tokens of the whole accumulated batch (TRL's num_items_in_batch)."""
    pytest.importorskip("trl", reason="trl (dev extra) not installed: the TRL comparison needs TRL 1.16")
    logp, old_logp, adv, mask, ref_logp = random_batch(11)
    eps_high = 5.0 if loss_type == "cispo" else 0.28
    leaf = logp.clone().requires_grad_(True)
    ours, _ = policy_loss(
        leaf, old_logp, adv, mask, loss_type=loss_type, epsilon_high=eps_high, num_tokens=123
    )
    ours.backward()
    theirs, their_grad, _ = trl_loss(
        loss_type,
        logp,
        old_logp,
        adv,
        mask,
        ref_logp,
        epsilon=0.2,
        epsilon_high=eps_high,
        beta=0.0,
        max_len=512,
        num_items=123,
    )
    assert abs(ours.item() - theirs.item()) <= TOL
    assert torch.allclose(leaf.grad, their_grad, rtol=0, atol=TOL)


# ------------------------------------------------------------------------------------------- our behaviour


@pytest.mark.parametrize("beta", [0.0, 0.05])
def test_gspo_token_equals_gspo_for_sequence_advantages(beta):
    logp, old_logp, adv, mask, ref_logp = random_batch(3, spread=0.05)
    losses, grads = {}, {}
    for loss_type in ("gspo", "gspo_token"):
        leaf = logp.clone().requires_grad_(True)
        loss, metrics = policy_loss(
            leaf, old_logp, adv, mask, loss_type=loss_type, epsilon=3e-3, epsilon_high=4e-3, beta=beta,
            ref_logp=ref_logp if beta else None,
        )  # fmt: skip
        loss.backward()
        losses[loss_type], grads[loss_type] = loss.item(), leaf.grad
        assert metrics["clip_fraction"] > 0  # the small GSPO-paper clip range does clip here
    assert losses["gspo_token"] == pytest.approx(losses["gspo"], abs=1e-12)
    if (
        beta == 0
    ):  # the paper: same gradient when A_{i,t} = A_i (the IS-corrected KL term routes it differently)
        assert torch.allclose(grads["gspo_token"], grads["gspo"], rtol=0, atol=1e-12)


def test_gspo_token_takes_per_token_advantages():
    logp, old_logp, adv, mask, _ = random_batch(4)
    per_token = adv[:, None].expand_as(logp).clone()
    same, _ = policy_loss(logp, old_logp, per_token, mask, loss_type="gspo_token")
    assert same.item() == pytest.approx(
        policy_loss(logp, old_logp, adv, mask, loss_type="gspo_token")[0].item()
    )
    per_token[:, -1] += 1.0
    assert policy_loss(logp, old_logp, per_token, mask, loss_type="gspo_token")[0].item() != pytest.approx(
        same.item()
    )


def test_gspo_plus_weighs_every_token_alike_whatever_its_sequence_length():
    """GSPO+ = GSPO-token's weight, token-mean aggregation: with the policy equal to the sampling
    one (s = 1, nothing clipped) a token's gradient is -A_i / N for every sequence, where GSPO gives
    -A_i / (B |y_i|): a token of a short sequence counts more there."""
    logp, _, adv, mask, _ = random_batch(6)
    grads = {}
    for loss_type in ("gspo", "gspo_plus"):
        leaf = logp.clone().requires_grad_(True)
        policy_loss(leaf, logp.detach(), adv, mask, loss_type=loss_type)[0].backward()
        grads[loss_type] = leaf.grad
    lengths = mask.sum(-1, keepdim=True).clamp(min=1.0)
    expected_plus = -adv[:, None] * mask / mask.sum()
    expected_gspo = -adv[:, None] * mask / (lengths * mask.shape[0])
    assert torch.allclose(grads["gspo_plus"], expected_plus.to(logp.dtype), atol=1e-9)
    assert torch.allclose(grads["gspo"], expected_gspo.to(logp.dtype), atol=1e-9)


def test_cispo_gradient_is_detached_capped_weight_times_advantage():
    logp, old_logp, adv, mask, ref_logp = random_batch(5, spread=0.6)
    cap = 1.2
    leaf = logp.clone().requires_grad_(True)
    old = old_logp.clone().requires_grad_(True)
    loss, metrics = policy_loss(leaf, old, adv, mask, loss_type="cispo", epsilon_high=cap)
    loss.backward()
    ratio = torch.exp(logp - old_logp)
    weight = ratio.clamp(max=cap)
    expected = -weight * adv[:, None] * mask / mask.sum()
    assert torch.allclose(leaf.grad, expected, rtol=0, atol=1e-12)
    assert old.grad is None  # nothing flows through the sampling policy's log-probs or the weight
    assert bool(((ratio > cap) & (mask == 1)).any())  # some weights were capped ...
    capped = (ratio > cap) & (mask == 1) & (adv[:, None] != 0)
    assert torch.all(leaf.grad[capped] != 0)  # ... and still pass gradient (PPO's clip would zero them)
    expected_fraction = (((ratio > cap) & (adv[:, None] > 0)) * mask).sum() / mask.sum()
    assert metrics["clip_fraction_high"].item() == pytest.approx(expected_fraction.item())


def test_group_advantages_match_the_formulas():
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=12)
    grouped = rewards.reshape(3, 4)
    centred = (grouped - grouped.mean(1, keepdims=True)).reshape(-1)
    group_std = np.repeat(grouped.std(1, ddof=1), 4)
    cases = {
        "group": centred / (group_std + 1e-4),
        "batch": centred / (rewards.std(ddof=1) + 1e-4),
        "none": centred,
        None: centred,
    }
    for scale, expected in cases.items():
        got = group_advantages(torch.tensor(rewards), 4, scale_rewards=scale)
        np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-12)
    assert group_advantages([1.0, 0.0], 1).tolist() == [0.0, 0.0]  # one completion per prompt: no signal
    assert group_advantages([1, 0, 1, 1], 2).dtype == torch.float32


def test_zero_variance_groups_are_filtered():
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.5])
    keep = nonzero_variance_mask(rewards, 3)
    assert keep.tolist() == [False] * 3 + [True] * 3 + [False] * 3
    adv = group_advantages(rewards, 3)
    assert adv[~keep].abs().max() == 0  # those groups carry no advantage ...
    logp, old_logp, _, mask, _ = random_batch(6, batch=9)
    mask[2] = 1
    filtered, _ = policy_loss(logp[keep], old_logp[keep], adv[keep], mask[keep], loss_type="dapo")
    unfiltered, _ = policy_loss(logp, old_logp, adv, mask, loss_type="dapo")
    # ... yet they dilute the token mean: filtering rescales the same gradient to the informative tokens
    assert unfiltered.item() == pytest.approx(filtered.item() * mask[keep].sum().item() / mask.sum().item())
    assert nonzero_variance_mask([0.0, 1.0], 1).tolist() == [False, False]


def test_aggregations():
    logp, old_logp, adv, mask, _ = random_batch(7, batch=6)
    mask[2] = 1
    args = (logp, old_logp, adv, mask)
    per_token = -torch.min(
        torch.exp(logp - old_logp) * adv[:, None],
        torch.exp(logp - old_logp).clamp(0.8, 1.2) * adv[:, None],
    ) * mask  # fmt: skip
    sequence = (per_token.sum(1) / mask.sum(1)).mean()
    token = per_token.sum() / mask.sum()
    prompt = torch.stack([per_token[i : i + 3].sum() / mask[i : i + 3].sum() for i in (0, 3)]).mean()
    assert policy_loss(*args, loss_type="grpo")[0].item() == pytest.approx(sequence.item())
    assert policy_loss(*args, loss_type="dapo", aggregation="sequence")[0].item() == pytest.approx(
        sequence.item()
    )
    assert policy_loss(*args, loss_type="bnpo")[0].item() == pytest.approx(token.item())
    assert policy_loss(*args, loss_type="dapo")[0].item() == pytest.approx(token.item())
    assert policy_loss(*args, loss_type="dr_grpo")[0].item() == pytest.approx(
        per_token.sum().item() / (6 * 7)
    )
    assert policy_loss(*args, loss_type="dr_grpo", max_completion_length=20)[0].item() == pytest.approx(
        per_token.sum().item() / (6 * 20)
    )
    got = policy_loss(*args, loss_type="dapo", aggregation="prompt", group_size=3)[0]
    assert got.item() == pytest.approx(prompt.item())
    # ScaleRL's recipe: CISPO with prompt-level aggregation
    cispo = policy_loss(*args, loss_type="cispo", aggregation="prompt", group_size=3)[0]
    assert torch.isfinite(cispo)


def test_on_policy_grpo_gradient_is_the_policy_gradient():
    logp, _, adv, mask, _ = random_batch(8)
    leaf = logp.clone().requires_grad_(True)
    loss, metrics = policy_loss(leaf, leaf.detach(), adv, mask, loss_type="grpo")
    loss.backward()
    lengths = mask.sum(1, keepdim=True).clamp(min=1)
    assert torch.allclose(leaf.grad, -adv[:, None] * mask / lengths / len(adv), rtol=0, atol=1e-12)
    assert metrics["ratio_mean"].item() == pytest.approx(1.0)
    assert metrics["clip_fraction"].item() == 0.0


def test_kl_is_k3_and_zero_at_the_reference():
    logp, _, adv, mask, _ = random_batch(9)
    _, metrics = policy_loss(logp, logp, adv, mask, loss_type="dapo", beta=0.1, ref_logp=logp)
    assert metrics["kl"].item() == pytest.approx(0.0, abs=1e-12)
    ref = logp - 0.5 * mask
    _, metrics = policy_loss(logp, logp, adv, mask, loss_type="dapo", beta=0.1, ref_logp=ref)
    assert metrics["kl"].item() == pytest.approx(float(np.exp(-0.5) + 0.5 - 1))


def test_all_loss_types_run_with_float_and_bool_masks():
    logp, old_logp, adv, mask, ref_logp = random_batch(10, dtype=torch.float32)
    for loss_type in LOSS_TYPES:
        a, _ = policy_loss(logp, old_logp, adv, mask, loss_type=loss_type, beta=0.01, ref_logp=ref_logp)
        b, _ = policy_loss(
            logp, old_logp, adv, mask.bool(), loss_type=loss_type, beta=0.01, ref_logp=ref_logp
        )
        assert torch.isfinite(a) and a.item() == b.item()


def test_bad_input_is_a_clear_error():
    logp, old_logp, adv, mask, ref_logp = random_batch(12)
    with pytest.raises(ConfigError, match="loss_type='ppo'"):
        policy_loss(logp, old_logp, adv, mask, loss_type="ppo")
    with pytest.raises(BatchError, match=r"old_logp has shape \(8, 6\)"):
        policy_loss(logp, old_logp[:, :6], adv, mask)
    with pytest.raises(BatchError, match="adv has shape"):
        policy_loss(logp, old_logp, adv[:5], mask)
    with pytest.raises(BatchError, match="logp must have shape"):
        policy_loss(logp[0], old_logp[0], adv[:1], mask[0])
    bad = logp.clone()
    bad[4, 2] = float("nan")
    with pytest.raises(BatchError, match=r"logp\[4, 2\] is nan"):
        policy_loss(bad, old_logp, adv, mask)
    with pytest.raises(BatchError, match="adv"):
        policy_loss(logp, old_logp, adv * float("inf"), mask)
    with pytest.raises(BatchError, match="mask must hold only 0 and 1"):
        policy_loss(logp, old_logp, adv, mask * 2)
    with pytest.raises(ConfigError, match="needs ref_logp"):
        policy_loss(logp, old_logp, adv, mask, beta=0.1)
    with pytest.raises(ConfigError, match="group_size"):
        policy_loss(logp, old_logp, adv, mask, aggregation="prompt")
    with pytest.raises(ConfigError, match="group_size"):
        policy_loss(logp, old_logp, adv, mask, aggregation="prompt", group_size=3)
    with pytest.raises(ConfigError, match="aggregation='mean'"):
        policy_loss(logp, old_logp, adv, mask, aggregation="mean")
    with pytest.raises(ConfigError, match="num_tokens"):
        policy_loss(logp, old_logp, adv, mask, loss_type="bnpo", num_tokens=10)
    with pytest.raises(ConfigError, match="epsilon"):
        policy_loss(logp, old_logp, adv, mask, epsilon=1.5)
    with pytest.raises(ConfigError, match="epsilon_high"):
        policy_loss(logp, old_logp, adv, mask, loss_type="cispo", epsilon_high=0.0)
    with pytest.raises(BatchError, match=r"rewards\[1\] is nan"):
        group_advantages([1.0, float("nan")], 2)
    with pytest.raises(BatchError, match="not a positive multiple of group_size=4"):
        group_advantages([1.0, 0.0, 1.0], 4)
    with pytest.raises(ConfigError, match="scale_rewards"):
        group_advantages([1.0, 0.0], 2, scale_rewards="prompt")
    with pytest.raises(ConfigError, match="group_size"):
        nonzero_variance_mask([1.0, 0.0], 0)
    # one family: the CLI and API print RLError in one line; ValueError for plain Python callers
    assert issubclass(BatchError, RLError) and issubclass(BatchError, ValueError)
    assert issubclass(ConfigError, RLError) and issubclass(ConfigError, ValueError)
