"""Per-request residual-stream additions in the generation engine (activation steering), on the tiny
model: each row gets its own additions as rows join and leave the batch, a steered prompt's cache is
never an unsteered one's, and zero additions are the unsteered request bit for bit."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the engine needs the local extra (transformers)")

from tiny_lm import make_model  # noqa: E402

from resonance_os.llm.engine import EngineConfig, GenerationEngine  # noqa: E402
from resonance_os.llm.errors import ConfigError  # noqa: E402
from resonance_os.llm.sampling_params import SamplingParams  # noqa: E402
from resonance_os.llm.steering import steering  # noqa: E402

H = 64  # make_model's hidden size
PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine zero one two"]


def _vectors(seed: int) -> torch.Tensor:
    return 3.0 * torch.randn(2, H, generator=torch.Generator().manual_seed(seed))


STEERS = [  # one per prompt: two layers, none, one layer
    {0: _vectors(1)[0], 1: _vectors(1)[1]},
    None,
    {1: _vectors(2)[1]},
]


def _greedy(params: int) -> SamplingParams:
    return SamplingParams(max_tokens=params, temperature=0, ignore_eos=True)


def reference_greedy(model, prompt: list[int], additions, tokens: int) -> list[int]:
    """Greedy decoding alone with transformers' ``generate`` inside the ``steering`` hooks."""
    with steering(model, additions or {}), torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]), max_new_tokens=tokens, do_sample=False, pad_token_id=0, eos_token_id=None
        )
    return out[0, len(prompt) :].tolist()


def test_each_row_is_steered_by_its_own_additions_as_rows_join_and_leave(tokenizer, engine):
    reference = make_model(len(tokenizer), context=128)
    prompts = [engine.encode_chat([{"role": "user", "content": p}]) for p in PROMPTS]
    lengths = [14, 4, 8]  # the rows leave at different steps
    first = engine.submit(prompts[0], _greedy(lengths[0]), additions=STEERS[0])
    stream = iter(first)
    next(stream)  # the first row is decoding before the others join
    later = [
        engine.submit(p, _greedy(n), additions=a) for p, n, a in zip(prompts[1:], lengths[1:], STEERS[1:])
    ]
    got = [h.result(timeout=60).choices[0].token_ids for h in [first, *later]]
    for prompt, additions, n, tokens in zip(prompts, STEERS, lengths, got):
        assert tokens == reference_greedy(reference, prompt, additions, n)
    plain = [
        engine.submit(p, _greedy(n)).result(timeout=60).choices[0].token_ids for p, n in zip(prompts, lengths)
    ]
    assert got[0] != plain[0] and got[2] != plain[2]  # the additions change the text
    assert got[1] == plain[1]


def test_same_prompt_different_additions_never_share_a_prefix(tokenizer):
    model = make_model(len(tokenizer), context=128)
    config = EngineConfig(min_prefix_tokens=4)
    prompt = GenerationEngine(model, tokenizer, config).encode_chat([{"role": "user", "content": PROMPTS[2]}])
    params = SamplingParams(max_tokens=10, temperature=1.0, seed=7, logprobs=True, ignore_eos=True)
    steers = [None, {1: _vectors(3)[1]}, {1: -_vectors(3)[1]}]

    def alone(additions):
        with GenerationEngine(make_model(len(tokenizer), context=128), tokenizer, config) as eng:
            return eng.submit(prompt, params, additions=additions).result(timeout=60)

    expected = [alone(a) for a in steers]
    with GenerationEngine(model, tokenizer, config) as eng:
        together = [eng.submit(prompt, params, additions=a) for a in steers]
        results = [h.result(timeout=60) for h in together]
        assert [h.prefill_tokens for h in together] == [len(prompt)] * 3  # each computed its own prompt
        again = eng.submit(prompt, params, additions={1: _vectors(3)[1].clone()})
        assert again.result(timeout=60).choices[0].token_ids == results[1].choices[0].token_ids
        assert again.prefill_tokens == 1  # equal additions do share the stored prompt
    for got, want in zip(results, expected):
        assert got.choices[0].token_ids == want.choices[0].token_ids
        torch.testing.assert_close(
            torch.tensor([t.logprob for t in got.choices[0].logprobs]),
            torch.tensor([t.logprob for t in want.choices[0].logprobs]),
            atol=1e-5,
            rtol=1e-5,
        )
    assert len({tuple(r.choices[0].token_ids) for r in results}) == 3


def test_zero_additions_are_the_unsteered_request_bit_for_bit(tokenizer):
    params = SamplingParams(max_tokens=12, temperature=1.0, n=2, seed=4, logprobs=True, ignore_eos=True)

    def run(additions):
        with GenerationEngine(make_model(len(tokenizer), context=128), tokenizer) as eng:
            prompt = eng.encode_chat([{"role": "user", "content": PROMPTS[0]}])
            return eng.submit(prompt, params, additions=additions).result(timeout=60)

    plain, zeroed = run(None), run({0: torch.zeros(H), 1: [0.0] * H})
    for a, b in zip(plain.choices, zeroed.choices):
        assert a.token_ids == b.token_ids
        assert [t.logprob for t in a.logprobs] == [t.logprob for t in b.logprobs]


def test_zero_additions_share_the_unsteered_prompt_cache(engine):
    prompt = engine.encode_chat([{"role": "user", "content": PROMPTS[0]}])
    engine.submit(prompt, _greedy(2)).result(timeout=60)
    zero = engine.submit(prompt, _greedy(2), additions={0: torch.zeros(H)})
    zero.result(timeout=60)
    assert zero.prefill_tokens == 1


def test_bad_additions_are_refused_with_the_fix(engine):
    prompt = engine.encode("the cat sat")
    cases = [
        ({2: torch.ones(H)}, "layer must be a whole number from 0 to 1, got 2"),
        ({"0": torch.ones(H)}, "layer must be a whole number"),
        ({0: torch.ones(H + 1)}, rf"shape \({H + 1},\); expected \({H},\)"),
        ({0: torch.full((H,), float("nan"))}, "NaN or infinite"),
        ({0: "up"}, "not a vector of numbers"),
        ([torch.ones(H)], "mapping of decoder layer to vector"),
    ]
    for additions, message in cases:
        with pytest.raises(ConfigError, match=message):
            engine.submit(prompt, SamplingParams(max_tokens=2), additions=additions)
        with pytest.raises(ConfigError, match=message):
            engine.check(prompt, SamplingParams(max_tokens=2), additions=additions)
