"""Voice adapters: trained toward a profile (SFT on the nearest paragraphs, then HR-GRPO), stored with
the profile, picked up by the writer (which says so), turned off with ``adapter=False``, and a broken
one refused with a clear error. On the tiny seeded Llama, taught by SFT to answer with two sentences."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="voice adapters need the local extra (transformers, peft)")
pytest.importorskip("peft", reason="voice adapters need the local extra (transformers, peft)")
torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from tiny_lm import save_tiny_model  # noqa: E402

from resonance_os.core.errors import ValidationError  # noqa: E402
from resonance_os.evolution.base_models import base_model  # noqa: E402
from resonance_os.evolution.hr_grpo import hr_messages  # noqa: E402
from resonance_os.evolution.voice_adapters import (  # noqa: E402
    VoiceTraining,
    drifts_into_software,
    load_voice_policy,
    nearest_paragraphs,
    save_voice_adapter,
    split_validation,
    started_from,
    steered_candidates,
    train_voice_adapter,
    voice_policy,
)
from resonance_os.generation.backends.local import LocalBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.generation.steering_directions import SteeringDirections  # noqa: E402
from resonance_os.generation.voice_adapter import (  # noqa: E402
    VoiceAdapterError,
    adapter_dir,
    builtin_adapter_dir,
    find_adapter,
    load_voice_backend,
    load_voice_model,
    profile_key_of,
)
from resonance_os.llm.adapters import read_adapter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402

PARAGRAPH = "the big dog sat on the mat . then the red bird flew over the tree ."
OTHER = "one two three four five six seven eight nine . zero one two three four five ."
TOPICS = ["making bread at home", "the history of the bicycle"]
TARGET = BUILTIN_TEMPLATES["creative"].vector.to_list()
FAST = VoiceTraining(keep=3, sft_steps=60, sft_learning_rate=1e-2, sft_batch_size=3, grpo_steps=1,
                     grpo_learning_rate=1e-3, early_stop_every=None, min_quality=0.0)  # fmt: skip


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny", context=512)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def adapter(tiny_folder, home) -> Path:
    """acme/newsletter's voice adapter on the tiny model, stored where the writer looks for it."""
    torch.manual_seed(0)  # the LoRA's initial weights: the same whichever tests ran first
    policy = voice_policy(base=str(tiny_folder))
    candidates = [(topic, PARAGRAPH) for topic in TOPICS + ["walking meetings"]]
    policy, summary = train_voice_adapter(TARGET, candidates, prompts=TOPICS, settings=FAST, policy=policy)
    assert summary["sft_paragraphs"] == 3 and summary["grpo_steps"] == 1
    assert summary["sft_loss"][-1] < summary["sft_loss"][0]
    folder = adapter_dir("acme/newsletter", home)
    save_voice_adapter(
        policy, folder, TARGET, source="acme/newsletter", base=str(tiny_folder), summary=summary
    )
    return folder


def tiny_writer(tiny_folder, home, **kwargs) -> HumanResonantWriter:
    return HumanResonantWriter(
        backend=LocalBackend(model=base_model(str(tiny_folder))), adapter_store=home, **kwargs
    )


def test_nearest_paragraphs_keeps_the_closest_to_the_target_that_write_well_enough():
    story = (
        "Once, on a cold morning, my grandmother baked bread. Why did it smell like a summer garden? It did."
    )
    flat = "The function returns the value. The value is stored. The result is passed to the caller."
    chosen = nearest_paragraphs([("bread", flat), ("bread", story)], TARGET, keep=1, min_quality=0.0)
    assert [text for _, text, _ in chosen] == [story]  # the creative profile: the story is nearer
    with pytest.raises(Exception, match="writes well enough"):
        nearest_paragraphs([("bread", "dog dog dog dog")], TARGET, keep=1, min_quality=0.99)


