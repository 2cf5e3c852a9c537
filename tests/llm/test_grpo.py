"""The GRPO trainer on the tiny seeded Llama (about 80k parameters): metrics, seeding, resume, errors, learning."""

from __future__ import annotations

import json
import math

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.errors import PromptTooLongError
from resonance_os.llm.grpo import GRPO, GRPOConfig, RewardError, soft_overlong_punishment
from resonance_os.llm.policy import LMPolicy, PolicyConfig
from resonance_os.llm.sampling import concat_samples, sample
from resonance_os.rl.errors import CheckpointError, ConfigError
from resonance_os.rl.logger import read_metrics

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three", "hello world", "red blue green"]
LORA = PolicyConfig(lora_rank=4, lora_alpha=8)
TIMING = ("time_elapsed", "tokens_per_second", "time_generate", "time_score", "time_reference", "time_train",
          "time_step")  # fmt: skip


def cat_freq(prompts, completions):
    """Share of the completion's words that are "cat": learnable token by token from a random init."""
    return [c.split().count("cat") / max(len(c.split()), 1) for c in completions]


def short(prompts, completions):
    return [-len(c.split()) / 10 for c in completions]


def make_policy(config: PolicyConfig = LORA) -> LMPolicy:
    tok = make_tokenizer()
    return LMPolicy(tok, make_model(len(tok)), config)


def small_config(**kw) -> GRPOConfig:
    base = dict(group_size=4, prompts_per_step=2, max_new_tokens=6, learning_rate=5e-3, seed=0)
    return GRPOConfig(**{**base, **kw})


def without_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_one_step_runs_and_logs_every_metric(tmp_path):
    cfg = small_config(beta=0.04, num_iterations=2, minibatch_size=4)
    trainer = GRPO(make_policy(), [(cat_freq, 1.0), (short, 0.1)], PROMPTS, cfg, log_dir=tmp_path)
    trainer.learn(1, progress_bar=False)
    (row,) = read_metrics(tmp_path)
    expected = {
        "timesteps", "episode_reward_mean", "episode_reward_std", "reward_cat_freq", "reward_short",
        "pass_rate", "groups_kept", "loss", "kl", "approx_kl", "clip_fraction", "grad_norm", "entropy",
        "completion_length", "truncated_fraction", "learning_rate", *TIMING,
    }  # fmt: skip
    assert expected <= set(row), expected - set(row)
    assert all(isinstance(row[k], (int, float)) and math.isfinite(row[k]) for k in expected), row
    assert row["timesteps"] == 1 and trainer.num_timesteps == 1
    assert row["episode_reward_mean"] == pytest.approx(
        row["reward_cat_freq"] + 0.1 * row["reward_short"], abs=1e-6
    )
    assert 0 < row["completion_length"] <= 6 and row["entropy"] > 0 and row["kl"] >= 0
    assert row["time_step"] >= row["time_generate"] + row["time_train"]
    # `resonance plot` draws the log
    from resonance_os.cli.plot import draw_learning_curves

    drawn = draw_learning_curves(read_metrics(tmp_path), tmp_path / "curves.png")
    assert "episode_reward_mean" in drawn and "clip_fraction" in drawn and (tmp_path / "curves.png").is_file()


