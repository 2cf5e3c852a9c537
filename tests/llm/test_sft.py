"""Supervised fine-tuning (llm.sft.SFT) on the tiny seeded Llama: the loss, learning, seeding, resume, errors."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.errors import PromptTooLongError  # noqa: E402
from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.rewards import DIGIT_WORDS, build_reward  # noqa: E402
from resonance_os.llm.sampling import sample  # noqa: E402
from resonance_os.llm.sft import SFT, SFTConfig  # noqa: E402
from resonance_os.rl.errors import CheckpointError, ConfigError  # noqa: E402
from resonance_os.rl.logger import read_metrics  # noqa: E402

LORA = PolicyConfig(lora_rank=4, lora_alpha=8)
PAIRS = [("the cat sat", "on the mat"), ("a dog", "ran under the tree"), ("one two", "three four five")]


def make_policy(config: PolicyConfig = LORA) -> LMPolicy:
    tok = make_tokenizer()
    return LMPolicy(tok, make_model(len(tok)), config)


def sort_task() -> tuple[list[tuple[str, str]], list[str]]:
    """Sort three digit words: 940 training pairs and 60 held-out prompts (a seeded split)."""
    combos = list(itertools.product(range(10), repeat=3))
    random.Random(0).shuffle(combos)
    words = lambda ds: " ".join(DIGIT_WORDS[d] for d in ds)  # noqa: E731
    return [(words(c), words(sorted(c))) for c in combos[60:]], [words(c) for c in combos[:60]]


def held_out_pass_rate(policy: LMPolicy, prompts: list[str]) -> float:
    samples = sample(policy, prompts, n=4, max_new_tokens=6, seed=7)
    scores = build_reward("digits_sorted")([prompts[i] for i in samples.prompt_index], samples.texts)
    return sum(s > 0 for s in scores) / len(scores)


def test_loss_is_transformers_own_completion_only_loss():
    """Prompts of one length (no left padding, so transformers' default positions agree), completions
    right-padded: our step-1 loss equals the model's own cross-entropy with -100 on prompt and padding."""
    pairs = [("the cat sat", "on the mat"), ("a big dog", "ran"), ("one two three", "four five six seven")]
    policy = make_policy(PolicyConfig(finetune="full"))
    trainer = SFT(policy, pairs, SFTConfig(batch_size=3, chat_template=False, seed=0))
    input_ids, attention_mask, completion_mask = trainer._collate([0, 1, 2])
    labels = input_ids.clone()
    width = completion_mask.shape[1]
    labels[:, :-width] = -100
    labels[:, -width:][completion_mask == 0] = -100
    with torch.no_grad():
        expected = policy.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    trainer.learn(1)
    assert trainer.history[0]["loss"] == pytest.approx(float(expected), abs=1e-6)
    assert trainer.history[0]["num_tokens"] == int(completion_mask.sum()) == 3 + 1 + 4 + 3  # with EOS


def test_warm_up_teaches_the_sort_task_and_to_stop(tmp_path):
    pairs, held_out = sort_task()
    policy = make_policy(PolicyConfig(finetune="full"))
    before = held_out_pass_rate(policy, held_out)
    trainer = SFT(policy, pairs, SFTConfig(batch_size=32, learning_rate=3e-3, seed=0), log_dir=tmp_path)
    trainer.learn(30)
    after = held_out_pass_rate(policy, held_out)
    assert before == 0.0 and after >= 0.4, (before, after)
    rows = read_metrics(tmp_path)
    assert len(rows) == 30 and rows[-1]["loss"] < 0.5 * rows[0]["loss"]
    assert rows[-1]["epoch"] == pytest.approx(30 * 32 / len(pairs))
    finished = sample(policy, held_out[:8], n=1, max_new_tokens=10, seed=0).finish_reasons
    assert finished.count("eos") >= 6  # learnt to end after the answer


def test_evaluate_gives_the_held_out_loss_without_training():
    pairs, held_out = sort_task()
    answers = [(p, " ".join(sorted(p.split(), key=DIGIT_WORDS.index))) for p in held_out]
    trainer = SFT(
        make_policy(PolicyConfig(finetune="full")),
        pairs,
        SFTConfig(batch_size=32, learning_rate=3e-3, seed=0),
    )
    before = [p.detach().clone() for p in trainer.policy.trainable_parameters()]
    untrained = trainer.evaluate(answers, batch_size=7)
    assert untrained == pytest.approx(
        trainer.evaluate(answers, batch_size=60), abs=1e-5
    )  # batching: same mean
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policy.trainable_parameters()))
    trainer.learn(10)
    assert trainer.evaluate(answers) < 0.5 * untrained
    assert trainer.evaluate() == pytest.approx(
        trainer.evaluate(pairs), abs=1e-5
    )  # default: the training pairs
    with pytest.raises(ConfigError, match="batch_size=0"):
        trainer.evaluate(answers, batch_size=0)