STORY = (
    "Last winter my grandmother baked bread for the whole street. She kneaded the dough by the window "
    "while we waited. Then she gave every neighbour a warm loaf."
)
EXPOSITION = (
    "Bread is made from flour, water, salt and yeast. The dough is kneaded until it is smooth. "
    "It is baked at a high temperature until the crust is firm."
)


def test_sft_stops_when_the_validation_loss_stops_falling_and_keeps_its_best_weights(tiny_folder):
    from resonance_os.llm.sft import SFT

    settings = replace(FAST, sft_learning_rate=5e-2, grpo_steps=0, sft_check_every=3, sft_patience=2)
    held_out = [("counting", OTHER)] * 2  # unlike every training paragraph: overfitting raises its loss
    torch.manual_seed(0)
    policy, summary = train_voice_adapter(
        TARGET, [(topic, PARAGRAPH) for topic in TOPICS + ["walks"]], validation=held_out,
        settings=settings, policy=voice_policy(base=str(tiny_folder)),
    )  # fmt: skip
    checks = summary["sft_validation"]
    best = min(checks, key=lambda c: c["loss"])
    assert summary["sft_kept_step"] == best["step"] and summary["sft_validation_paragraphs"] == 2
    assert len(summary["sft_loss"]) == best["step"] + 2 * 3 < settings.sft_steps  # stopped: patience spent
    pairs = [(hr_messages(topic, TARGET), text) for topic, text in held_out]
    assert SFT(policy, pairs).evaluate(pairs) == pytest.approx(best["loss"], rel=1e-5)  # the best weights


class ShortParagraphs:
    """A reward model for the test: 1 for a paragraph of at most 12 words, else 0."""

    def predict(self, text: str, target_hrv) -> float:
        return float(len(text.split()) <= 12)


def test_hr_grpo_goes_on_from_a_saved_adapter_with_a_reward_model(adapter, tiny_folder, tmp_path):
    policy = load_voice_policy(adapter)
    saved = {k: v.clone() for k, v in policy.model.state_dict().items() if "lora" in k}
    assert saved and all(v.dtype == torch.float32 for v in saved.values())  # trainable again, not float16
    twin = voice_policy(base=str(tiny_folder))
    twin.load_weights_from(adapter)
    assert all(torch.equal(v, twin.model.state_dict()[k]) for k, v in saved.items())
    rows: list[dict] = []
    settings = replace(FAST, sft_steps=0, grpo_steps=1, early_stop_every=1, reward_model_weight=1.0)
    policy, summary = train_voice_adapter(
        TARGET, [], prompts=TOPICS, settings=settings, policy=policy, reward_model=ShortParagraphs(),
        on_step=lambda stage, step, row: rows.append(row | {"stage": stage}),
    )  # fmt: skip
    assert "sft_loss" not in summary and [r["stage"] for r in rows] == ["grpo"]
    assert summary["grpo_reward_model"] == "ShortParagraphs" and summary["grpo_reward_model_weight"] == 1.0
    # at weight 1 the reward is the reward model's alone, in training and in the held-out checks
    assert all(r["episode_reward_mean"] == pytest.approx(r["reward_feedback"]) for r in rows)
    checks = summary["grpo_checks"]  # 4 topics x 2 samples, each 0 or 1
    assert len(checks) == 2 and all((c["heldout_reward"] * 8) % 1 == pytest.approx(0) for c in checks)
    record = started_from(adapter)  # what a continued adapter's voice.json says of its start
    assert record["started_from"] == str(adapter) and "sft_loss" in record["start_training"]
    with pytest.raises(ValidationError, match="no voice adapter"):
        load_voice_policy(tmp_path)


def test_voice_training_stops_hr_grpo_at_hr_grpos_own_drift_limit_by_default():
    from resonance_os.evolution.hr_grpo import HR_MAX_DRIFT

    assert VoiceTraining().max_drift == HR_MAX_DRIFT


