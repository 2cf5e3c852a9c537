"""Resonance Studio in headless Chromium against ``resonance serve``: what a content team does with it."""

from __future__ import annotations

import httpx
import pytest
import sqlalchemy as sa
from studio_pages import sign_in

VOICE = (
    "I walked down to the harbour before dawn. The boats were painted by the fishermen last spring, and "
    "they glowed like lanterns on the black water. Why do we remember mornings like that? My grandfather "
    "told me the sea was a patient teacher. We listened. We learned. Then the sun came up and it was gone!"
)
ANALYZE_TEXT = (
    "Is this the best plan we have? The report was written by the whole team. "
    "Our numbers rose like a tide, and we definitely beat the target!"
)

REFINE_TEXT = (
    "The interpreter imports the module. The result is an integer. "
    "The call returns a new list of the items in their original order.\n\n"
    "The function reads the file. The loop counts the lines and the words in it."
)
RATED_TEXTS = [
    "The harbour was quiet at dawn.",
    "Boats rocked like cradles! Why?",
    "Numbers rose by ten percent this quarter.",
    "We must act now, definitely.",
    "It was said by many that the plan was sound.",
    "Fishermen mended nets while gulls cried.",
    "Is the market ready? Perhaps not.",
    "I love the smell of salt and tar.",
    "The report was written by the team.",
    "Morning light spilled over the quay.",
]


def message(page) -> str:
    page.wait_for_selector("#message:not([hidden])")
    return page.inner_text("#message")


def test_wrong_key_is_refused_in_plain_words_and_is_not_kept(page, studio):
    sign_in(page, "rsk_" + "x" * 43)
    text = message(page)
    assert text.startswith("This API key is not valid") and "resonance tenants create" in text
    assert page.is_visible("#sign-in") and page.is_hidden("#tabs")
    assert page.evaluate("sessionStorage.length") == 0