@pytest.mark.parametrize("num_iterations", [1, 2])
def test_bf16_rollouts_take_pi_old_from_the_policy_and_weigh_the_loss(tmp_path, num_iterations):
    """Completions sampled by a bf16 copy: the step logs how far the copy is from the policy, and
    the loss uses the policy's own log-probs as pi_old (the sampler's only in the correction)."""
    minibatch = None if num_iterations == 1 else 4  # one update a batch, or four
    cfg = small_config(rollout_dtype="bfloat16", num_iterations=num_iterations, minibatch_size=minibatch)
    policy = make_policy()
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    trainer = GRPO(policy, short, PROMPTS, cfg, log_dir=tmp_path)
    assert trainer.rollout_dtype is torch.bfloat16
    trainer.learn(2, progress_bar=False)
    rows = read_metrics(tmp_path)
    for row in rows:
        assert 0 < row["rollout_kl"] < 0.05, row  # bf16 rounding: small, never zero
        assert 0 < row["rollout_weight_mean"] <= 3.0 and 0 <= row["rollout_weight_zero"] <= 1
        assert math.isfinite(row["loss"]) and math.isfinite(row["approx_kl"])
        if num_iterations == 1:  # one update a batch: pi_old is the policy at that update, not the sampler
            assert row["approx_kl"] == 0.0
    assert all(v.dtype == torch.float32 for v in policy.model.state_dict().values())  # the policy stays fp32
    changed = [k for k, v in policy.model.state_dict().items() if not torch.equal(v, before[k])]
    assert changed and all("lora_" in k for k in changed)  # only the adapters trained
    exact = GRPO(
        make_policy(), short, PROMPTS, small_config(num_iterations=num_iterations, minibatch_size=minibatch)
    )
    assert exact.rollout_dtype is None and "rollout_kl" not in exact.learn(1, progress_bar=False).history[0]
    mixed = GRPO(make_policy(), short, PROMPTS, small_config(mixed_precision="bfloat16", minibatch_size=minibatch,
                                                             num_iterations=num_iterations))  # fmt: skip
    row = mixed.learn(1, progress_bar=False).history[0]  # float32 samples, a bf16 update: corrected too
    assert mixed.rollout_dtype is None and 0 < row["rollout_kl"] < 0.05


def test_same_seed_same_metrics():
    cfg = small_config(num_iterations=2, minibatch_size=4)
    runs = [
        GRPO(make_policy(), cat_freq, PROMPTS, cfg).learn(2, progress_bar=False).history for _ in range(2)
    ]
    assert without_timing(runs[0]) == without_timing(runs[1])
    other = GRPO(make_policy(), cat_freq, PROMPTS, small_config(seed=1)).learn(1, progress_bar=False).history
    assert without_timing(other)[0] != without_timing(runs[0])[0]


@pytest.mark.parametrize("finetune", ["lora", "full"])
def test_save_load_continue_equals_uninterrupted(tmp_path, finetune):
    policy_cfg = LORA if finetune == "lora" else PolicyConfig(finetune="full")
    cfg = small_config(beta=0.02)
    straight = GRPO(make_policy(policy_cfg), cat_freq, PROMPTS, cfg).learn(3, progress_bar=False)

    first = GRPO(make_policy(policy_cfg), cat_freq, PROMPTS, cfg).learn(1, progress_bar=False)
    first.save(tmp_path / "ckpt")
    resumed = GRPO.load(
        tmp_path / "ckpt", policy=make_policy(policy_cfg), reward_fn=cat_freq, prompts=PROMPTS
    )
    assert resumed.num_timesteps == 1 and resumed.config == cfg
    for a, b in zip(first.policy.trainable_parameters(), resumed.policy.trainable_parameters()):
        assert torch.equal(a, b)
    resumed.learn(2, progress_bar=False, reset_num_timesteps=False)
    assert resumed.num_timesteps == 3
    assert without_timing(resumed.history) == without_timing(straight.history[1:])
    for a, b in zip(straight.policy.trainable_parameters(), resumed.policy.trainable_parameters()):
        assert torch.equal(a, b)


def test_load_refuses_a_mismatched_policy_or_a_bare_policy_checkpoint(tmp_path):
    trainer = GRPO(make_policy(), cat_freq, PROMPTS, small_config())
    trainer.save(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match="lora_rank"):
        GRPO.load(tmp_path / "ckpt", make_policy(PolicyConfig(lora_rank=2)), cat_freq, PROMPTS)
    trainer.policy.save(tmp_path / "bare")
    with pytest.raises(CheckpointError, match="LMPolicy.load"):
        GRPO.load(tmp_path / "bare", make_policy(), cat_freq, PROMPTS)


