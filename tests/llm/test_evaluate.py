"""pass@k: Chen et al.'s estimator, and evaluate_pass_at_k on the tiny seeded model."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.evaluate import evaluate_pass_at_k, pass_at_k  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.sampling import sample  # noqa: E402
from resonance_os.rl.errors import ConfigError  # noqa: E402


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))  # 0.7
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 3, 3) == 1.0  # fewer than k failures: some k-subset always passes
    with pytest.raises(ConfigError):
        pass_at_k(4, 5, 1)
    with pytest.raises(ConfigError):
        pass_at_k(4, 1, 5)


@pytest.fixture(scope="module")
def policy():
    tokenizer = make_tokenizer()
    return LMPolicy(tokenizer, make_model(len(tokenizer)), PolicyConfig(lora_rank=2))


def has_cat(prompts, completions):
    return [1.0 if "cat" in c.split() else -1.0 for c in completions]


def test_counts_match_the_samples_and_the_seed_fixes_them(policy):
    prompts = ["the cat", "a dog", "one two", "big red"]
    options = dict(max_new_tokens=6, temperature=1.0, chat_template=False)
    result = evaluate_pass_at_k(
        policy, prompts, has_cat, samples=5, ks=(1, 2), prompts_per_batch=3, seed=7, **options
    )
    expected = []
    for start in (0, 3):  # the batches the evaluation draws: seeds 7 + start
        drawn = sample(policy, prompts[start : start + 3], n=5, seed=7 + start, **options)
        expected += [
            sum("cat" in t.split() for t in drawn.texts[i * 5 : (i + 1) * 5])
            for i in range(len(drawn.texts) // 5)
        ]
    assert result.passes == expected
    assert 0 < sum(expected) < 20  # the check is not vacuous: some pass, some fail
    assert result.pass_at[1] == pytest.approx(sum(c / 5 for c in expected) / 4)
    assert result.pass_at[2] == pytest.approx(sum(pass_at_k(5, c, 2) for c in expected) / 4)
    assert result.pass_at[2] >= result.pass_at[1]
    again = evaluate_pass_at_k(
        policy, prompts, has_cat, samples=5, ks=(1, 2), prompts_per_batch=3, seed=7, **options
    )
    assert again.to_dict() == result.to_dict()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"samples": 0}, "samples=0"),
        ({"samples": 2, "ks": (3,)}, "ks="),
        ({"prompts_per_batch": 0}, "prompts_per_batch"),
    ],
)
def test_bad_settings_are_named(policy, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        evaluate_pass_at_k(policy, ["the cat"], has_cat, **kwargs)