def test_sign_in_profile_from_text_write_rate_and_sign_out(page, studio):
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    assert page.evaluate("sessionStorage.getItem('resonance.apiKey')") == studio.key
    assert page.input_value("#api-key") == ""

    # learn a voice from pasted text
    page.fill("#new-name", "harbour")
    page.fill("#new-description", "Morning at sea")
    page.fill("#voice-text", VOICE)
    page.click("#create-form button[type=submit]")
    page.wait_for_selector("#profile-detail:not([hidden])")
    assert page.inner_text("#detail-title") == "harbour"
    assert page.locator("#detail-chart .axis-label").count() == 8
    hover = page.locator("#detail-chart .axis-label title").first.text_content()
    assert hover.startswith("Sentence variance: Cadence")
    stored = httpx.get(
        f"{studio.url}/v1/profiles/harbour", headers={"Authorization": f"Bearer {studio.key}"}
    ).json()
    measured = httpx.post(
        f"{studio.url}/v1/analyze", json={"text": VOICE}, headers={"Authorization": f"Bearer {studio.key}"}
    ).json()
    assert stored["hrv"] == measured["hrv"]

    # write in that voice
    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "Why early mornings at the harbour matter")
    page.select_option("#write-profile", "harbour")
    page.fill("#write-paragraphs", "2")
    page.fill("#write-seed", "7")
    page.click("#write-form button[type=submit]")
    page.wait_for_selector("#write-result:not([hidden]), #message:not([hidden])")
    assert page.is_hidden("#message"), page.inner_text("#message")
    # the progress bar, fed by /v1/generate/stream, ends at n of n
    assert page.get_attribute("#write-progress", "max") == "2"
    assert page.evaluate("document.querySelector('#write-progress').value") == 2
    assert page.inner_text("#write-status") == "Wrote 2 of 2 paragraphs."
    assert "draft mode" in page.inner_text("#notice")  # the offline template composer says what it is
    assert any(url.endswith("/v1/generate/stream") for url in page.request_urls)
    paragraphs = page.locator("#article p").all_inner_texts()
    assert len(paragraphs) == 2 and all(p.strip() for p in paragraphs)
    assert page.locator("#write-measure .radar .series").count() == 2
    rows = page.locator("#write-measure table.gaps tbody tr")
    assert rows.count() == 8
    article = httpx.post(
        f"{studio.url}/v1/analyze",
        json={"text": "\n\n".join(paragraphs)},
        headers={"Authorization": f"Bearer {studio.key}"},
    ).json()
    article_hrv = article["hrv"]
    questions = article["evidence"]["curiosity_index"]["questions"]
    assert questions and page.locator("#article mark.ev-question").all_inner_texts() == questions
    first = rows.nth(0).locator("td").all_inner_texts()
    assert first[0] == f"{stored['hrv']['sentence_variance']:.2f}"
    assert first[1] == f"{article_hrv['sentence_variance']:.2f}"
    terms = page.locator("#write-measure table.terms tbody th").all_inner_texts()
    names = [term.split("\n")[0] for term in terms]  # each name, then its meaning under it
    assert names == ["Resonance", "Fluency", "Coherence", "Topic", "Repetition", "Reward"]
    # per paragraph: its own measured dimensions, as /v1/analyze measures that paragraph alone
    numbers = page.locator("#article details.numbers")
    assert numbers.count() == 2
    numbers.nth(1).locator("summary").click()
    assert "largest gap" in numbers.nth(1).locator("summary").inner_text()
    second = httpx.post(
        f"{studio.url}/v1/analyze",
        json={"text": paragraphs[1]},
        headers={"Authorization": f"Bearer {studio.key}"},
    ).json()["hrv"]
    cells = [row.locator("td").all_inner_texts() for row in numbers.nth(1).locator("tbody tr").all()]
    assert [c[1] for c in cells] == [f"{second[d]:.2f}" for d in stored["hrv"]]
    assert [c[0] for c in cells] == [f"{stored['hrv'][d]:.2f}" for d in stored["hrv"]]

    # rate it 4/5: stored as feedback on the generated item
    page.check("#rate-form input[value='4']")
    page.click("#rate-form button[type=submit]")
    page.wait_for_selector("#notice:has-text('4/5')")
    engine = sa.create_engine(studio.db_url)
    with engine.connect() as connection:
        ratings = (
            connection.execute(sa.text("SELECT rating FROM api_feedback WHERE kind = 'rating'"))
            .scalars()
            .all()
        )
    engine.dispose()
    assert ratings == [4]

    # the key never leaves session storage for a URL or the console
    assert not any(studio.key in url for url in page.request_urls)
    assert not any(studio.key in line for line in page.console_lines)

    page.click("#sign-out")
    page.wait_for_selector("#sign-in:not([hidden])")
    assert page.evaluate("sessionStorage.length") == 0
    assert page.is_hidden("#panel-write")


def test_prompt_too_long_is_held_back_naming_the_limit(page, studio):
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "harbour " * 600)
    assert page.inner_text("#write-prompt-count") == (
        "4,800 / 4,000 characters — 800 characters over the limit: shorten the text."
    )
    page.click("#write-form button[type=submit]")
    assert page.evaluate("document.querySelector('#write-prompt').validationMessage").startswith(
        "800 characters"
    )
    assert page.is_hidden("#write-result") and page.is_hidden("#write-progress-box")


def test_analyze_highlights_evidence_and_scores_against_a_profile(page, studio):
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.click("#tabs button[data-tab=analyze]")
    page.fill("#analyze-text", ANALYZE_TEXT)
    page.select_option("#analyze-profile", "creative")
    page.click("#analyze-form button[type=submit]")
    page.wait_for_selector("#analyze-result:not([hidden])")
    assert page.inner_text("#evidence-text mark.ev-question") == "Is this the best plan we have?"
    assert page.inner_text("#evidence-text mark.ev-passive") == "was written"
    assert page.inner_text("#evidence-text mark.ev-figurative") == "like a tide"
    assert page.inner_text("#evidence-text mark.ev-booster") == "definitely"
    assert page.inner_text("#evidence-text mark.ev-exclamation").startswith("Our numbers rose")
    assert page.locator("#analyze-measure table.gaps tbody tr").count() == 8
    assert page.inner_text("#evidence-text") == ANALYZE_TEXT


