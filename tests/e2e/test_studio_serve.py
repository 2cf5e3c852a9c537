"""The Train screen's "Serve this policy" (issue 40): a finished voice-adapter job (a LoRA adapter over the
server's language model) is served through the OpenAI API from the browser, the official ``openai`` SDK
and the page's own snippets then reach it, "Stop serving" takes it away, the server's refusals are shown
in words next to the control, a training of the same adapter that finished after it was served offers
its new weights (and the older job says it was replaced), and a PPO policy (an edit policy, not a
language model) offers no serve.

A real ``resonance serve``: its 'SmolLM2' is the tiny seeded Llama saved where the server loads it from
(``$RESONANCE_CACHE``), so the voice-adapter job (2 SFT steps through ``POST
/v1/profiles/{name}/adapter``, as a tenant queues one) trains a real LoRA adapter in seconds and the
OpenAI routes serve that same model. The PPO job is real PPO on CartPole (``tests/api/trainers.py``, as
in test_studio_training.py): the Studio tells the two apart by what the job published, not by trainer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import served_studio
from studio_pages import VIEWPORT, signed_in

openai = pytest.importorskip("openai")
pytest.importorskip("peft", reason="voice adapters need the local extra (transformers, peft)")

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
from tiny_lm import save_tiny_model  # noqa: E402

from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.quality.reference_lm import default_cache_dir  # noqa: E402

API_TESTS = Path(__file__).parents[1] / "api"
PARAGRAPH = (
    "the big dog sat on the mat . then the red bird flew over the tree . "
    "the small cat ran under the blue roof and then the green bird sat on the tree ."
)
MODEL_ID = "newsletter-voice"


@pytest.fixture(scope="module")
def serve_studio(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve-home")
    save_tiny_model(home / "cache" / default_cache_dir().name, context=512)
    env = {
        "RESONANCE_CACHE": str(home / "cache"),
        "RESONANCE_OPENAI_MAX_TOKENS": "16",
        "RESONANCE_TRAINERS": "ppo=trainers:cartpole_ppo",
        "PYTHONPATH": os.pathsep.join([str(API_TESTS), os.environ.get("PYTHONPATH", "")]),
        "TEST_STEP_DELAY": "0",
    }
    with served_studio(home, **env) as studio:
        headers = {"Authorization": f"Bearer {studio.key}"}
        with httpx.Client(base_url=studio.url, headers=headers, timeout=120) as http:
            hrv = BUILTIN_TEMPLATES["creative"].vector.to_list()
            assert http.post("/v1/profiles", json={"name": "newsletter", "hrv": hrv}).status_code == 201
            policy = http.post("/v1/train", json={"profile": "newsletter", "timesteps": 2048, "seed": 0})
            assert policy.status_code == 202, policy.text
            jobs = {"voice": train_voice(http, seed=0), "policy": finished(http, policy.json()["id"])}
        studio.home, studio.jobs = home, jobs
        yield studio


def train_voice(http: httpx.Client, seed: int) -> dict:
    """The profile's voice adapter trained as a tenant queues it: 2 SFT steps on its paragraphs."""
    text = "\n\n".join([PARAGRAPH] * 4)
    body = {"text": text, "sft_steps": 2, "grpo_steps": 0, "seed": seed}
    queued = http.post("/v1/profiles/newsletter/adapter", json=body)
    assert queued.status_code == 202, queued.text
    return finished(http, queued.json()["id"])


