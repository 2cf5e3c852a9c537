"""Measuring, scoring and generating over HTTP, and the profile routes, with the real components."""

from __future__ import annotations

from resonance_os.api.routes.text import INLINE_TEXT_CHARS
from resonance_os.api.settings import MAX_TEXT_CHARS
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
TEXT = (
    "The report was written by the committee. Why would anyone doubt it? Yesterday Maria walked in, "
    "smiled like a lighthouse in fog, and said it was absolutely wonderful."
)


def test_analyze_returns_the_extractors_hrv_with_evidence(client, make_tenant, app):
    tenant = make_tenant()
    body = client.post("/v1/analyze", json={"text": TEXT}, headers=tenant.headers).json()
    expected = app.state.service.extractor.extract(TEXT)
    assert body["vector"] == expected
    assert list(body["hrv"]) == HRV_DIMENSIONS
    assert body["n_sentences"] == 3
    assert "Why would anyone doubt it?" in body["evidence"]["curiosity_index"]["questions"]
    lean = client.post("/v1/analyze", json={"text": TEXT, "evidence": False}, headers=tenant.headers).json()
    assert lean["evidence"] is None and lean["vector"] == expected
    blank = client.post("/v1/analyze", json={"text": "   "}, headers=tenant.headers)
    assert blank.status_code == 422 and "text" in blank.json()["error"]["message"].lower()


