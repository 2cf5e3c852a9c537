"""ResonanceRewardModel: learns raters the HRV cannot represent (real over damaged text, on unseen
drafts) and the hidden HRV ideal it always could; holds out drafts, not pairs; round-trips through
save/load without pickle (formats 1 and 2 still load); learns what a tenant's prompts ask for;
refuses too little or bad feedback."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from safetensors.numpy import save as save_arrays

from resonance_os.core.errors import StorageError, ValidationError
from resonance_os.evolution.resonance_reward_model import (
    MEANING_DIM,
    N_DENSE,
    N_HRV_FEATURES,
    QUALITY_TERMS,
    TEXT_DIM,
    TEXT_FEATURES,
    PreferenceExample,
    RatingExample,
    ResonanceRewardModel,
    prompt_meaning,
    quality_terms,
    text_counts,
)
from resonance_os.profiling.hrv_extractor import HRVExtractor
from resonance_os.quality import corpus, damage

HIDDEN = np.array([0.55, 0.7, 0.4, 0.7, 0.25, 0.15, 0.6, 0.95])
ASKED = [0.4, 0.62, 0.35, 0.65, 0.1, 0.05, 0.3, 0.92]


@cache
def _paragraphs(split: str) -> tuple[str, ...]:
    blocks = corpus.fortune_entries(split) + corpus.pydoc_paragraphs(split)
    return tuple(corpus.document_paragraphs(blocks))


@cache
def _extractor() -> HRVExtractor:
    return HRVExtractor()


def _damage_pairs(split: str, n: int, seed: int) -> list[PreferenceExample]:
    """A rater who prefers a real paragraph to its word salad (even pairs) or to the same sentences in
    a shuffled order (odd pairs): no function of the HRV tells these apart."""
    rng = np.random.default_rng(seed)
    paragraphs = _paragraphs(split)
    pairs = []
    for k, i in enumerate(rng.choice(len(paragraphs), size=n, replace=False)):
        real = paragraphs[i]
        bad = damage.word_salad(real, seed=k) if k % 2 == 0 else damage.shuffle_sentences(real, seed=k)
        if bad is None:
            continue
        a, b, preferred = (real, bad, "a") if rng.random() < 0.5 else (bad, real, "b")
        pairs.append(
            PreferenceExample(a, b, _extractor().extract(a), _extractor().extract(b), ASKED, preferred)
        )
    return pairs


def _hrvs(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.clip(rng.normal(0.5, 0.2, size=(n, 8)), 0.0, 1.0)


def _utility(h: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    return -np.linalg.norm(h - HIDDEN, axis=-1) + rng.normal(0.0, noise, size=h.shape[:-1])


def _style_preferences(n: int, seed: int, noise: float = 0.05) -> list[PreferenceExample]:
    """Pairs of real texts given synthetic HRVs, judged by distance to a hidden ideal HRV."""
    rng = np.random.default_rng(seed)
    texts = _paragraphs("train")
    a, b = _hrvs(n, rng), _hrvs(n, rng)
    prefer_a = _utility(a, rng, noise) > _utility(b, rng, noise)
    picks = rng.choice(len(texts), size=(n, 2))
    return [
        PreferenceExample(texts[i], texts[j], x, y, ASKED, "a" if p else "b")
        for (i, j), x, y, p in zip(picks, a, b, prefer_a)
    ]


def test_learns_real_over_damaged_text_on_unseen_drafts_better_than_any_single_term():
    model = ResonanceRewardModel(extractor=_extractor())
    metrics = model.fit(preferences=_damage_pairs("train", 400, seed=0), seed=0)
    assert metrics["pairwise_accuracy"] >= metrics["baseline_pairwise_accuracy"] + 0.05

    test = _damage_pairs("heldout", 120, seed=1)  # documents no training pair came from
    a_preferred = np.array([p.preferred == "a" for p in test])
    ours = np.mean(
        (model.score([p.text_a for p in test], ASKED) > model.score([p.text_b for p in test], ASKED))
        == a_preferred
    )
    terms_a = np.array([quality_terms(p.text_a, None) for p in test])
    terms_b = np.array([quality_terms(p.text_b, None) for p in test])
    sign = np.array([-1.0 if t == "repetition" else 1.0 for t in QUALITY_TERMS])
    single = ((terms_a - terms_b) * sign > 0) == a_preferred[:, None]
    best_single = single.mean(axis=0).max()  # chosen on the test pairs: generous to the baseline
    assert ours >= 0.78
    assert ours >= best_single + 0.04, (ours, best_single)


def _section_pairs(split: str, n: int, seed: int) -> list[PreferenceExample]:
    """Of two Python-reference paragraphs, the one from the section the prompt names is preferred."""
    from pydoc_data.topics import topics

    flat = {name: " ".join(text.split()) for name, text in topics.items()}
    sections: dict[str, list[str]] = {}
    for paragraph in corpus.pydoc_paragraphs(split):
        name = next((k for k, text in flat.items() if paragraph[:80] in text), None)
        if name is not None:
            sections.setdefault(name, []).append(paragraph)
    names = sorted(k for k, v in sections.items() if len(v) >= 2)
    rng, pairs = np.random.default_rng(seed), []
    for _ in range(n):
        asked, other = rng.choice(names, size=2, replace=False)
        on, off = rng.choice(sections[asked]), rng.choice(sections[other])
        flip = bool(rng.random() < 0.5)
        a, b = (off, on) if flip else (on, off)
        pairs.append(
            PreferenceExample(a, b, HIDDEN, HIDDEN, ASKED, "b" if flip else "a", asked.replace("-", " "))
        )
    return pairs


def test_learns_what_the_tenants_prompts_ask_for_on_unseen_paragraphs():
    """Prompts name sections of the Python reference ("context managers", "typesmapping"); the preferred
    paragraph comes from that section. On held-out paragraphs the model must beat the topic term, which
    only sees the prompt's words and their word vectors."""
    model = ResonanceRewardModel(extractor=object())
    model.fit(preferences=_section_pairs("train", 400, seed=0), seed=0)
    test = _section_pairs("heldout", 150, seed=1)
    truth = np.array([p.preferred == "a" for p in test])

    def accuracy(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean(np.where(a == b, 0.5, (a > b) == truth)))

    scores = [
        model.score(
            [getattr(p, side) for p in test], ASKED, [p.prompt for p in test], hrvs=[HIDDEN] * len(test)
        )
        for side in ("text_a", "text_b")
    ]
    topic = [
        np.array([quality_terms(getattr(p, side), p.prompt)[2] for p in test])
        for side in ("text_a", "text_b")
    ]
    ours, term = accuracy(*scores), accuracy(*topic)
    assert ours >= 0.8 and ours >= term + 0.05, (ours, term)


