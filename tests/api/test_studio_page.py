"""The studio page is served by the app itself: its assets resolve, nothing comes from elsewhere."""

from __future__ import annotations

import re

from resonance_os.core.hrv_constants import HRV_DESCRIPTIONS, HRV_DIMENSIONS


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
    assert seen == {"/studio/app.js", "/studio/api.js", "/studio/charts.js", "/studio/evidence.js"}
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
    assert all(t["description"] == documented[t["name"]]["description"] for t in body["terms"])


def test_unknown_paths_stay_json_errors(client):
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["message"]