def test_split_validation_holds_out_a_spread_tenth_and_nothing_from_a_small_text():
    pairs = [(f"topic {i}", f"paragraph {i}") for i in range(100)]
    train, held_out = split_validation(pairs)
    assert len(held_out) == 10 and not set(train) & set(held_out) and len(train) + len(held_out) == 100
    assert held_out[0] == pairs[9] and held_out[-1] == pairs[99]  # spread over the whole text
    assert len(split_validation(pairs * 100)[1]) == 64  # a check reads at most 64
    assert split_validation(pairs[:30]) == (pairs[:30], [])


def test_steered_candidates_steer_by_the_held_out_curve_and_keep_fluent_on_topic_drafts(tiny_folder):
    """Unsteered drafts read as stories; the technical profile wants exposition, so the drafts are
    steered down on storytelling, by the strength the curve gives, at a quarter and half of it; a
    draft that talks about software off its topic, a steered draft that reads as word salad or drifts
    off its topic, and one that cleaning empties, are not candidates."""
    from resonance_os.profiling.hrv_extractor import HRVExtractor
    from resonance_os.quality.fluency import ngram_fluency

    tokenizer, model = base_model(str(tiny_folder))
    backend = LocalBackend(model=(tokenizer, model))
    width = model.config.hidden_size
    curve = {"curve": [0.0, 0.1, 0.4, 0.6, 0.6], "judged_fluency": [1.0] * 5}
    directions = SteeringDirections(
        "tiny", {"storytelling_index": 0}, {"storytelling_index": torch.ones(width)},
        {"heldout_check": {"storytelling_index": curve}},
    )  # fmt: skip
    salad = (
        "Crust the yeast is until flour salt. Baked smooth kneaded and it is the. "
        "Water high from firm is the temperature dough made."
    )
    seen = []
    drift = (
        "In Python, the open function is used to create a new module. The module defines the functions "
        "of the package, and each function returns a value to its caller."
    )

    real = backend.sample_requests

    bread_code = (
        "Making bread at home is easier with a small Python script: its function returns the time each "
        "loaf needs in the oven."
    )
    weather = (
        "The rain fell on the town all afternoon, and the streets were empty. The shops closed early, "
        "and the people stayed at home by the fire."
    )

    def sample_requests(requests, seed=None, max_tokens=None):
        real(requests, seed, 8)  # the engine really samples each request, steered or not
        seen.extend(additions for _, _, additions in requests)
        replies = {  # (steered, bread topic): replies
            (False, True): [STORY] * 4, (False, False): [STORY] * 3 + [drift],
            (True, True): [EXPOSITION, salad, "...", bread_code], (True, False): [weather] * 4,
        }  # fmt: skip
        return [replies[bool(additions), TOPICS[0] in str(chat)][:n] for chat, n, additions in requests]

    backend.sample_requests = sample_requests
    target = BUILTIN_TEMPLATES["technical"].vector.to_list()
    got = steered_candidates(
        target, TOPICS, samples=4, backend=backend, directions=directions, fluency=ngram_fluency()
    )
    story = HRVExtractor().extract(STORY)
    assert got.unsteered_hrv == pytest.approx(story)  # measured without the drift into Python
    wanted = target[6] - story[6]  # storytelling_index: the curve moves 0.4 -> 0.1 -> 0.0 from 0 to -1
    assert wanted < -0.3 and got.strengths == {"storytelling_index": pytest.approx(-1.0)}
    steered = [a for a in seen if a]
    assert len(steered) == 2 * len(TOPICS)  # each topic at a quarter and half of the strength
    assert sorted(float(a[0][0]) for a in steered) == pytest.approx([-0.5, -0.5, -0.25, -0.25])
    assert TOPICS[0] == "making bread at home"
    expected = [(TOPICS[0], STORY)] * 4 + [(TOPICS[1], STORY)] * 3 + [(TOPICS[0], EXPOSITION)] * 2
    assert got.pairs == expected
    # the bicycle's unsteered drift into Python and the bread's Python script (at each strength) talk
    # about software; the salad (at each strength) is unfluent; the rain is fluent but off the
    # bicycle's topic; "..." was never a paragraph
    assert got.dropped == {"drift": 3, "fluency": 2, "topic": 8}