@pytest.mark.parametrize(
    ("reward", "message"),
    [
        (lambda p, c: [0.0] * (len(c) - 1), r"'fn0' returned 7 rewards for 8 completions"),
        (lambda p, c: [float("nan")] * len(c), r"'fn0' returned nan for completion 0"),
        (lambda p, c: ["good"] * len(c), r"'fn0' returned 'good' \(str\)"),
        (lambda p, c: None, r"'fn0' returned NoneType; return a list of floats"),
    ],
)
def test_reward_errors_name_the_function(reward, message):
    trainer = GRPO(make_policy(), reward, PROMPTS, small_config())
    with pytest.raises(RewardError, match=message):
        trainer.learn(1, progress_bar=False)


def test_bad_reward_spec_and_too_long_prompt():
    with pytest.raises(ConfigError, match="reward_fn"):
        GRPO(make_policy(), [], PROMPTS, small_config())
    with pytest.raises(ConfigError, match=r"reward_fn\[1\]"):
        GRPO(make_policy(), [cat_freq, ("short", 1.0)], PROMPTS, small_config())
    with pytest.raises(PromptTooLongError, match="prompt 1 has"):
        GRPO(make_policy(), cat_freq, ["a", "the cat " * 30], small_config())
    with pytest.raises(ConfigError, match="prompts"):
        GRPO(make_policy(), cat_freq, [], small_config())


def test_zero_variance_filter_skips_the_update():
    trainer = GRPO(
        make_policy(), lambda p, c: [1.0] * len(c), PROMPTS, small_config(filter_zero_variance=True)
    )
    before = [p.detach().clone() for p in trainer.policy.trainable_parameters()]
    trainer.learn(1, progress_bar=False)
    row = trainer.history[0]
    assert row["groups_kept"] == 0 and row["loss"] is None and row["pass_rate"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policy.trainable_parameters()))


def test_dynamic_sampling_samples_more_prompts_until_groups_differ():
    """At the random init most groups score 0 on cat_freq (no "cat" at all): filtering keeps few of
    them, dynamic sampling generates more rounds to fill the step; the step's own reward metrics are
    the same (they describe the step's prompts, not the extra draws)."""
    filtered = GRPO(
        make_policy(), cat_freq, PROMPTS, small_config(filter_zero_variance=True, max_new_tokens=8)
    )
    dynamic = GRPO(make_policy(), cat_freq, PROMPTS, small_config(dynamic_sampling=True, max_new_tokens=8,
                                                                  max_sampling_rounds=4))  # fmt: skip
    (f,), (d,) = filtered.learn(1).history, dynamic.learn(1).history
    assert f["groups_kept"] < 1.0 and d["sampling_rounds"] > 1 and d["groups_kept"] > f["groups_kept"]
    assert d["episode_reward_mean"] == f["episode_reward_mean"]
    same_for_all = GRPO(
        make_policy(), lambda p, c: [1.0] * len(c), PROMPTS, small_config(dynamic_sampling=True)
    )
    before = [p.detach().clone() for p in same_for_all.policy.trainable_parameters()]
    (row,) = same_for_all.learn(1).history
    assert row["sampling_rounds"] == 3 and row["groups_kept"] == 0 and row["loss"] is None
    assert all(torch.equal(a, b) for a, b in zip(before, same_for_all.policy.trainable_parameters()))


def solved_hello(prompts, completions):
    """+1 for every completion of a prompt about "hello" (pass rate 1), -1 elsewhere (pass rate 0)."""
    return [1.0 if "hello" in str(p) else -1.0 for p in prompts]