def test_holds_out_texts_not_pairs():
    """A rater whose taste is a random utility per text can be memorised (the text block identifies each
    text) but not generalised: on held-out texts the model must be near chance, which a split by pairs
    (test pairs about texts seen in training) would not show. About 12 texts are held out, so one
    rater's figure is noisy (0.33-0.71 across these seeds); their mean is near 0.5."""
    accuracies = []
    for seed in (2, 3, 4):
        rng = np.random.default_rng(seed)
        texts, hrvs, utility = _paragraphs("train")[:60], _hrvs(60, rng), rng.normal(size=60)
        picks = [rng.choice(60, size=2, replace=False) for _ in range(300)]
        pairs = [
            PreferenceExample(
                texts[i], texts[j], hrvs[i], hrvs[j], ASKED, "a" if utility[i] > utility[j] else "b"
            )
            for i, j in picks
        ]
        metrics = ResonanceRewardModel(extractor=object()).fit(preferences=pairs, seed=0)
        assert metrics["preference_holdout"] >= 60 and metrics["preference_train"] >= 50
        held = metrics["preference_train"] + metrics["preference_holdout"] + metrics["preference_dropped"]
        assert held == 300
        accuracies.append(metrics["pairwise_accuracy"])
    assert np.mean(accuracies) < 0.62
    assert ResonanceRewardModel(extractor=object()).fit(preferences=pairs, seed=0) == metrics  # seeded