def test_drifts_into_software_only_when_the_topic_is_not_software():
    assert drifts_into_software("keeping bees", "The hive module defines functions for the queen.")
    assert not drifts_into_software("keeping bees", "The function of the queen is to lay eggs.")
    assert not drifts_into_software("writing software documentation", "Good software documentation ...")


def test_the_adapter_is_stored_with_the_profile_and_readable_by_the_engine(adapter, home):
    assert find_adapter("acme/newsletter", home) == adapter
    assert find_adapter("acme/other", home) is None and find_adapter(None) is None
    voice = json.loads((adapter / "voice.json").read_text())
    assert voice["target_hrv"] == TARGET and voice["target_source"] == "acme/newsletter"
    assert read_adapter(adapter).layers  # the serving engine reads the same folder (llm.adapters)
    assert adapter_dir("builtin/creative") == builtin_adapter_dir("creative")


def test_the_writer_drafts_with_the_profiles_adapter_and_says_so(adapter, tiny_folder, home):
    writer = tiny_writer(tiny_folder, home)
    article = writer.generate("making bread at home", TARGET, num_paragraphs=1, seed=3,
                              target_source="profile acme/newsletter")  # fmt: skip
    assert article.backend == "local+voice (acme/newsletter)"
    assert {"layer": "voice", "backend": "local+voice (acme/newsletter)"} in article.trace
    assert "dog sat on the mat" in article.text  # the adapter's sentences, not the random model's
    # the writer's own model is untouched: the adapter sits on a private copy
    assert not any("lora" in name for name, _ in writer.backend.model.named_parameters())