def test_refine_shows_the_edits_as_a_diff(page, studio):
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.click("#tabs button[data-tab=analyze]")
    page.fill("#analyze-text", REFINE_TEXT)
    page.select_option("#analyze-profile", "creative")
    page.click("#refine-button")
    page.wait_for_selector("#refine-result:not([hidden]), #message:not([hidden])")
    assert page.is_hidden("#message"), page.inner_text("#message")
    expected = httpx.post(
        f"{studio.url}/v1/refine",
        json={"text": REFINE_TEXT, "profile": "creative"},
        headers={"Authorization": f"Bearer {studio.key}"},
    ).json()
    inserted = page.locator("#diff ins").all_inner_texts()
    assert inserted and inserted == [s["text"] for s in expected["diff"] if s["op"] == "insert"]
    kept = page.locator("#diff > :not(ins)").all_inner_texts()
    assert "".join(kept) == expected["original_text"]
    assert f"{len(expected['edits'])} suggested edit" in page.inner_text("#refine-summary")
    assert page.locator("#refine-measure table.gaps tbody tr").count() == 8
    page.click("#use-refined")  # every suggestion accepted (the default): the refined text
    page.wait_for_selector("#notice:not([hidden])")
    assert page.input_value("#analyze-text") == expected["text"]


def test_phone_width_needs_no_sideways_scrolling(browser, studio):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(studio.url + "/")
    page.wait_for_selector("body[data-ready=true]")
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    widths = {}
    for tab in ("profiles", "write", "analyze", "learn", "train"):
        page.click(f"#tabs button[data-tab={tab}]")
        widths[tab] = page.evaluate("document.documentElement.scrollWidth")
    # an article written, with its per-paragraph numbers open
    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "Why early mornings at the harbour matter")
    page.fill("#write-paragraphs", "3")
    page.click("#write-form button[type=submit]")
    page.wait_for_selector("#write-result:not([hidden])")
    page.evaluate("document.querySelectorAll('#write-result details').forEach(d => { d.open = true; })")
    overflowing = page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > 390.5)"
        ".map(e => e.tagName + '.' + e.className).slice(0, 8)"
    )
    widths["written article"] = page.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert widths == {
        "profiles": 390, "write": 390, "analyze": 390, "learn": 390, "train": 390, "written article": 390
    }, overflowing  # fmt: skip


def test_profile_from_sliders_then_history_and_revert(page, studio):
    headers = {"Authorization": f"Bearer {studio.key}"}
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.fill("#new-name", "sliders-voice")
    page.check("input[name=source][value=sliders]")
    page.focus("#slider-sentence_variance")
    page.keyboard.press("End")
    page.focus("#slider-emotional_valence")
    page.keyboard.press("Home")
    assert page.inner_text("output[for=slider-sentence_variance]") == "1.00"
    page.click("#create-form button[type=submit]")
    page.wait_for_selector("#profile-detail:not([hidden])")
    created = httpx.get(f"{studio.url}/v1/profiles/sliders-voice", headers=headers).json()
    assert created["hrv"]["sentence_variance"] == 1.0 and created["hrv"]["emotional_valence"] == 0.0
    assert created["hrv"]["curiosity_index"] == 0.5

    # a colleague saves a new version; reverting to version 1 restores the sliders' values
    changed = [0.2] * 8
    assert httpx.put(
        f"{studio.url}/v1/profiles/sliders-voice", json={"hrv": changed}, headers=headers
    ).is_success
    page.click("#show-history")
    page.wait_for_selector("#history-list:not([hidden])")
    assert page.locator("#history-list li").count() == 2
    page.click("#history-list button:has-text('Revert to version 1')")
    page.wait_for_selector("#notice:has-text('reverted to version 1')")
    reverted = httpx.get(f"{studio.url}/v1/profiles/sliders-voice", headers=headers).json()
    assert reverted["hrv"] == created["hrv"] and reverted["version"] == 3