def test_bradley_terry_still_learns_a_hidden_hrv_ideal_and_beats_resonance_to_target():
    model = ResonanceRewardModel(extractor=object())
    # 600 pairs: with 300 the held-out margin over resonance-to-target was noise (-0.05 to +0.05 over
    # preference seeds 1-4); with 600 it was 0.04-0.10 for every one of them
    metrics = model.fit(preferences=_style_preferences(600, seed=1), seed=0)
    assert metrics["pairwise_accuracy"] >= 0.8
    assert metrics["pairwise_accuracy"] >= metrics["baseline_pairwise_accuracy"] + 0.04
    # fresh pairs, scored with their HRVs: the better one (by the noiseless hidden utility) wins
    rng = np.random.default_rng(7)
    a, b = _hrvs(100, rng), _hrvs(100, rng)
    text = [_paragraphs("heldout")[0]] * 100
    truth = np.linalg.norm(a - HIDDEN, axis=1) < np.linalg.norm(b - HIDDEN, axis=1)
    scores_a, scores_b = model.score(text, ASKED, hrvs=a), model.score(text, ASKED, hrvs=b)
    assert np.mean((scores_a > scores_b) == truth) >= 0.85
    assert ((scores_a >= 0) & (scores_a <= 1)).all()


def test_rating_regression_beats_a_constant_and_heads_average():
    rng = np.random.default_rng(3)
    h = _hrvs(200, rng)
    utility = _utility(h, rng, 0.03)
    ratings = np.digitize(utility, np.quantile(utility, [0.2, 0.4, 0.6, 0.8])) + 1
    texts = _paragraphs("train")
    examples = [RatingExample(texts[i], x, ASKED, int(r)) for i, (x, r) in enumerate(zip(h, ratings))]
    model = ResonanceRewardModel(extractor=object())
    metrics = model.fit(ratings=examples, preferences=_style_preferences(150, seed=4), seed=0)
    assert metrics["rating_mae"] < 0.8 * metrics["baseline_rating_mae"]
    assert metrics["rating_spearman"] > 0.6
    assert metrics["pairwise_accuracy"] >= 0.75
    text = [texts[0]]
    best, worst = model.score(text, ASKED, hrvs=[HIDDEN]), model.score(text, ASKED, hrvs=[1.0 - HIDDEN])
    assert 0.0 <= worst[0] < best[0] <= 1.0


def test_save_and_load_round_trip_as_json_and_safetensors(tmp_path):
    model = ResonanceRewardModel(extractor=_extractor())
    model.fit(preferences=_damage_pairs("train", 40, seed=5), seed=0)
    model.version = 3
    folder = model.save(tmp_path / "rm")
    assert sorted(p.name for p in folder.iterdir()) == ["model.json", "weights.safetensors"]
    assert json.loads((folder / "model.json").read_text())["format_version"] == 3
    loaded = ResonanceRewardModel.load(folder, extractor=_extractor())
    probe = list(_paragraphs("heldout")[:5])
    np.testing.assert_allclose(
        loaded.score(probe, ASKED, ["tea"] * 5), model.score(probe, ASKED, ["tea"] * 5)
    )
    assert loaded.version == 3 and loaded.metrics == model.metrics
    assert 0.0 <= loaded.predict(probe[0], ASKED, prompt="tea") <= 1.0  # measures the HRV itself
    model.save(folder)  # replacing an existing folder works
    (folder / "weights.safetensors").write_bytes(b"garbage")
    with pytest.raises(StorageError, match="corrupt"):
        ResonanceRewardModel.load(folder)


