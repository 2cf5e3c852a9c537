"""Numbers with meaning in Resonance Studio (issue 45): each dimension and reward term explained in a
sentence where it is shown (not only in a hover title), one gap sign convention stated with the gaps,
and refine's edits as suggestions in words that the writer accepts or rejects one by one."""

from __future__ import annotations

import httpx
from studio_pages import signed_in

from resonance_os.core.hrv_constants import GAP_CONVENTION, HRV_DESCRIPTIONS, REWARD_TERM_MEANINGS

DRAFT = (
    "We were delighted by the wonderful results. The report was written by the team last week. It is a "
    "very good plan and the numbers are clear. Perhaps the market will grow.\n\n"
    "The market grew quickly in the spring. Prices rose and buyers waited for better deals. The new shop "
    "was opened by the mayor."
)


def signed_in_on_analyze(page, studio) -> None:
    signed_in(page, studio, "analyze")
    page.fill("#analyze-text", DRAFT)
    page.select_option("#analyze-profile", "creative")


def test_each_number_says_what_it_means_and_which_way_the_gap_goes(page, studio):
    signed_in_on_analyze(page, studio)
    page.click("#analyze-form button[type=submit]")
    page.wait_for_selector("#analyze-result:not([hidden]), #message:not([hidden])")
    assert page.is_hidden("#message"), page.inner_text("#message")
    caption = page.locator("#analyze-measure table.gaps caption")
    assert GAP_CONVENTION[1:] in caption.inner_text() and caption.locator(".meaning").is_visible()
    rows = page.locator("#analyze-measure table.gaps tbody th .meaning")
    assert rows.all_inner_texts() == list(HRV_DESCRIPTIONS.values()) and rows.first.is_visible()
    terms = page.locator("#analyze-measure table.terms tbody th .meaning").all_inner_texts()
    assert terms == [
        REWARD_TERM_MEANINGS[t]
        for t in ("resonance", "fluency", "coherence", "topic", "repetition", "reward")
    ]
    assert not any("^" in t for t in terms)  # the reward in words, not as a formula
    target = float(
        page.locator("#analyze-measure table.gaps tbody tr").first.locator("td").nth(0).inner_text()
    )
    measured = float(
        page.locator("#analyze-measure table.gaps tbody tr").first.locator("td").nth(1).inner_text()
    )
    shown = page.locator("#analyze-measure table.gaps tbody tr").first.locator("td").nth(2).inner_text()
    assert (
        float(shown.replace("−", "-")) == round(target - measured, 2)
        or abs(float(shown.replace("−", "-")) - (target - measured)) <= 0.011
    )


def test_refine_suggestions_are_accepted_or_rejected_one_by_one(page, studio):
    signed_in_on_analyze(page, studio)
    page.click("#refine-button")
    page.wait_for_selector("#refine-result:not([hidden]), #message:not([hidden])")
    assert page.is_hidden("#message"), page.inner_text("#message")
    headers = {"Authorization": f"Bearer {studio.key}"}
    refined = httpx.post(
        f"{studio.url}/v1/refine", json={"text": DRAFT, "profile": "creative"}, headers=headers, timeout=120
    ).json()
    suggestions = refined["suggestions"]
    items = page.locator("#suggestions li")
    assert items.count() == len(suggestions) >= 2
    for index, suggestion in enumerate(suggestions):
        text = items.nth(index).inner_text()
        assert suggestion["label"] in text and suggestion["reason"] in text.lower()  # in words, with why
        assert "_" not in text.split("\n")[0]  # no edit names such as emotional_valence-:colder_word
    page.check("#suggestion-0-reject")
    page.click("#use-refined")
    page.wait_for_selector("#notice:not([hidden])")
    accepted = [s["id"] for s in suggestions[1:]]
    expected = httpx.post(
        f"{studio.url}/v1/refine/apply",
        json={"text": refined["original_text"], "suggestions": suggestions, "accept": accepted},
        headers=headers,
    ).json()
    assert page.input_value("#analyze-text") == expected["text"]
    assert expected["text"] not in (refined["text"], refined["original_text"])
    assert f"{len(expected['applied'])} of {len(suggestions)} suggestions applied" in page.inner_text(
        "#notice"
    )
