"""POST /v1/steer and GET /v1/steer/dimensions: the Studio's sliders, on the tiny model with directions
built for it (the local backend, steered inside the model, as the service runs it)."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", reason="steering needs the local extra (transformers)")

sys.path.insert(0, str(Path(__file__).parents[2] / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.api.persistence.tenants import authenticate  # noqa: E402
from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.generation.backends.local import LocalBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.generation.steering_directions import SteeringDirections  # noqa: E402

PARAGRAPH = "the cat sat on the mat . then the dog ran under the big tree and the bird flew over the roof ."
STEERABLE = ("emotional_valence", "storytelling_index")
HELDOUT = {
    "emotional_valence": {
        "curve": [0.42, 0.51, 0.59, 0.70, 0.61],
        "rho_curve": 0.9,
        "fluency_ratio_half": {"-0.5": 0.90, "+0.5": 0.96},
        "passed": True,
    },
    "storytelling_index": {
        "curve": [0.0, 0.09, 0.37, 0.58, 0.67],
        "rho_curve": 1.0,
        "fluency_ratio_half": {"-0.5": 0.95, "+0.5": 0.92},
        "judged_fluency": [0.62, 0.95, 1.0, 0.92, 0.64],
        "passed": True,
    },
    "metaphor_density": {
        "curve": [0.0, 0.0, 0.12, 0.24, 0.0],
        "rho_curve": 0.34,
        "fluency_ratio_half": {"-0.5": 1.06, "+0.5": 1.07},
        "passed": False,
    },
    "active_voice_ratio": {
        "curve": [0.54, 0.61, 0.88, 1.0, 1.0],
        "rho_curve": 0.97,
        "fluency_ratio_half": {"-0.5": 0.85, "+0.5": 1.11},
        "passed": False,
    },
    "prompts": ["the first snow of winter in a small town"],
}


def tiny_directions() -> SteeringDirections:
    """Directions for the tiny model (hidden size 64) as the build script writes them, with held-out
    figures in the manifest: two steerable dimensions, two that failed the check."""
    gen = torch.Generator().manual_seed(7)
    return SteeringDirections(
        "tiny",
        {"emotional_valence": 0, "storytelling_index": 1},
        {d: 8.0 * torch.randn(64, generator=gen) for d in STEERABLE},
        {"built_by": "test", "heldout_check": HELDOUT},
    )


@pytest.fixture(scope="module")
def tiny_lm():
    tokenizer = make_tokenizer()
    return tokenizer, make_model(len(tokenizer), seed=0, context=512)


@pytest.fixture
def steered_app(app, tiny_lm):
    """The service with its writer on the tiny model (the local backend) and the tiny directions."""
    backend = LocalBackend(model=tiny_lm, steering_directions=tiny_directions())
    app.state.service.engine.writer = HumanResonantWriter(backend, extractor=app.state.service.extractor)
    return app


@pytest.fixture
def steered(steered_app, make_tenant):
    from fastapi.testclient import TestClient

    with TestClient(steered_app) as test_client:
        yield test_client, make_tenant("steer")


def _steer(client, tenant, **body):
    return client.post("/v1/steer", json={"paragraph": PARAGRAPH, **body}, headers=tenant.headers)


def test_dimensions_list_the_steerable_knobs_with_their_held_out_figures(steered):
    client, tenant = steered
    answer = client.get("/v1/steer/dimensions", headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["available"] and report["model"] == "tiny" and report["strengths"] == [-1, -0.5, 0, 0.5, 1]
    by_name = {d["name"]: d for d in report["dimensions"]}
    assert list(by_name) == list(HRV_DIMENSIONS)
    assert [d for d, v in by_name.items() if v["steerable"]] == list(STEERABLE)
    valence = by_name["emotional_valence"]
    assert (
        valence["layer"] == 0
        and valence["rho"] == 0.9
        and valence["curve"] == HELDOUT["emotional_valence"]["curve"]
    )
    assert valence["works_within"] == [-1.0, 0.5]  # the curve turns down above +0.5
    # the curve rises to +1, but the judge reads the text at +-1 as far less fluent than unsteered
    assert by_name["storytelling_index"]["works_within"] == [-0.5, 0.5]
    assert "rho 0.34 < 0.8" in by_name["metaphor_density"]["reason"]
    assert "fluency at -0.5 fell to 85% of unsteered" in by_name["active_voice_ratio"]["reason"]
    assert by_name["curiosity_index"]["reason"] == "no steering direction for tiny in this set"
    assert report["heldout_prompts"] == HELDOUT["prompts"]


def test_strength_rewrites_the_paragraph_and_zero_is_the_unsteered_model(steered):
    client, tenant = steered
    plain = _steer(client, tenant)
    assert plain.status_code == 200, plain.text
    plain = plain.json()
    assert plain["text"] and plain["steer"] == {} and plain["model"] == "tiny" and plain["seed"] == 0
    assert set(plain["hrv"]) == set(HRV_DIMENSIONS) and set(plain["original_hrv"]) == set(HRV_DIMENSIONS)
    zero = _steer(client, tenant, steer={"emotional_valence": 0.0, "storytelling_index": 0}).json()
    assert zero["text"] == plain["text"] and zero["hrv"] == plain["hrv"]
    assert zero["steer"] == {"emotional_valence": 0.0, "storytelling_index": 0.0}
    up = _steer(client, tenant, steer={"storytelling_index": 1.0}).json()
    down = _steer(client, tenant, steer={"storytelling_index": -1.0}).json()
    assert up["text"] != plain["text"] and down["text"] != plain["text"] and up["text"] != down["text"]
    assert up["steer"] == {"storytelling_index": 1.0}
    assert _steer(client, tenant, steer={"storytelling_index": 1.0}).json()["text"] == up["text"]  # same seed
    assert _steer(client, tenant, steer={"storytelling_index": 1.0}, seed=5).json()["text"] != up["text"]
    assert up["original_hrv"] == plain["original_hrv"]  # the paragraph sent, measured


def test_a_topic_writes_a_new_paragraph_steered(steered):
    client, tenant = steered
    body = {"topic": "night trains", "steer": {"emotional_valence": 0.5}}
    answer = client.post("/v1/steer", json=body, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] and answer.json()["original_hrv"] is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"steer": {"metaphor_density": 0.5}}, "metaphor_density has no steering direction.*steerable: emotional_valence, storytelling_index"),
        ({"steer": {"valence": 0.5}}, "'valence', which is not an HRV dimension; steerable: emotional_valence"),
        ({"steer": {"storytelling_index": 1.5}}, "outside \\[-1, 1\\]"),
        ({"steer": {"storytelling_index": "lots"}}, "steer.storytelling_index: Input should be a valid number"),
        ({"topic": "trains"}, "give exactly one of paragraph or topic"),
        ({"paragraph": "   "}, "paragraph is blank"),
        ({"paragraph": "word " * 500}, "at most 2000 characters"),
        ({"seed": -1}, "seed: Input should be greater than or equal to 0"),
    ],
)  # fmt: skip
def test_bad_requests_are_422_naming_the_fix(steered, body, message):
    client, tenant = steered
    answer = _steer(client, tenant, **body)
    assert answer.status_code == 422, answer.text
    assert re.search(message, answer.json()["error"]["message"]), answer.json()


def test_a_service_without_the_local_model_says_how_to_get_steering(client, make_tenant):
    """The suite's service writes with the template composer (RESONANCE_BACKEND=builtin)."""
    tenant = make_tenant("nosteer")
    answer = client.post("/v1/steer", json={"paragraph": PARAGRAPH}, headers=tenant.headers)
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["type"] == "SteeringUnavailableError"
    assert "RESONANCE_BACKEND=local" in answer.json()["error"]["message"]
    report = client.get("/v1/steer/dimensions", headers=tenant.headers).json()
    assert not report["available"] and "RESONANCE_BACKEND=local" in report["reason"]
    assert not any(d["steerable"] for d in report["dimensions"])