def finished(http: httpx.Client, job_id: str, timeout: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout
    while (job := http.get(f"/v1/jobs/{job_id}").json())["state"] in ("queued", "starting", "running"):
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']}"
        time.sleep(0.25)
    assert job["state"] == "succeeded", job
    return job


def train_tab(browser, studio):
    context = browser.new_context(viewport=VIEWPORT, permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(studio.url + "/")
    page.wait_for_selector("body[data-ready=true]")
    signed_in(page, studio, "train")
    page.wait_for_selector("#job-list .card.job >> nth=1")
    return context, page


def open_job(page, job: dict) -> None:
    page.click(f"#job-list .card.job:has-text('job {job['id'][:8]}')")
    page.wait_for_selector(f"#job-title:has-text('{job['id'][:8]}')")


def sdk(studio) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{studio.url}/v1", api_key=studio.key, max_retries=0, timeout=60)


def test_a_voice_adapter_job_is_served_from_the_train_screen_and_reached_with_the_openai_sdk(
    browser, serve_studio
):
    studio, voice = serve_studio, serve_studio.jobs["voice"]
    headers = {"Authorization": f"Bearer {studio.key}"}
    # another run of this tenant's already holds the name "taken"
    runs = studio.home / "runs" / "studio-team"
    shutil.copytree(runs / voice["metrics"]["served_path"], runs / "other-run")
    taken = httpx.post(
        f"{studio.url}/v1/adapters", headers=headers, json={"name": "taken", "path": "other-run"}
    )
    assert taken.status_code == 201, taken.text

    context, page = train_tab(browser, studio)
    open_job(page, voice)
    assert page.input_value("#curve-metric") == "sft_loss"  # its steps' curve (no episode reward in SFT)
    assert page.locator("#job-chart .dot").count() == 2
    assert page.is_hidden("#use-policy")  # drafts toward the profile use it already
    assert page.input_value("#serve-name") == MODEL_ID  # the profile's name, made a valid model id
    assert "Served from voice-adapters/newsletter" in page.inner_text("#job-serve")

    page.fill("#serve-name", "-not valid")  # held back in the page: the route's name rule
    page.click("#serve-button")
    assert page.locator("#serve-name:invalid").count() == 1
    page.fill("#serve-name", "taken")
    page.click("#serve-button")
    page.wait_for_selector("#serve-error:not([hidden])")
    error = page.inner_text("#serve-error")
    assert "Conflict (409)" in error and "'taken' is registered" in error
    page.fill("#serve-name", "SmolLM2-135M-Instruct")  # the served base model's own id
    page.click("#serve-button")
    page.wait_for_selector("#serve-error:has-text('400')")
    assert "Not served (400)" in page.inner_text("#serve-error") and "base model's id" in page.inner_text(
        "#serve-error"
    )

    page.fill("#serve-name", MODEL_ID)
    page.click("#serve-button")
    page.wait_for_selector("#job-serve .model-id", timeout=120_000)
    assert page.inner_text("#job-serve .model-id") == MODEL_ID
    assert f"Serving {MODEL_ID}" in page.inner_text("#serve-status")
    python, curl = page.locator("#job-serve .snippet pre").all_inner_texts()
    assert f'base_url="{studio.url}/v1"' in python and f'model="{MODEL_ID}"' in python
    assert curl.startswith(f"curl {studio.url}/v1/chat/completions ")
    page.click("#job-serve .snippet button.copy >> nth=0")
    page.wait_for_selector("#job-serve .snippet button.copy:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == python

    client = sdk(studio)
    assert MODEL_ID in [model.id for model in client.models.list()]
    reply = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "the dog"}], max_tokens=8
    )
    assert reply.model == MODEL_ID and reply.usage.completion_tokens > 0
    key = {**os.environ, "RESONANCE_API_KEY": studio.key}
    ran = subprocess.run([sys.executable, "-c", python], env=key, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout.strip(), ran.stderr  # the page's snippet, as a user runs it
    if shutil.which("curl"):
        called = subprocess.run(["bash", "-c", curl], env=key, capture_output=True, text=True, timeout=120)
        assert called.returncode == 0 and f'"model":"{MODEL_ID}"' in called.stdout.replace(" ", ""), called
    context.close()

    # the profile's adapter trained again: published in the same folder, newer than what is served
    with httpx.Client(base_url=studio.url, headers=headers, timeout=120) as http:
        again = train_voice(http, seed=1)
    # a fresh tab shows what is served from GET /v1/adapters, on the job's card and in its serve box
    context, page = train_tab(browser, studio)
    card = "#job-list .card.job:has-text('job {}')"
    assert f"served as {MODEL_ID}" in page.inner_text(card.format(again["id"][:8]))
    assert "served as" not in page.inner_text(card.format(voice["id"][:8]))
    open_job(page, voice)
    page.wait_for_selector(f"#job-serve:has-text('job {again['id'][:8]}')")
    assert "replaced it in voice-adapters/newsletter" in page.inner_text("#job-serve")
    assert page.locator("#job-serve button, #job-serve input").count() == 0
    open_job(page, again)
    page.wait_for_selector("#job-serve .stale")
    assert "may still answer with the earlier training's weights" in page.inner_text("#job-serve .stale")
    page.click("#job-serve button:has-text('Serve the new weights')")
    page.wait_for_selector("#serve-status:has-text('version 2')")
    assert page.locator("#job-serve .stale").count() == 0
    assert f"{MODEL_ID} (version 2)" in page.inner_text("#job-serve .served")
    listed = httpx.get(f"{studio.url}/v1/adapters", headers=headers).json()["data"]
    assert [(m["id"], m["version"]) for m in listed] == [(MODEL_ID, 2), ("taken", 1)]

    page.click(f"#job-serve button:has-text('Stop serving {MODEL_ID}')")
    page.wait_for_selector("#serve-name")
    assert f"Stopped serving {MODEL_ID}" in page.inner_text("#serve-status")
    assert MODEL_ID not in [model.id for model in client.models.list()]
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "the dog"}])

    # the adapter's folder is gone with its profile: the server's 404 is shown next to the control
    assert httpx.delete(f"{studio.url}/v1/profiles/newsletter", headers=headers).status_code in (200, 204)
    page.click("#serve-button")
    page.wait_for_selector("#serve-error:not([hidden])")
    error = page.inner_text("#serve-error")
    assert "Not found (404)" in error and "voice-adapters/newsletter" in error
    assert not page.is_disabled("#serve-button")
    context.close()


def test_a_ppo_policy_offers_no_serve_and_says_why(browser, serve_studio):
    context, page = train_tab(browser, serve_studio)
    open_job(page, serve_studio.jobs["policy"])
    page.wait_for_selector("#job-serve .not-servable")
    assert "not a language model" in page.inner_text("#job-serve")
    assert page.locator("#job-serve button, #job-serve input").count() == 0
    assert page.is_visible("#use-policy")  # it is written with instead
    context.close()