def test_long_texts_are_measured_off_the_event_loop_with_the_same_result(client, make_tenant, app):
    tenant = make_tenant()
    long_text = " ".join([TEXT] * (INLINE_TEXT_CHARS // len(TEXT) + 2))
    assert INLINE_TEXT_CHARS < len(long_text) <= MAX_TEXT_CHARS
    body = client.post("/v1/analyze", json={"text": long_text}, headers=tenant.headers).json()
    assert body["vector"] == app.state.service.extractor.extract(long_text)
    assert body["n_sentences"] == 3 * (INLINE_TEXT_CHARS // len(TEXT) + 2)


def test_score_gives_resonance_and_gaps_against_a_profile_or_vector(client, make_tenant):
    tenant = make_tenant()
    client.post("/v1/profiles", json={"name": "voice", "hrv": HRV}, headers=tenant.headers)
    by_profile = client.post(
        "/v1/score", json={"text": TEXT, "profile": "voice"}, headers=tenant.headers
    ).json()
    by_vector = client.post(
        "/v1/score", json={"text": TEXT, "target_hrv": HRV}, headers=tenant.headers
    ).json()
    assert by_profile == by_vector
    assert 0.0 <= by_profile["resonance"] <= 1.0
    for dim in HRV_DIMENSIONS:
        assert abs(by_profile["gaps"][dim] - (by_profile["target_hrv"][dim] - by_profile["hrv"][dim])) < 1e-12
    builtin = client.post("/v1/score", json={"text": TEXT, "profile": "creative"}, headers=tenant.headers)
    assert builtin.status_code == 200
    missing = client.post("/v1/score", json={"text": TEXT, "profile": "nope"}, headers=tenant.headers)
    assert missing.status_code == 404 and "voice" in missing.json()["error"]["message"]
    both = client.post(
        "/v1/score", json={"text": TEXT, "profile": "voice", "target_hrv": HRV}, headers=tenant.headers
    )
    assert both.status_code == 422


def test_score_gives_the_writing_reward_and_its_terms(client, make_tenant, app):
    tenant = make_tenant()
    body = {"text": TEXT, "target_hrv": HRV, "prompt": "the committee's report"}
    scored = client.post("/v1/score", json=body, headers=tenant.headers).json()
    expected = app.state.service.reward.score(TEXT, HRV, prompt="the committee's report")
    for term in ("resonance", "fluency", "coherence", "topic", "repetition", "reward"):
        assert scored[term] == getattr(expected, term)
    assert scored["meta_text"] == []
    assert 0.0 < scored["reward"] < scored["resonance"]
    no_prompt = client.post(
        "/v1/score", json={"text": TEXT, "target_hrv": HRV}, headers=tenant.headers
    ).json()
    assert no_prompt["topic"] is None
    leaked = client.post(
        "/v1/score",
        json={"text": "Here is the revised paragraph: " + TEXT, "target_hrv": HRV},
        headers=tenant.headers,
    ).json()
    assert leaked["reward"] == 0.0 and leaked["meta_text"]


def test_hr_generate_keeps_resonance_os_documented_shape(client, make_tenant, app):
    tenant = make_tenant()
    client.post("/v1/profiles", json={"name": "voice", "hrv": HRV}, headers=tenant.headers)
    body = {"prompt": "remote work and team culture", "tenant": tenant.name, "profile_name": "voice"}
    response = client.post("/hr_generate", json=body, headers=tenant.headers)
    assert response.status_code == 200
    data = response.json()
    assert {"article", "hrv_feedback"} <= set(data)
    assert (
        data["reward"]["reward"]
        == app.state.service.reward.score(data["article"], HRV, prompt=body["prompt"]).reward
    )
    assert "remote work" in data["article"].lower()
    assert list(data["hrv"]) == HRV_DIMENSIONS
    assert data["hrv_feedback"] == list(data["hrv"].values())
    unknown = client.post("/hr_generate", json={**body, "profile_name": "nope"}, headers=tenant.headers)
    assert unknown.status_code == 404


def test_generate_is_seeded_measured_and_stored_for_feedback(client, make_tenant, app):
    tenant = make_tenant()
    body = {"prompt": "city cycling", "target_hrv": HRV, "paragraphs": 2, "seed": 3}
    first = client.post("/v1/generate", json=body, headers=tenant.headers).json()
    second = client.post("/v1/generate", json=body, headers=tenant.headers).json()
    assert first["article"] == second["article"] and first["id"] != second["id"]
    assert len(first["paragraphs"]) == 2
    measured = app.state.service.extractor.extract(first["article"])
    assert [first["hrv"][d] for d in HRV_DIMENSIONS] == measured
    assert first["resonance"] > 0.9
    assert 0.0 < first["reward"]["reward"] <= first["reward"]["resonance"]
    assert first["backend"] == "builtin (template draft mode)"  # the tests' offline composer says so
    default = client.post("/v1/generate", json={"prompt": "city cycling"}, headers=tenant.headers)
    assert default.status_code == 200
    assert (
        client.post(
            "/v1/generate", json={"prompt": "x", "policy": "0" * 32}, headers=tenant.headers
        ).status_code
        == 404
    )


def test_profile_crud_history_and_from_text(client, make_tenant):
    tenant = make_tenant()
    h = tenant.headers
    created = client.post("/v1/profiles", json={"name": "voice", "hrv": HRV, "description": "v1"}, headers=h)
    assert created.status_code == 201 and created.json()["version"] == 1
    assert client.post("/v1/profiles", json={"name": "voice", "hrv": HRV}, headers=h).status_code == 409
    updated = client.put("/v1/profiles/voice", json={"hrv": [0.5] * 8}, headers=h).json()
    assert updated["version"] == 2 and updated["description"] == "v1"
    assert client.put("/v1/profiles/ghost", json={"hrv": HRV}, headers=h).status_code == 404
    history = client.get("/v1/profiles/voice/history", headers=h).json()["versions"]
    assert [v["version"] for v in history] == [1, 2]
    assert history[0]["hrv"]["curiosity_index"] == 0.2
    sampled = client.post("/v1/profiles/from-text", json={"name": "sample", "text": TEXT}, headers=h)
    assert sampled.status_code == 201
    assert {p["name"] for p in client.get("/v1/profiles", headers=h).json()["profiles"]} == {
        "voice",
        "sample",
    }
    assert client.delete("/v1/profiles/voice", headers=h).status_code == 204
    assert client.get("/v1/profiles/voice", headers=h).status_code == 404
    assert client.get("/docs").status_code == 200
    assert "/v1/profiles/{name}/history" in client.get("/openapi.json").json()["paths"]
