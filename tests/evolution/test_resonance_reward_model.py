"""ResonanceRewardModel: learns a hidden preference from pairs and ratings, beats resonance-to-target,
round-trips through save/load without pickle, and refuses too little data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from resonance_os.core.errors import StorageError, ValidationError
from resonance_os.evolution.resonance_reward_model import (
    PreferenceExample,
    RatingExample,
    ResonanceRewardModel,
)

HIDDEN = np.array([0.55, 0.7, 0.4, 0.7, 0.25, 0.15, 0.6, 0.95])
ASKED = [0.4, 0.62, 0.35, 0.65, 0.1, 0.05, 0.3, 0.92]


def _hrvs(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.clip(rng.normal(0.5, 0.2, size=(n, 8)), 0.0, 1.0)


def _utility(h: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    return -np.linalg.norm(h - HIDDEN, axis=-1) + rng.normal(0.0, noise, size=h.shape[:-1])


def _preferences(n: int, seed: int, noise: float = 0.05) -> list[PreferenceExample]:
    rng = np.random.default_rng(seed)
    a, b = _hrvs(n, rng), _hrvs(n, rng)
    prefer_a = _utility(a, rng, noise) > _utility(b, rng, noise)
    return [PreferenceExample(x, y, ASKED, "a" if p else "b") for x, y, p in zip(a, b, prefer_a)]


def test_bradley_terry_learns_a_hidden_target_and_beats_resonance_to_target():
    model = ResonanceRewardModel(extractor=object())
    metrics = model.fit(preferences=_preferences(400, seed=1), seed=0)
    assert metrics["pairwise_accuracy"] >= 0.85
    assert metrics["pairwise_accuracy"] >= metrics["baseline_pairwise_accuracy"] + 0.05
    # fresh pairs, scored through predict_hrv: the better one (by the noiseless hidden utility) wins
    rng = np.random.default_rng(7)
    a, b = _hrvs(300, rng), _hrvs(300, rng)
    truth = np.linalg.norm(a - HIDDEN, axis=1) < np.linalg.norm(b - HIDDEN, axis=1)
    scores_a, scores_b = model.predict_hrv(a, ASKED), model.predict_hrv(b, ASKED)
    assert np.mean((scores_a > scores_b) == truth) >= 0.85
    assert ((scores_a >= 0) & (scores_a <= 1)).all()


def test_rating_regression_beats_a_constant_and_heads_average():
    rng = np.random.default_rng(3)
    h = _hrvs(300, rng)
    utility = _utility(h, rng, 0.03)
    ratings = np.digitize(utility, np.quantile(utility, [0.2, 0.4, 0.6, 0.8])) + 1
    examples = [RatingExample(x, ASKED, int(r)) for x, r in zip(h, ratings)]
    model = ResonanceRewardModel(extractor=object())
    metrics = model.fit(ratings=examples, preferences=_preferences(200, seed=4), seed=0)
    assert metrics["rating_mae"] < 0.8 * metrics["baseline_rating_mae"]
    assert metrics["rating_spearman"] > 0.7
    assert metrics["pairwise_accuracy"] >= 0.8
    best, worst = model.predict_hrv(HIDDEN, ASKED), model.predict_hrv(1.0 - HIDDEN, ASKED)
    assert 0.0 <= worst < best <= 1.0


def test_save_and_load_round_trip_as_json_and_safetensors(tmp_path):
    model = ResonanceRewardModel(extractor=object())
    model.fit(preferences=_preferences(100, seed=5), seed=0)
    model.version = 3
    folder = model.save(tmp_path / "rm")
    assert sorted(p.name for p in folder.iterdir()) == ["model.json", "weights.safetensors"]
    assert json.loads((folder / "model.json").read_text())["format_version"] == 1
    loaded = ResonanceRewardModel.load(folder, extractor=object())
    probe = _hrvs(20, np.random.default_rng(0))
    np.testing.assert_allclose(loaded.predict_hrv(probe, ASKED), model.predict_hrv(probe, ASKED))
    assert loaded.version == 3 and loaded.metrics == model.metrics
    model.save(folder)  # replacing an existing folder works
    (folder / "weights.safetensors").write_bytes(b"garbage")
    with pytest.raises(StorageError, match="corrupt"):
        ResonanceRewardModel.load(folder)


def test_predict_measures_text_with_the_extractor():
    model = ResonanceRewardModel()
    model.fit(preferences=_preferences(100, seed=6), seed=0)
    score = model.predict(
        "We launched the product yesterday. Why did it sell so fast? It felt like magic.", ASKED
    )
    assert 0.0 <= score <= 1.0


def test_too_little_or_bad_feedback_is_a_clear_error():
    model = ResonanceRewardModel(extractor=object())
    with pytest.raises(ValidationError, match="at least 10 preferences"):
        model.fit(preferences=_preferences(5, seed=0))
    with pytest.raises(ValidationError, match="not fitted"):
        model.predict_hrv(HIDDEN, ASKED)
    bad = [RatingExample(HIDDEN, ASKED, 9)] * 12
    with pytest.raises(ValidationError, match="1-5"):
        model.fit(ratings=bad)