def test_retire_pass_rate_drops_solved_prompts_from_later_passes(tmp_path):
    hello = PROMPTS.index("hello world")
    cfg = small_config(retire_pass_rate=0.9)
    trainer = GRPO(make_policy(), solved_hello, PROMPTS, cfg).learn(6, progress_bar=False)
    drawn = [trainer._prompt_indices(step) for step in range(6)]
    first_pass = [i for step in drawn for i in step][: len(PROMPTS)]
    assert sorted(first_pass) == list(range(len(PROMPTS)))  # every prompt once before any retirement
    retired_at = next(step for step, row in enumerate(trainer.history) if row["prompts_retired"] == 1)
    later = [i for step in drawn[retired_at + 1 :] for i in step][len(PROMPTS) :]
    assert trainer.retired == {hello} and hello not in later and later
    # without the option, every prompt keeps coming back
    plain = GRPO(make_policy(), solved_hello, PROMPTS, small_config()).learn(6, progress_bar=False)
    assert "prompts_retired" not in plain.history[0] and plain.retired == set()
    # a checkpoint carries the retired prompts and the order, so a resumed run continues the same
    half = GRPO(make_policy(), solved_hello, PROMPTS, cfg).learn(3, progress_bar=False)
    half.save(tmp_path / "ckpt")
    resumed = GRPO.load(tmp_path / "ckpt", policy=make_policy(), reward_fn=solved_hello, prompts=PROMPTS)
    resumed.learn(3, progress_bar=False, reset_num_timesteps=False)
    assert resumed.retired == trainer.retired
    assert [resumed._prompt_indices(s) for s in range(6)] == drawn
    assert without_timing(resumed.history) == without_timing(trainer.history[3:])


def test_overlong_filter_gives_truncated_completions_no_gradient():
    def trained(**kw) -> bool:
        letters = lambda p, c: [float(len(x)) for x in c]  # noqa: E731  (differs within a group)
        trainer = GRPO(make_policy(), letters, PROMPTS, small_config(max_new_tokens=1, **kw))
        before = [p.detach().clone() for p in trainer.policy.trainable_parameters()]
        (row,) = trainer.learn(1).history
        assert row["truncated_fraction"] == 1.0  # one token each, none of them EOS (seeded)
        return not all(torch.equal(a, b) for a, b in zip(before, trainer.policy.trainable_parameters()))

    assert trained() and not trained(overlong_filter=True)


def test_soft_overlong_punishment_is_dapos_linear_ramp_and_enters_the_reward():
    lengths = torch.tensor([0, 12, 13, 14, 16])
    assert soft_overlong_punishment(lengths, 16, 4, 0.5).tolist() == [0.0, 0.0, -0.125, -0.25, -0.5]
    trainer = GRPO(make_policy(), cat_freq, PROMPTS, small_config(max_new_tokens=8, overlong_buffer=6))
    (row,) = trainer.learn(1).history
    assert row["reward_overlong"] < 0
    assert row["episode_reward_mean"] == pytest.approx(
        row["reward_cat_freq"] + row["reward_overlong"], abs=1e-6
    )


def test_concatenated_samples_keep_their_log_probs():
    policy = make_policy()
    a = sample(policy, PROMPTS[:2], n=2, max_new_tokens=5, seed=1, chat_template=False)
    b = sample(policy, PROMPTS[2:], n=2, max_new_tokens=3, seed=2, chat_template=False)
    merged = concat_samples([a, b], int(policy.tokenizer.pad_token_id))
    assert merged.prompt_index == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4] and merged.texts == a.texts + b.texts
    with torch.no_grad():
        logp = policy.token_logprobs(merged.input_ids, merged.attention_mask, merged.completion_mask)
    assert torch.allclose(logp, merged.logprobs, atol=1e-4)


def test_callback_can_stop_training():
    seen = []
    trainer = GRPO(make_policy(), cat_freq, PROMPTS, small_config())
    trainer.learn(
        5, callback=lambda t, row: seen.append(row["timesteps"]) or len(seen) < 2, progress_bar=False
    )
    assert seen == [1, 2] and trainer.num_timesteps == 2


