"""POST /v1/generate/stream (server-sent progress, then the article) against a real uvicorn server read
with httpx streaming, and POST /v1/refine (edits, a word diff, scores before and after)."""

from __future__ import annotations

import json
import os

import httpx
import pytest
import sqlalchemy as sa
from live_server import LiveServer
from service_helpers import new_tenant

DRAFT = (
    "The interpreter imports the module. The result is an integer. "
    "The call returns a new list of the items in their original order.\n\n"
    "The function reads the file. The loop counts the lines and the words in it."
)


def _events(response: httpx.Response) -> list[tuple[str, dict]]:
    events, name = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
    return events


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory) -> str:
    return os.environ.get("RESONANCE_TEST_DB_URL") or f"sqlite:///{tmp_path_factory.mktemp('db') / 's.db'}"


PEPPER = {"RESONANCE_KEY_PEPPER": "stream-and-refine-tests"}
"""The module's servers outlive a test's own environment: they and the keys share this pepper."""


@pytest.fixture(scope="module")
def keys(shared_db) -> tuple[str, str]:
    """Two tenants' keys, hashed with ``PEPPER`` like the module's servers hash them."""
    pepper = PEPPER["RESONANCE_KEY_PEPPER"]
    return new_tenant(shared_db, "stream", pepper).key, new_tenant(shared_db, "stream", pepper).key


@pytest.fixture(scope="module")
def server(shared_db, keys):
    server = LiveServer(shared_db, env=PEPPER).start()
    yield server
    server.stop()


def _client(server: LiveServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


@pytest.fixture(scope="module")
def live(server, keys):
    with _client(server, keys[0]) as client:
        yield client


def test_stream_reports_each_paragraph_then_the_stored_article(live):
    body = {
        "prompt": "How tide pools survive winter storms",
        "profile": "creative",
        "paragraphs": 3,
        "seed": 4,
    }
    with live.stream("POST", "/v1/generate/stream", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _events(response)
    names = [name for name, _ in events]
    assert names == ["progress", "progress", "progress", "result"]
    assert [data["paragraph"] for _, data in events[:3]] == [1, 2, 3]
    assert all(data["paragraphs"] == 3 for _, data in events[:3])
    result = events[-1][1]
    assert len(result["paragraphs"]) == 3 and result["article"] == "\n\n".join(result["paragraphs"])
    plain = live.post("/v1/generate", json=body).json()  # the same writing path: same seed, same article
    assert plain["article"] == result["article"] and plain["id"] != result["id"]
    feedback = live.post("/v1/feedback", json={"kind": "rating", "item": {"id": result["id"]}, "rating": 4})
    assert feedback.status_code in (200, 201), feedback.text  # the streamed article was stored as an item


def test_stream_errors_before_writing_keep_their_status(live):
    missing = live.post("/v1/generate/stream", json={"prompt": "Tides", "profile": "nope"})
    assert missing.status_code == 404 and missing.json()["error"]["type"]
    invalid = live.post("/v1/generate/stream", json={"prompt": "", "paragraphs": 40})
    assert invalid.status_code == 422 and "paragraphs" in invalid.json()["error"]["message"]
    anonymous = httpx.post(f"{live.base_url}/v1/generate/stream", json={"prompt": "Tides"})
    assert anonymous.status_code == 401


def test_refine_returns_edits_a_word_diff_and_scores(live):
    response = live.post("/v1/refine", json={"text": DRAFT, "profile": "creative", "seed": 0})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["edits"] and body["text"] != body["original_text"]
    diff = body["diff"]
    assert "".join(s["text"] for s in diff if s["op"] != "insert") == body["original_text"]
    assert "".join(s["text"] for s in diff if s["op"] != "delete") == body["text"]
    assert {s["op"] for s in diff} >= {"equal", "insert"}
    target = [body["target_hrv"][d] for d in body["before"]["hrv"]]
    gap = lambda hrv: sum(abs(t - v) for t, v in zip(target, hrv.values()))  # noqa: E731
    assert gap(body["after"]["hrv"]) < gap(body["before"]["hrv"])  # the kept edits close the style gap
    assert body["after"]["resonance"] > body["before"]["resonance"]


def test_refine_matches_the_cli(live, tmp_path):
    from typer.testing import CliRunner

    from resonance_os.cli.hr_main import app

    source = tmp_path / "draft.txt"
    source.write_text(DRAFT)
    cli = CliRunner().invoke(app, ["refine", str(source), "--profile", "builtin/creative", "--json"])
    assert cli.exit_code == 0, cli.output
    expected = json.loads(cli.output)
    body = live.post("/v1/refine", json={"text": DRAFT, "profile": "creative"}).json()
    assert body["text"] == expected["text"] and body["edits"] == expected["edits"]
    assert body["after"]["reward"] == pytest.approx(expected["reward_after"])


def test_refine_rejects_bad_input(live):
    both = live.post("/v1/refine", json={"text": DRAFT, "profile": "creative", "target_hrv": [0.5] * 8})
    assert both.status_code == 422 and "not both" in both.json()["error"]["message"]
    assert live.post("/v1/refine", json={"text": "   \n\n  "}).status_code == 422
    assert live.post("/v1/refine", json={"text": DRAFT, "profile": "nope"}).status_code == 404


def test_another_tenants_profile_is_not_found_by_stream_or_refine(live, server, keys):
    hrv = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
    assert live.post("/v1/profiles", json={"name": "private-voice", "hrv": hrv}).status_code == 201
    assert live.post("/v1/refine", json={"text": DRAFT, "profile": "private-voice"}).status_code == 200
    with _client(server, keys[1]) as other:
        stream = other.post("/v1/generate/stream", json={"prompt": "Tides", "profile": "private-voice"})
        refine = other.post("/v1/refine", json={"text": DRAFT, "profile": "private-voice"})
    assert stream.status_code == 404, stream.text
    assert refine.status_code == 404, refine.text


def test_a_failure_after_the_stream_began_is_an_error_event(shared_db, keys):
    """A 1 ms budget lets the writer start (the first progress event), then stops it between
    paragraphs: the stream ends with an ``error`` event naming the budget, and nothing is stored."""
    server = LiveServer(shared_db, env={**PEPPER, "RESONANCE_GENERATE_BUDGET_S": "0.001"}).start()
    try:
        with _client(server, keys[1]) as client:
            body = {"prompt": "Out of time", "profile": "creative", "paragraphs": 3}
            with client.stream("POST", "/v1/generate/stream", json=body) as response:
                assert response.status_code == 200
                events = _events(response)
    finally:
        server.stop()
    assert [name for name, _ in events] == ["progress", "error"]
    error = events[-1][1]["error"]
    assert error["type"] == "BusyError" and "time budget" in error["message"]
    engine = sa.create_engine(shared_db)
    with engine.connect() as connection:
        stored = connection.execute(sa.text("SELECT count(*) FROM api_items WHERE prompt = 'Out of time'"))
        assert stored.scalar() == 0
    engine.dispose()