def test_a_profile_deleted_meanwhile_is_a_404_and_an_oversized_text_is_held_back(page, studio):
    headers = {"Authorization": f"Bearer {studio.key}"}
    assert httpx.post(
        f"{studio.url}/v1/profiles", json={"name": "gone-soon", "hrv": [0.5] * 8}, headers=headers
    )
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.fill("#new-name", "too-big")
    page.fill("#voice-text", "word " * 220_000)
    page.click("#create-form button[type=submit]")
    assert page.inner_text("#voice-text-count").endswith(
        "1,050,000 characters over the limit: shorten the text."
    )
    assert httpx.get(f"{studio.url}/v1/profiles/too-big", headers=headers).status_code == 404

    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "A short note")
    page.select_option("#write-profile", "gone-soon")
    assert httpx.delete(f"{studio.url}/v1/profiles/gone-soon", headers=headers).is_success  # a colleague
    page.click("#write-form button[type=submit]")
    page.wait_for_selector("#message:has-text('404')")
    assert "gone-soon" in page.inner_text("#message")


def test_pick_the_better_of_two_drafts_and_train_the_reward_model(page, studio):
    headers = {"Authorization": f"Bearer {studio.key}"}
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "A morning at the fish market")
    page.fill("#write-paragraphs", "1")
    drafts = []
    for seed in ("1", "2"):
        page.fill("#write-seed", seed)
        page.click("#write-form button[type=submit]")
        page.wait_for_selector("#write-form:not([aria-busy])")
        assert page.is_hidden("#message")
        drafts.append(page.locator("#article > p").all_inner_texts())
    assert page.is_visible("#ab-form") and drafts[0] != drafts[1]
    page.click("#ab-form summary")
    assert page.locator("#draft-a p").all_inner_texts() == drafts[0]
    page.check("#ab-form input[value=b]")
    page.click("#ab-form button[type=submit]")
    page.wait_for_selector("#notice:has-text('draft B')")
    engine = sa.create_engine(studio.db_url)
    with engine.connect() as connection:
        preferred = (
            connection.execute(sa.text("SELECT preferred FROM api_feedback WHERE kind = 'preference'"))
            .scalars()
            .all()
        )
    engine.dispose()
    assert preferred == ["b"]

    # too little feedback is a clear 422; with enough, the held-out figures appear
    page.click("#tabs button[data-tab=learn]")
    page.wait_for_selector("#reward-model:has-text('No reward model yet')")
    page.click("#train-form button[type=submit]")
    assert "422" in message(page) and "at least 10" in page.inner_text("#message")
    for i, text in enumerate(RATED_TEXTS):
        rating = {"kind": "rating", "item": {"text": text}, "rating": 1 + i % 5}
        assert httpx.post(f"{studio.url}/v1/feedback", json=rating, headers=headers).status_code == 201
    page.click("#train-form button[type=submit]")
    page.wait_for_selector("#notice:has-text('Reward model version 1 trained')")
    assert "Held-out rating error (MAE)" in page.inner_text("#reward-model")
    assert "Baseline rating error (MAE)" in page.inner_text("#reward-model")


