"""A tenant trains its profile's voice adapter through the API, on a real ``resonance serve`` (uvicorn
on 127.0.0.1) whose local model is the tiny seeded Llama: ``POST /v1/profiles/{name}/adapter`` queues a
``voice_adapter`` job that a job worker runs (SFT, then HR-GRPO), its progress is the learning curve,
the adapter is counted in the tenant's storage, ``/v1/generate`` then drafts with it, ``POST
/v1/adapters`` serves it to the official ``openai`` SDK, and deleting the profile removes it. What
cannot be trained is refused before a job is queued."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx
import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("peft", reason="voice adapters need the local extra (transformers, peft)")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from live_server import LiveServer  # noqa: E402
from service_helpers import new_tenant, unique  # noqa: E402
from tiny_lm import save_tiny_model  # noqa: E402

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.quotas import StorageQuota, usage  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402
from resonance_os.evolution.voice_adapters import VoiceTraining, train_voice_adapter, voice_policy  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402

PEPPER = "voice-adapter-jobs"
TARGET = BUILTIN_TEMPLATES["creative"].vector.to_list()
PARAGRAPH = (
    "the big dog sat on the mat . then the red bird flew over the tree . "
    "the small cat ran under the blue roof and then the green bird sat on the tree ."
)
NUMBERS = "one two three four five six seven eight nine . zero one two three four five ."


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory) -> Path:
    """A model cache whose 'SmolLM2' is the tiny seeded Llama taught to count (the bare random model
    writes nothing the writer accepts): the server's writer, job workers and OpenAI engine all load it."""
    tiny = save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny", context=512)
    settings = VoiceTraining(keep=3, sft_steps=30, sft_learning_rate=1e-2, sft_batch_size=3, grpo_steps=0,
                             min_quality=0.0)  # fmt: skip
    candidates = [(topic, NUMBERS) for topic in ("bread", "bicycles", "meetings")]
    policy, _ = train_voice_adapter(
        TARGET, candidates, settings=settings, policy=voice_policy(base=str(tiny))
    )
    cache = tmp_path_factory.mktemp("cache")
    policy.export(cache / "smollm2-135m-instruct")
    return cache


@pytest.fixture
def server(tmp_path, model_cache):
    live = LiveServer(
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        env={
            "RESONANCE_HOME": str(tmp_path / "home"),
            "RESONANCE_KEY_PEPPER": PEPPER,
            "RESONANCE_CACHE": str(model_cache),
            "RESONANCE_BACKEND": "local",
            "RESONANCE_OPENAI_RUNS": str(tmp_path / "runs"),
            "RESONANCE_OPENAI_MAX_TOKENS": "16",
        },
    )
    live.start_timeout = 180.0
    yield live.start()
    live.stop()


def tenant_key(db_url: str) -> tuple[str, dict[str, str], int]:
    """A new tenant's name, auth headers and id, hashed with the live server's pepper."""
    tenant = new_tenant(db_url, "voice", PEPPER)
    db = Database(db_url)
    tenant_id = _tenant_id(db, tenant.name)
    db.dispose()
    return tenant.name, tenant.headers, tenant_id


def _tenant_id(db: Database, name: str) -> int:
    import sqlalchemy as sa

    from resonance_os.profiles.schema import Tenant as TenantRow

    with db.read() as session:
        return session.scalar(sa.select(TenantRow.id).where(TenantRow.name == name))


def wait_for(http: httpx.Client, job_id: str, headers: dict, timeout: float = 900.0) -> dict:
    deadline = time.monotonic() + timeout
    job = http.get(f"/v1/jobs/{job_id}", headers=headers).json()
    while job["state"] in ("queued", "starting", "running"):
        assert time.monotonic() < deadline, f"voice adapter job still {job['state']}"
        time.sleep(0.5)
        job = http.get(f"/v1/jobs/{job_id}", headers=headers).json()
    return job