def test_steering_needs_a_key(steered):
    client, _ = steered
    assert client.post("/v1/steer", json={"paragraph": PARAGRAPH}).status_code == 401
    assert client.get("/v1/steer/dimensions").status_code == 401


def test_a_steered_rewrite_takes_turns_and_counts_against_the_tenants_limit(
    steered, steered_app, make_tenant
):
    """A rewrite is model work: it waits while another tenant holds the writer, and a tenant with its
    generations in progress gets 429 at once."""
    client, tenant = steered
    svc = steered_app.state.service
    other = make_tenant("writer")
    other_id = authenticate(svc.db, other.key).tenant_id
    tenant_id = authenticate(svc.db, tenant.key).tenant_id
    turns = svc.workers.turns[0]
    release = threading.Event()

    def hold(tenant_id: int) -> None:
        with turns.turn(tenant_id):
            release.wait(30)

    holder = threading.Thread(target=hold, args=(other_id,))
    holder.start()
    while other_id not in turns.tenants():
        time.sleep(0.01)
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(_steer(client, tenant)))
    waiting.start()
    time.sleep(0.5)
    assert not answers  # waiting for its turn while the other tenant writes
    second_holder = threading.Thread(target=hold, args=(tenant_id,))  # the tenant's second generation
    second_holder.start()
    while turns.waiting() < 2:
        time.sleep(0.01)
    refused = _steer(client, tenant)
    assert refused.status_code == 429 and "generations in progress" in refused.json()["error"]["message"]
    release.set()
    for thread in (holder, waiting, second_holder):
        thread.join(30)
    assert answers[0].status_code == 200 and answers[0].json()["text"]