def test_a_format_1_model_loads_and_scores_as_before_and_unknown_formats_are_refused():
    rng = np.random.default_rng(0)
    mean, scale, w = rng.normal(size=33), rng.uniform(0.5, 2, size=33), rng.normal(size=33)
    params = {"format_version": 1, "n_features": 33, "rating_intercept": 0.0, "preference_spread": 2.0}
    weights = save_arrays({"mean": mean, "scale": scale, "preference_weights": w})
    old = ResonanceRewardModel.from_state(params, weights)
    h = _hrvs(4, rng)
    text = [_paragraphs("heldout")[0]] * 4
    cosine = (h @ np.array(ASKED)) / np.linalg.norm(h, axis=1) / np.linalg.norm(ASKED)
    gap = h - np.array(ASKED)
    z = (np.c_[h, h * h, gap, gap * gap, cosine] - mean) / scale
    np.testing.assert_allclose(old.score(text, ASKED, hrvs=h), 1 / (1 + np.exp(-(z @ w) / 2.0)))
    with pytest.raises(StorageError, match="retrain it"):
        ResonanceRewardModel.from_state({**params, "format_version": 7}, weights)


def test_a_format_2_model_loads_and_scores_as_before():
    """Format 2 (quality terms and grams, no relation or prompt-meaning features): its arrays padded
    with zero weights score every text exactly as its own columns say."""
    model = ResonanceRewardModel(extractor=_extractor())
    model.fit(preferences=_damage_pairs("train", 40, seed=5), seed=0)
    rng = np.random.default_rng(1)
    old_dense = N_HRV_FEATURES + len(QUALITY_TERMS)
    w = rng.normal(size=old_dense + TEXT_DIM)
    arrays = {"mean": model.mean[:old_dense], "scale": model.scale[:old_dense], "idf": model.idf}
    params = {
        "format_version": 2,
        "n_features": old_dense + TEXT_DIM,
        "quality_terms": list(QUALITY_TERMS),
        "text_features": TEXT_FEATURES,
        "rating_intercept": 0.0,
        "preference_spread": 2.0,
    }
    old = ResonanceRewardModel.from_state(params, save_arrays({**arrays, "preference_weights": w}))
    probe = list(_paragraphs("heldout")[:4])
    h = _hrvs(4, rng)
    z = old._z(
        old._dense(probe, h, np.broadcast_to(ASKED, h.shape), ["tea"] * 4),
        text_counts(probe, ["tea"] * 4),
        prompt_meaning(probe, ["tea"] * 4),
    )
    assert np.all(old.preference_weights[old_dense:N_DENSE] == 0) and np.all(
        old.preference_weights[-MEANING_DIM:] == 0
    )
    utility = z[:, :old_dense] @ w[:old_dense] + z[:, N_DENSE : N_DENSE + TEXT_DIM] @ w[old_dense:]
    np.testing.assert_allclose(old.score(probe, ASKED, ["tea"] * 4, hrvs=h), 1 / (1 + np.exp(-utility / 2.0)))


def test_too_little_or_bad_feedback_is_a_clear_error():
    model = ResonanceRewardModel(extractor=object())
    with pytest.raises(ValidationError, match="at least 10 preferences"):
        model.fit(preferences=_style_preferences(5, seed=0))
    with pytest.raises(ValidationError, match="not fitted"):
        model.score(["text"], ASKED, hrvs=[HIDDEN])
    bad = [RatingExample("A text.", HIDDEN, ASKED, 9)] * 12
    with pytest.raises(ValidationError, match="1-5"):
        model.fit(ratings=bad)
    same_text = [PreferenceExample("One.", "Two.", HIDDEN, 1 - HIDDEN, ASKED, "a")] * 12
    with pytest.raises(ValidationError, match="more different texts"):
        model.fit(preferences=same_text)
