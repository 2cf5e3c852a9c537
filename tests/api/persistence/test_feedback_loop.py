"""The feedback loop through the API: a simulated rater with a hidden ideal HRV sends 500 pairwise
preferences about generated drafts; the reward model trained on them beats plain resonance-to-target on
held-out drafts and ranks fresh drafts the way the rater would. Feedback keeps the prompt it answers.
(Raters the HRV cannot represent: tests/evolution/test_resonance_reward_model.py and
benchmarks/bench_feedback_loop.py.)"""

from __future__ import annotations

import time

import numpy as np
import pytest
from service_helpers import train_reward_model

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.evolution.resonance_reward_model import BASELINE_TERMS

HIDDEN = np.array([0.55, 0.7, 0.45, 0.75, 0.3, 0.2, 0.6, 0.95])
BLOG = [0.4, 0.62, 0.35, 0.65, 0.1, 0.05, 0.3, 0.92]
TOPICS = ["remote work", "coffee roasting", "city cycling", "open source", "sleep science", "small farms"]


def _draft_targets(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.clip(rng.normal(BLOG, 0.18, size=(n, 8)), 0.02, 0.98)


def _generate(client, headers, targets: np.ndarray, seed0: int) -> list[dict]:
    drafts = []
    for i, target in enumerate(targets):
        body = {
            "prompt": TOPICS[i % len(TOPICS)],
            "target_hrv": target.tolist(),
            "paragraphs": 1,
            "seed": seed0 + i,
        }
        response = client.post("/v1/generate", json=body, headers=headers)
        assert response.status_code == 200, response.text
        drafts.append(response.json())
    return drafts


def _hidden_distance(draft: dict) -> float:
    return float(np.linalg.norm(np.array([draft["hrv"][d] for d in HRV_DIMENSIONS]) - HIDDEN))


@pytest.mark.slow
def test_500_preferences_through_the_api_train_an_accurate_reward_model(client, make_tenant):
    tenant = make_tenant("loop")
    headers = tenant.headers
    assert client.post("/v1/profiles", json={"name": "blog", "hrv": BLOG}, headers=headers).status_code == 201
    rng = np.random.default_rng(2024)
    drafts = _generate(client, headers, _draft_targets(120, rng), seed0=0)

    noise = 0.02  # the rater agrees with its own noiseless preference on ~94% of these pairs
    consistent = []
    for _ in range(500):
        i, j = rng.choice(len(drafts), size=2, replace=False)
        utility_i = -_hidden_distance(drafts[i]) + rng.normal(0, noise)
        utility_j = -_hidden_distance(drafts[j]) + rng.normal(0, noise)
        consistent.append(
            (utility_i > utility_j) == (_hidden_distance(drafts[i]) < _hidden_distance(drafts[j]))
        )
        body = {
            "kind": "preference",
            "item": {"id": drafts[i]["id"]},
            "other": {"id": drafts[j]["id"]},
            "preferred": "a" if utility_i > utility_j else "b",
            "profile": "blog",
        }
        assert client.post("/v1/feedback", json=body, headers=headers).status_code == 201

    metrics = train_reward_model(client, headers, seed=0)["metrics"]
    # 120 drafts in 500 pairs: holding out drafts (not pairs) leaves ~150 pairs that touch none of them
    assert metrics["preferences"] == 500 and metrics["preference_holdout"] >= 100
    assert metrics["preference_train"] >= 100
    assert np.mean(consistent) < 0.99  # the labels really are noisy
    assert metrics["pairwise_accuracy"] >= 0.7
    # ~100 held-out pairs: the margin over the baseline swings with the drafts (+0.05 to +0.25 over
    # seeds 2024 and 1-5); the margin is asserted below on ~700 pairs of fresh drafts
    assert metrics["pairwise_accuracy"] > metrics["baseline_pairwise_accuracy"]
    shown = client.get("/v1/reward-model", headers=headers).json()
    assert shown["version"] == 1 and shown["metrics"] == metrics

    # fresh drafts the model never saw: its scores order them like the (noiseless) hidden preference
    fresh = _generate(client, headers, _draft_targets(40, rng), seed0=10_000)
    scored = [
        client.post(
            "/v1/score",
            json={"text": d["article"], "profile": "blog", "prompt": TOPICS[i % len(TOPICS)]},
            headers=headers,
        ).json()
        for i, d in enumerate(fresh)
    ]
    # the baseline: the single term the training chose (resonance to the profile, or a quality term)
    _, sign = BASELINE_TERMS[metrics["baseline_term"]]
    baseline = [sign * s[metrics["baseline_term"]] for s in scored]
    scores = [s["reward_model_score"] for s in scored]
    distances = [_hidden_distance(d) for d in fresh]
    pairs = [
        (a, b)
        for a in range(len(fresh))
        for b in range(a + 1, len(fresh))
        if abs(distances[a] - distances[b]) > 0.02
    ]

    def agreement(values: list[float]) -> float:
        return float(np.mean([(values[a] > values[b]) == (distances[a] < distances[b]) for a, b in pairs]))

    assert agreement(scores) >= 0.85
    # seeds 2024 and 1-5: 0.92-0.99 against the baseline's 0.57-0.76 (margin +0.22 to +0.41)
    assert agreement(scores) >= agreement(baseline) + 0.15, (agreement(scores), agreement(baseline))

    # PPO steered by the reward model pleases the hidden rater more than PPO toward the profile alone
    # (20,000 steps: at the spec's 5,000 the edit policy still makes no edits, docs/hr_rl.md)
    jobs = {
        use: client.post(
            "/v1/train",
            json={"profile": "blog", "timesteps": 20_000, "seed": 0, "use_reward_model": use},
            headers=headers,
        ).json()["id"]
        for use in (True, False)
    }
    utility = {}
    for use, job_id in jobs.items():
        deadline = time.monotonic() + 900
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        while job["state"] in ("queued", "starting", "running") and time.monotonic() < deadline:
            time.sleep(1)
            job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        assert job["state"] == "succeeded", job
        assert job["params"]["reward_model_version"] == (1 if use else None)
        articles = [
            client.post(
                "/v1/generate",
                json={"prompt": TOPICS[i % 6], "paragraphs": 1, "seed": 50_000 + i, "policy": job_id},
                headers=headers,
            ).json()
            for i in range(30)
        ]
        utility[use] = -np.mean([_hidden_distance(a) for a in articles])
    # revising a draft with the writer's edits moves its style a little (docs/hr_rl.md), so the margin
    # is small; the knob env this test was written for rewrote whole paragraphs (+0.05 or more)
    assert utility[True] > utility[False], utility


def test_ratings_and_preferences_are_stored_with_the_items_text_and_hrv(client, make_tenant, app):
    from resonance_os.api.persistence.db import Feedback

    tenant = make_tenant("store")
    first = client.post(
        "/v1/generate", json={"prompt": "tea", "seed": 1, "paragraphs": 1}, headers=tenant.headers
    ).json()
    rating = client.post(
        "/v1/feedback",
        json={"kind": "rating", "item": {"id": first["id"]}, "rating": 5},
        headers=tenant.headers,
    )
    assert rating.status_code == 201
    text = "I wrote this one myself. It is plain, and it works."
    preference = client.post(
        "/v1/feedback",
        json={
            "kind": "preference",
            "item": {"id": first["id"]},
            "other": {"text": text},
            "preferred": "b",
            "prompt": "green tea",
        },
        headers=tenant.headers,
    )
    assert preference.status_code == 201
    with app.state.service.db.read() as session:
        rows = {r.id: r for r in session.query(Feedback).all()}
    stored_rating = rows[rating.json()["id"]]
    assert stored_rating.rating == 5 and stored_rating.item_a_text == first["article"]
    assert stored_rating.item_a_hrv == pytest.approx([first["hrv"][d] for d in HRV_DIMENSIONS])
    assert stored_rating.target_hrv == pytest.approx([first["target_hrv"][d] for d in HRV_DIMENSIONS])
    assert stored_rating.prompt == "tea"  # the generated item's prompt
    stored_pref = rows[preference.json()["id"]]
    assert (
        stored_pref.preferred == "b" and stored_pref.item_b_text == text and len(stored_pref.item_b_hrv) == 8
    )
    assert stored_pref.prompt == "green tea"

    bad = [
        {"kind": "rating", "item": {"id": first["id"]}, "rating": 6},
        {"kind": "rating", "item": {"id": first["id"]}},
        {"kind": "preference", "item": {"id": first["id"]}, "preferred": "a"},
        {"kind": "rating", "item": {"id": first["id"], "text": "both"}, "rating": 3},
    ]
    for body in bad:
        assert client.post("/v1/feedback", json=body, headers=tenant.headers).status_code == 422, body
    missing = {"kind": "rating", "item": {"id": "0" * 32}, "rating": 3}
    assert client.post("/v1/feedback", json=missing, headers=tenant.headers).status_code == 404


def test_reward_model_versions_increase_and_score_uses_the_latest(client, make_tenant):
    tenant = make_tenant("versions")
    headers = tenant.headers
    rng = np.random.default_rng(5)
    drafts = _generate(client, headers, _draft_targets(16, rng), seed0=0)
    for _ in range(30):
        i, j = rng.choice(len(drafts), size=2, replace=False)
        better = _hidden_distance(drafts[i]) < _hidden_distance(drafts[j])
        body = {
            "kind": "preference",
            "item": {"id": drafts[i]["id"]},
            "other": {"id": drafts[j]["id"]},
            "preferred": "a" if better else "b",
        }
        assert client.post("/v1/feedback", json=body, headers=headers).status_code == 201
    assert (
        client.post(
            "/v1/score", json={"text": drafts[0]["article"], "target_hrv": BLOG}, headers=headers
        ).json()["reward_model_score"]
        is None
    )
    assert [train_reward_model(client, headers, seed=s)["version"] for s in (0, 1)] == [1, 2]
    assert client.get("/v1/reward-model", headers=headers).json()["version"] == 2
    score = client.post(
        "/v1/score", json={"text": drafts[0]["article"], "target_hrv": BLOG}, headers=headers
    ).json()
    assert 0.0 <= score["reward_model_score"] <= 1.0