def test_config_json_round_trip_and_overrides():
    cfg = GRPOConfig(group_size=4, stop=("\n",), loss_type="cispo", epsilon_high=4.0, aggregation="prompt",
                     scale_rewards=None, minibatch_size=8, max_grad_norm=None, seed=3, max_new_tokens=8)  # fmt: skip
    assert GRPOConfig.from_json(cfg.to_json()) == cfg
    assert json.loads(cfg.to_json())["stop"] == ["\n"]
    trainer = GRPO(make_policy(), cat_freq, PROMPTS, cfg.to_dict(), group_size=2, minibatch_size=None)
    assert trainer.config.group_size == 2 and trainer.config.loss_type == "cispo"
    drawn = GRPO(make_policy(), cat_freq, PROMPTS, GRPOConfig(max_new_tokens=8, seed=None)).config.seed
    assert isinstance(drawn, int)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("group_size", 1),
        ("prompts_per_step", 0),
        ("max_new_tokens", 2.5),
        ("temperature", 0.0),
        ("top_p", 1.5),
        ("stop", [""]),
        ("learning_rate", -1.0),
        ("num_iterations", 0),
        ("minibatch_size", 6),
        ("loss_type", "ppo"),
        ("epsilon", 1.0),
        ("epsilon_high", 0.0),
        ("beta", -0.1),
        ("aggregation", "mean"),
        ("scale_rewards", "std"),
        ("max_grad_norm", 0.0),
        ("seed", "zero"),
        ("dynamic_sampling", "yes"),
        ("max_sampling_rounds", 0),
        ("overlong_filter", 1),
        ("overlong_buffer", 64),
        ("overlong_penalty", -1.0),
        ("retire_pass_rate", 0.0),
        ("retire_pass_rate", 1.5),
        ("rollout_dtype", "int8"),
        ("mixed_precision", "float16"),
        ("rollout_correction", "clip"),
        ("rollout_correction_max", -1.0),
        ("rollout_correction_min", 5.0),
    ],
)
def test_config_validation_names_field_and_fix(field, value):
    with pytest.raises(ConfigError, match=rf"GRPOConfig\.{field}=.*must"):
        GRPOConfig(**{"group_size": 4, field: value})


def test_config_rejects_unknown_settings_and_bad_json():
    with pytest.raises(ConfigError, match="unknown GRPO settings"):
        GRPOConfig.from_dict({"groupsize": 4})
    with pytest.raises(ConfigError, match="not valid JSON"):
        GRPOConfig.from_json("{")


@pytest.mark.parametrize(
    "options",
    [
        {"loss_type": "dapo"},
        {"loss_type": "grpo"},
        {"loss_type": "cispo"},
        {"loss_type": "gspo"},
        {"loss_type": "dr_grpo", "scale_rewards": "none"},
        {"loss_type": "dapo", "epsilon_high": 0.28, "num_iterations": 2, "minibatch_size": 16, "beta": 0.01},
        {"loss_type": "gspo_plus"},
        {"loss_type": "dapo", "dynamic_sampling": True, "overlong_filter": True, "overlong_buffer": 4},
        {"loss_type": "dapo", "rollout_dtype": "bfloat16", "mixed_precision": "bfloat16"},
        {
            "loss_type": "grpo",
            "rollout_dtype": "bfloat16",
            "rollout_correction": "token_truncate",
            "num_iterations": 2,
            "minibatch_size": 16,
        },
    ],
    ids=[
        "dapo",
        "grpo",
        "cispo",
        "gspo",
        "dr_grpo",
        "dapo-K2-minibatch-kl",
        "gspo_plus",
        "dapo-full",
        "dapo-bf16-rollouts",
        "grpo-bf16-rollouts-K2",
    ],
)
def test_learns_to_say_the_target_word(options):
    """Reward = share of "cat" in the completion; from the random init at temperature 1 it starts near 0."""
    cfg = GRPOConfig(
        group_size=8, prompts_per_step=4, max_new_tokens=8, learning_rate=2e-3, seed=0, **options
    )
    trainer = GRPO(make_policy(), cat_freq, PROMPTS, cfg).learn(12, progress_bar=False)
    rewards = [row["episode_reward_mean"] for row in trainer.history]
    assert rewards[0] < 0.05
    assert sum(rewards[-3:]) / 3 > rewards[0] + 0.3, rewards