def test_the_adapter_merged_into_the_model_drafts_on_the_engine_as_the_adapter_does(adapter, tiny_folder):
    base = base_model(str(tiny_folder))
    tokenizer, merged = load_voice_model(adapter, base=base)
    assert not any("lora" in name for name, _ in merged.named_parameters())  # a plain model
    ids = tokenizer("the big dog", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        adapted = load_voice_backend(adapter, "acme", base=base).policy.model(ids).logits
        assert torch.allclose(merged(ids).logits, adapted, atol=1e-4)
        assert not torch.allclose(base[1](ids).logits, adapted, atol=1e-2)  # the base stays bare
    from resonance_os.evolution.hr_grpo import hr_messages

    replies = LocalBackend(model=(tokenizer, merged)).sample(hr_messages(TOPICS[0], TARGET), n=2, seed=0)
    # the adapter's sentence (the local backend's repetition penalty bends its end), not the random model's
    assert all(reply.startswith("the big dog sat on the") for reply in replies), replies


def test_adapter_false_and_targets_without_an_adapter_draft_with_the_bare_model(adapter, tiny_folder, home):
    assert tiny_writer(tiny_folder, home, adapter=False).voice_backend("profile acme/newsletter") is None
    writer = tiny_writer(tiny_folder, home)
    assert writer.voice_backend("target_hrv") is None  # an explicit HRV names no profile
    assert writer.voice_backend("profile acme/other") is None
    assert HumanResonantWriter(backend="builtin").voice_backend("profile acme/newsletter") is None
    assert profile_key_of("default profile builtin/professional") == "builtin/professional"


def test_an_explicit_adapter_folder_drafts_whatever_the_target(adapter, tiny_folder, home):
    writer = tiny_writer(tiny_folder, home, adapter=adapter)
    assert writer.voice_backend("target_hrv").name == "local+voice (newsletter)"
    with pytest.raises(Exception, match="drafts with the local model"):
        HumanResonantWriter(backend="builtin", adapter=adapter)


@pytest.mark.parametrize("damage", ["voice", "weights", "missing"])
def test_a_broken_adapter_is_a_clear_error_not_a_traceback(adapter, tiny_folder, tmp_path, damage):
    import shutil

    broken = tmp_path / "adapters" / "acme" / "broken"
    shutil.copytree(adapter, broken)
    if damage == "voice":
        (broken / "voice.json").write_text("{not json")
    elif damage == "weights":
        (broken / "weights" / "adapter.safetensors").write_bytes(b"\x00" * 64)
    writer = tiny_writer(tiny_folder, tmp_path, adapter=broken / "gone" if damage == "missing" else broken)
    with pytest.raises(VoiceAdapterError, match="--no-adapter") as info:
        writer.generate("making bread at home", TARGET, num_paragraphs=1, seed=0)
    assert str(broken) in str(info.value)


ESSAY = (
    "When I was a child my grandmother kept a garden behind the house, and every summer evening we "
    "walked along its rows together, counting the beans and pulling the weeds she could no longer reach.\n\n"
    "She told me stories about the village where she grew up, about the river that flooded every spring "
    "and the baker who gave the children warm bread when the water finally went down again.\n\n"
    "Years later I planted a garden of my own, far from that village, and I found myself telling my "
    "daughter the same stories while we knelt in the soil and watched the first green shoots appear."
)


def test_from_corpus_adapter_trains_one_and_stores_it_with_the_profile(tiny_folder, tmp_path):
    from typer.testing import CliRunner

    from resonance_os.cli.hr_main import app
    from resonance_os.voice.corpora import load_writer

    corpus = tmp_path / "twain"
    corpus.mkdir()
    (corpus / "one.txt").write_text("\n\n".join(load_writer("twain", "heldout")[:50]), encoding="utf-8")
    store = tmp_path / "home"
    result = CliRunner().invoke(app, ["profiles", "from-corpus", "acme", str(corpus), "--name", "twain", "--store",
                                      str(store), "--adapter", "--adapter-steps", "0", "--adapter-model", str(tiny_folder)])  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = find_adapter("acme/twain", store)
    assert folder == store / "adapters" / "acme" / "twain"
    voice = json.loads((folder / "voice.json").read_text())
    assert voice["target_source"] == "acme/twain" and voice["training"]["sft_paragraphs"] > 10
    training = voice["training"]  # a tenth held out: SFT kept the weights that read those best
    assert training["sft_validation_paragraphs"] == 5 and training["sft_kept_step"] in {
        check["step"] for check in training["sft_validation"]
    }
    assert read_adapter(folder).layers


def test_from_text_adapter_refuses_a_text_without_paragraphs_before_saving(tmp_path):
    from typer.testing import CliRunner

    from resonance_os.cli.hr_main import app

    sample = tmp_path / "short.txt"
    sample.write_text("Too short.\n\nAlso short.")
    store = tmp_path / "home"
    result = CliRunner().invoke(
        app, ["profiles", "from-text", "acme", "short", str(sample), "--store", str(store), "--adapter"]
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "no paragraph of at least 25 words" in result.output
    shown = CliRunner().invoke(app, ["profiles", "show", "acme", "short", "--store", str(store)])
    assert shown.exit_code != 0  # nothing was saved


def test_going_on_from_adapters_refuses_the_drafting_options_it_would_ignore():
    import subprocess

    script = Path(__file__).parents[2] / "scripts" / "build_profile_adapters.py"
    drafting = ["--sft-steps", "8", "--candidates", "steered", "--draft-adapters", "build/round1"]
    done = subprocess.run(
        [sys.executable, str(script), "--start", "build/pa0", "--grpo-steps", "2", *drafting],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        "--start goes on with HR-GRPO alone, which drafts nothing: drop --sft-steps, --candidates steered, "
        "--draft-adapters" in done.stderr
    )
