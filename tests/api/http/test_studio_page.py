"""The studio page is served by the app itself: its assets resolve, nothing comes from elsewhere."""

from __future__ import annotations

import re

from resonance_os.api.jobs.hr_ppo import PPO_UPDATE_STEPS
from resonance_os.core.hrv_constants import (
    GAP_CONVENTION,
    HRV_DESCRIPTIONS,
    HRV_DIMENSIONS,
    REWARD_TERM_MEANINGS,
)


def test_page_and_every_asset_it_loads_are_served_from_the_app(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    referenced = re.findall(r'(?:src|href)="(/studio/[^"]+)"', page.text)
    assert {"/studio/app.js", "/studio/studio.css"} <= set(referenced)
    modules = ["/studio/app.js"]
    seen: set[str] = set()
    while modules:  # follow the ES module imports
        path = modules.pop()
        seen.add(path)
        script = client.get(path)
        assert script.status_code == 200 and "javascript" in script.headers["content-type"], path
        for name in re.findall(r'from "\./([\w.-]+)"', script.text):
            if f"/studio/{name}" not in seen:
                modules.append(f"/studio/{name}")
    assert seen == {
        "/studio/app.js",
        "/studio/api.js",
        "/studio/charts.js",
        "/studio/evidence.js",
        "/studio/serve.js",
        "/studio/steer.js",
    }
    assert client.get("/studio/studio.css").status_code == 200
    assert not re.search(r"https?://", page.text), "the page must not load anything from another origin"


def test_definitions_come_from_the_hrv_constants_and_the_api_schema(client):
    body = client.get("/studio/definitions.json").json()
    assert [d["name"] for d in body["dimensions"]] == HRV_DIMENSIONS
    assert all(d["description"] == HRV_DESCRIPTIONS[d["name"]] for d in body["dimensions"])
    documented = client.get("/openapi.json").json()["components"]["schemas"]["WritingTerms"]["properties"]
    assert [t["name"] for t in body["terms"]] == [
        "resonance",
        "fluency",
        "coherence",
        "topic",
        "repetition",
        "reward",
    ]
    # one plain sentence per term, the API's own description (which adds the formula for the reward)
    assert all(t["description"] == REWARD_TERM_MEANINGS[t["name"]] for t in body["terms"])
    assert all(documented[t["name"]]["description"].startswith(t["description"]) for t in body["terms"])
    assert "^" not in next(t["description"] for t in body["terms"] if t["name"] == "reward")
    assert body["gap"] == GAP_CONVENTION and "target − measured" in body["gap"]


def test_unknown_paths_stay_json_errors(client):
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["message"]


def test_the_train_forms_update_size_is_the_trainers(client):
    """The Train form asks for whole updates of the size the policy trainer trains (no "64 accepted,
    2,048 trained")."""
    from resonance_os.evolution.hr_rl_trainer import hr_ppo_config
    from resonance_os.rl.algorithms.ppo import PPOConfig

    body = client.get("/studio/definitions.json").json()
    assert body["training"]["update_steps"] == PPO_UPDATE_STEPS
    assert hr_ppo_config(None, 0).get("n_steps", PPOConfig().n_steps) == PPO_UPDATE_STEPS
