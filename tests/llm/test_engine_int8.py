"""The engine with weight-only int8 weights (``EngineConfig(weights="int8")``): close to the float
model, a request's tokens independent of its batch, adapters on top, bad settings refused."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the engine needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="LoRA checkpoints need peft")

from tiny_lm import make_model, one_step_lora  # noqa: E402

from resonance_os.llm.engine import EngineConfig, GenerationEngine
from resonance_os.llm.int8_weights import WEIGHTS_ENV, Int8Linear
from resonance_os.llm.sampling_params import SamplingParams
from resonance_os.rl.errors import ConfigError

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine zero one two"]
GREEDY = SamplingParams(max_tokens=10, temperature=0, ignore_eos=True, logprobs=True)


def int8_engine(tokenizer) -> GenerationEngine:
    return GenerationEngine(make_model(len(tokenizer), context=128), tokenizer, EngineConfig(weights="int8"))


def logprobs(choice) -> torch.Tensor:
    return torch.tensor([lp.logprob for lp in choice.logprobs])


def test_int8_weights_replace_every_linear_and_stay_close_to_the_float_model(tokenizer, engine):
    with int8_engine(tokenizer) as quantized:
        linears = [m for m in quantized.model.modules() if isinstance(m, torch.nn.Linear)]
        assert not linears and any(isinstance(m, Int8Linear) for m in quantized.model.modules())
        assert isinstance(quantized.model.get_output_embeddings(), Int8Linear)
        prompt = engine.encode(PROMPTS[0])
        float_choice = engine.submit(prompt, GREEDY).result(timeout=60).choices[0]
        # the int8 model scores the float model's greedy tokens almost as the float model does
        scored = quantized.submit(
            prompt + float_choice.token_ids[:-1],
            SamplingParams(max_tokens=1, temperature=0, prompt_logprobs=True, ignore_eos=True),
        ).result(timeout=60)
        got = torch.tensor(scored.prompt_logprobs[len(prompt) :])
        assert got.shape == (len(float_choice.token_ids) - 1,)
        assert torch.allclose(got, logprobs(float_choice)[:-1], atol=0.1)
        assert not torch.equal(got, logprobs(float_choice)[:-1])  # int8, not the float weights


def test_a_requests_tokens_do_not_depend_on_the_requests_beside_it(tokenizer):
    with int8_engine(tokenizer) as quantized:
        prompts = [quantized.encode(p) for p in PROMPTS]
        alone = quantized.submit(prompts[0], GREEDY).result(timeout=60).choices[0]
        handles = [quantized.submit(p, GREEDY) for p in prompts]  # one batch of three
        together = handles[0].result(timeout=60).choices[0]
        assert together.token_ids == alone.token_ids
        assert torch.equal(logprobs(together), logprobs(alone))


def test_an_adapter_serves_on_int8_weights(tmp_path, tokenizer):
    one_step_lora(tokenizer, tmp_path / "run" / "policy")
    with int8_engine(tokenizer) as quantized:
        quantized.load_adapter("tuned", tmp_path / "run")
        prompt = quantized.encode(PROMPTS[1])
        base = quantized.submit(prompt, GREEDY)
        tuned = quantized.submit(prompt, GREEDY, adapter="tuned")
        base, tuned = base.result(timeout=60).choices[0], tuned.result(timeout=60).choices[0]
        assert not torch.allclose(logprobs(base), logprobs(tuned), atol=1e-3)


def test_bad_weight_formats_are_refused_naming_the_choices(monkeypatch):
    with pytest.raises(ConfigError, match="weights 'int4' is not one of float, int8"):
        EngineConfig(weights="int4")
    monkeypatch.setenv(WEIGHTS_ENV, "fp8")
    with pytest.raises(ConfigError, match="weights 'fp8' is not one of float, int8"):
        EngineConfig()
    monkeypatch.setenv(WEIGHTS_ENV, "int8")
    assert EngineConfig().weights == "int8"