def test_a_tenant_trains_its_profiles_voice_adapter_as_a_job_writes_with_it_and_serves_it(server, tmp_path):
    name, headers, tenant_id = tenant_key(server.db_url)
    _, other_headers, _ = tenant_key(server.db_url)
    text = "\n\n".join([PARAGRAPH] * 4)
    with httpx.Client(base_url=server.url, timeout=600.0) as http:
        assert (
            http.post("/v1/profiles", json={"name": "newsletter", "hrv": TARGET}, headers=headers).status_code
            == 201
        )
        # refused before a job is queued: no such profile (yours), no paragraph to learn from
        missing = http.post("/v1/profiles/nope/adapter", json={"text": text}, headers=headers)
        assert missing.status_code == 404, missing.text
        elsewhere = http.post("/v1/profiles/newsletter/adapter", json={"text": text}, headers=other_headers)
        assert elsewhere.status_code == 404  # another tenant's profile of that name is not theirs
        short = http.post("/v1/profiles/newsletter/adapter", json={"text": "Too short."}, headers=headers)
        assert short.status_code == 422 and "25 words" in short.json()["error"]["message"]
        assert http.get("/v1/jobs", headers=headers).json()["jobs"] == []
        assert http.get("/v1/profiles/newsletter/adapter", headers=headers).status_code == 404

        db = Database(server.db_url)
        before = usage(db, tenant_id, StorageQuota())
        body = {"text": text, "sft_steps": 2, "grpo_steps": 1, "seed": 1}
        queued = http.post("/v1/profiles/newsletter/adapter", json=body, headers=headers)
        assert queued.status_code == 202, queued.text
        assert queued.json()["kind"] == "voice_adapter"
        job = wait_for(http, queued.json()["id"], headers)
        assert job["state"] == "succeeded", job
        assert job["metrics"]["adapter"] == f"{name}/newsletter" and job["metrics"]["grpo_steps"] == 1
        curve = http.get(f"/v1/jobs/{job['id']}/metrics", headers=headers).json()["points"]
        assert [point["timesteps"] for point in curve] == [1, 2, 3]  # 2 SFT steps, then 1 HR-GRPO step
        assert "sft_loss" in curve[0] and "grpo_episode_reward_mean" in curve[2]
        listed = http.get("/v1/jobs", params={"kind": "voice_adapter"}, headers=headers).json()["jobs"]
        assert [j["id"] for j in listed] == [job["id"]]
        after = usage(db, tenant_id, StorageQuota())
        assert after["rows"] == before["rows"] + 2  # the paragraphs' item and the adapter
        assert after["bytes"] == before["bytes"] + len(text) + job["metrics"]["bytes"]

        info = http.get("/v1/profiles/newsletter/adapter", headers=headers).json()
        assert info["target_hrv"] == TARGET and info["path"] == "voice-adapters/newsletter"
        assert info["training"]["sft_paragraphs"] == 4

        written = http.post(
            "/v1/generate", json={"prompt": "bread", "profile": "newsletter", "paragraphs": 1, "seed": 0},
            headers=headers,
        )  # fmt: skip
        assert written.status_code == 200, written.text
        assert written.json()["voice_adapter"] == f"{name}/newsletter"
        assert written.json()["backend"] == f"local+voice ({name}/newsletter)"

        asked = time.time()
        registered = http.post(
            "/v1/adapters", json={"name": "newsletter-voice", "path": info["path"]}, headers=headers
        )
        assert registered.status_code == 201, registered.text
        served = http.get("/v1/adapters", headers=headers).json()["data"]
        assert [(m["id"], m["path"], m["version"]) for m in served] == [
            ("newsletter-voice", job["metrics"]["served_path"], 1)
        ]  # what the Studio matches a job's published adapter by
        assert asked <= served[0]["updated"] <= time.time()  # a later training is newer than what is served
        stolen = http.post("/v1/adapters", json={"name": "x", "path": info["path"]}, headers=other_headers)
        assert stolen.status_code == 404  # another tenant's runs folder is not theirs
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=headers["Authorization"][7:])
        reply = client.chat.completions.create(
            model="newsletter-voice", messages=[{"role": "user", "content": "the dog"}], max_tokens=8
        )
        assert reply.model == "newsletter-voice" and reply.choices[0].message.content is not None

        assert http.delete("/v1/profiles/newsletter", headers=headers).status_code in (200, 204)
        assert http.get("/v1/profiles/newsletter/adapter", headers=headers).status_code == 404
        article = len(written.json()["article"].encode()) + len(b"bread")  # the generated item
        left = usage(db, tenant_id, StorageQuota())
        assert left["bytes"] == after["bytes"] + article - job["metrics"]["bytes"]
        assert left["rows"] == after["rows"] + 1 - 2  # + the article, - the adapter and the profile
        db.dispose()


def test_an_adapter_past_the_storage_quota_fails_the_job_naming_it_with_nothing_installed(
    db, model_cache, tmp_path, monkeypatch
):
    """The trainer the job worker runs, called as it calls it: the paragraphs fit the quota, the
    trained adapter does not."""
    from resonance_os.api.jobs.report import JobReport
    from resonance_os.api.jobs.voice_adapters import (
        profile_adapter_dir,
        served_folder,
        train_voice_adapter_job,
    )
    from resonance_os.api.persistence.db import Item
    from resonance_os.api.persistence.quotas import StorageQuotaError

    monkeypatch.setenv("RESONANCE_CACHE", str(model_cache))
    monkeypatch.setenv("RESONANCE_OPENAI_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("RESONANCE_QUOTA_BYTES", "2000")  # the paragraphs fit, no adapter does
    name = unique("quota")
    create_tenant(db, name)
    tenant_id = _tenant_id(db, name)
    text = "\n\n".join([PARAGRAPH] * 4)
    with db.write() as session:
        corpus = Item(tenant_id=tenant_id, source="corpus", text=text, hrv=TARGET, target_hrv=TARGET)
        session.add(corpus)
        session.flush()
        corpus_id = corpus.id
    params = {"tenant": name, "profile": "newsletter", "target_hrv": TARGET, "corpus_item": corpus_id,
              "sft_steps": 1, "grpo_steps": 0, "seed": 0}  # fmt: skip
    report = JobReport(db, "no-such-job", tenant_id, work_dir=tmp_path / "work")
    (tmp_path / "work").mkdir()
    with pytest.raises(StorageQuotaError, match="storage quota reached"):
        train_voice_adapter_job(params, report)
    assert not profile_adapter_dir(db, name, "newsletter").exists()
    assert not served_folder(name, "newsletter").exists()