def test_same_seed_same_run_and_resume_equals_uninterrupted(tmp_path):
    cfg = SFTConfig(batch_size=2, learning_rate=1e-2, seed=3)
    drop = ("time_elapsed", "time_step", "tokens_per_second")
    clean = lambda rows: [{k: v for k, v in r.items() if k not in drop} for r in rows]  # noqa: E731
    straight = SFT(make_policy(), PAIRS, cfg).learn(4)
    assert clean(SFT(make_policy(), PAIRS, cfg).learn(4).history) == clean(straight.history)

    first = SFT(make_policy(), PAIRS, cfg).learn(2)
    first.save(tmp_path / "ckpt")
    resumed = SFT.load(tmp_path / "ckpt", make_policy(), PAIRS)
    assert resumed.num_timesteps == 2 and resumed.config == cfg
    resumed.learn(2, reset_num_timesteps=False)
    assert clean(resumed.history) == clean(straight.history[2:])
    for a, b in zip(straight.policy.trainable_parameters(), resumed.policy.trainable_parameters()):
        assert torch.equal(a, b)


def test_warmed_up_checkpoint_starts_grpo(tmp_path):
    """The SFT checkpoint is a policy checkpoint: LMPolicy.load reads it and GRPO trains from it."""
    trainer = SFT(make_policy(), PAIRS, SFTConfig(batch_size=3, learning_rate=1e-2, seed=0)).learn(3)
    trainer.save(tmp_path / "warm")
    tok = make_tokenizer()
    policy = LMPolicy.load(tmp_path / "warm", tok, make_model(len(tok)))
    for a, b in zip(trainer.policy.trainable_parameters(), policy.trainable_parameters()):
        assert torch.equal(a, b)
    grpo = GRPO(
        policy,
        lambda p, c: [float(len(x)) for x in c],
        ["the cat"],
        GRPOConfig(group_size=2, max_new_tokens=8, seed=0),
    )
    assert grpo.learn(1).num_timesteps == 1
    grpo.save(tmp_path / "grpo")
    with pytest.raises(CheckpointError, match="SFT.save"):
        SFT.load(tmp_path / "grpo", make_policy(), PAIRS)
    with pytest.raises(CheckpointError, match="lora_rank"):
        SFT.load(tmp_path / "warm", make_policy(PolicyConfig(lora_rank=2)), PAIRS)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([], "non-empty list"),
        ("the cat", "non-empty list"),
        ([("the cat", "sat", "on")], r"pairs\[0\]=.* must be a \(prompt, completion\) tuple"),
        ([{"prompt": "the cat"}], r"pairs\[0\]"),
        ([("the cat", "  ")], r"pairs\[0\] has completion '  '"),
        ([("a", "b"), ("the cat", None)], r"pairs\[1\] has completion None"),
    ],
)
def test_bad_pairs_are_named(pairs, message):
    with pytest.raises(ConfigError, match=message):
        SFT(make_policy(), pairs, SFTConfig(seed=0))


def test_too_long_pair_and_bad_config_are_named():
    with pytest.raises(PromptTooLongError, match="pair 1 has"):
        SFT(make_policy(), [("a", "b"), ("the cat", "sat " * 70)], SFTConfig(seed=0))
    with pytest.raises(ConfigError, match=r"SFTConfig.batch_size=0"):
        SFTConfig(batch_size=0)
    with pytest.raises(ConfigError, match=r"SFTConfig.learning_rate=nan"):
        SFTConfig(learning_rate=float("nan"))
    with pytest.raises(ConfigError, match="unknown SFT settings"):
        SFT(make_policy(), PAIRS, {"batch_size": 2, "epochs": 3})
    assert SFTConfig.from_json(SFTConfig(batch_size=4, seed=1).to_json()) == SFTConfig(batch_size=4, seed=1)