def test_train_a_policy_watch_its_curve_cancel_a_job_and_write_with_the_policy(page, studio):
    """A real PPO job (the smallest: one update) run by the server's job runner, followed on the page."""
    headers = {"Authorization": f"Bearer {studio.key}"}
    sign_in(page, studio.key)
    page.wait_for_selector("#tabs:not([hidden])")
    page.click("#tabs button[data-tab=train]")
    page.select_option("#job-profile", "creative")
    page.fill("#job-timesteps", "2048")
    page.fill("#job-seed", "1")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#notice:has-text('queued')")
    trained = httpx.get(f"{studio.url}/v1/jobs", headers=headers).json()["jobs"][0]
    assert trained["params"]["timesteps"] == 2048 and trained["params"]["profile"].endswith("creative")
    assert page.inner_text("#job-title") == f"Job {trained['id'][:8]}: creative, 2,048 steps"

    # a second, long job waits behind it (one running job per tenant); cancel it from the page
    page.fill("#job-timesteps", "999424")  # 488 updates of 2,048
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#job-title:has-text('999,424 steps')")
    waiting = httpx.get(f"{studio.url}/v1/jobs", headers=headers).json()["jobs"][0]
    # a tenant may have 4 jobs waiting: with 3 more queued through the API, the page's next one is a 429
    more = [
        httpx.post(
            f"{studio.url}/v1/train", json={"profile": "creative", "timesteps": 64}, headers=headers
        ).json()
        for _ in range(3)
    ]
    page.click("#job-form button[type=submit]")
    text = message(page)
    assert "429" in text and "4 training jobs waiting" in text
    for job in more:
        assert httpx.delete(f"{studio.url}/v1/jobs/{job['id']}", headers=headers).is_success
    page.click(f"#job-list button:has-text('{waiting['id'][:8]}')")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-job")
    page.wait_for_selector("#job-status:has-text('Cancelled.')")
    assert httpx.get(f"{studio.url}/v1/jobs/{waiting['id']}", headers=headers).json()["state"] == "cancelled"
    assert page.is_hidden("#cancel-job")

    # follow the first job to the end: progress, the learning curve, the latest metrics
    page.click(f"#job-list button:has-text('{trained['id'][:8]}')")
    page.wait_for_selector("#job-status:has-text('Finished')", timeout=900_000)
    curve = httpx.get(f"{studio.url}/v1/jobs/{trained['id']}/metrics", headers=headers).json()
    assert curve["state"] == "succeeded" and curve["points"]
    assert page.evaluate("document.querySelector('#job-progress').value") == 1
    assert page.input_value("#curve-metric") == "episode_reward_mean"
    assert page.locator("#job-chart .line-chart .dot").count() == len(curve["points"])
    last = curve["points"][-1]
    dot = page.locator(
        "#job-chart .dot title"
    ).last.text_content()  # "Timesteps 2048: Mean episode reward -0.0113"
    steps, reward = dot.split(": ")
    assert steps == f"Timesteps {last['timesteps']:.0f}" and reward.startswith("Mean episode reward ")
    assert float(reward.rsplit(" ", 1)[1]) == pytest.approx(last["episode_reward_mean"], rel=0.01, abs=1e-9)
    page.select_option("#curve-metric", "loss")
    assert "Loss" in page.locator("#job-chart svg > title").text_content()
    assert page.locator("#job-metrics tbody tr").count() >= 5
    states = page.locator("#job-list .state").all_inner_texts()
    assert states == ["cancelled"] * 4 + ["succeeded"]

    # the finished policy is in the Write screen's picker (only finished jobs are); write with it
    page.click("#use-policy")
    page.wait_for_selector("#panel-write:not([hidden])")
    assert page.input_value("#write-policy") == trained["id"]
    options = page.locator("#write-policy option").evaluate_all("nodes => nodes.map(n => n.value)")
    assert options == ["", trained["id"]]
    page.evaluate(
        """() => { window.statuses = [];
        new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach((n) =>
          window.statuses.push(n.textContent)))).observe(document.querySelector('#write-status'), {childList: true});
        }"""
    )
    page.fill("#write-prompt", "Harbour mornings")
    page.fill("#write-paragraphs", "3")
    page.fill("#write-seed", "2")
    page.click("#write-form button[type=submit]")
    page.wait_for_selector("#write-result:not([hidden]), #message:not([hidden])", timeout=120_000)
    assert page.is_hidden("#message"), page.inner_text("#message")
    statuses = page.evaluate("window.statuses")
    for k in (1, 2, 3):  # the stream reports every paragraph with a trained policy too
        assert any(status.startswith(f"Writing paragraph {k} of 3 (") for status in statuses), statuses
    assert statuses[-1] == "Wrote 3 of 3 paragraphs."
    engine = sa.create_engine(studio.db_url)
    with engine.connect() as connection:
        newest = sa.text("SELECT policy FROM api_items ORDER BY created_at DESC")
        policy = connection.execute(newest).scalars().first()
    engine.dispose()
    assert policy == trained["id"]
