"""What an editor meets in Resonance Studio (issue 45): a wrong key explained in plain words, focus where
the work starts after signing in, a confirmation before a new profile replaces one of the same name, a
warning when a sample is too short to measure a voice, and a counter for each text's limit."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from studio_pages import sign_in, signed_in

from resonance_os.core.limits import MAX_PARAGRAPHS, MAX_TEXT_CHARS
from resonance_os.generation.topics import MAX_PROMPT_CHARS
from resonance_os.profiles.sample import MIN_SAMPLE_WORDS

STUDIO_HTML = Path(__file__).parents[2] / "src" / "resonance_os" / "api" / "studio" / "index.html"
VOICE = " ".join(
    f"The harbour {verb} before dawn, and the boats slipped out past the breakwater while the gulls cried."
    for verb in ["woke", "stirred", "hummed", "glowed", "waited", "listened", "shivered", "sang", "slept"]
)
SHORT = "Five words are not enough."


def api(studio, method: str, path: str, **kwargs) -> httpx.Response:
    return httpx.request(
        method, studio.url + path, headers={"Authorization": f"Bearer {studio.key}"}, timeout=30, **kwargs
    )


def test_the_pages_limits_are_the_services():
    html = STUDIO_HTML.read_text(encoding="utf-8")
    assert re.search(r'id="voice-text"[^>]*data-limit="(\d+)"', html).group(1) == str(MAX_TEXT_CHARS)
    assert re.search(r'id="analyze-text"[^>]*data-limit="(\d+)"', html).group(1) == str(MAX_TEXT_CHARS)
    assert re.search(r'id="write-prompt"[^>]*data-limit="(\d+)"', html).group(1) == str(MAX_PROMPT_CHARS)
    assert re.search(r'data-min-words="(\d+)"', html).group(1) == str(MIN_SAMPLE_WORDS)
    assert re.search(r'id="write-paragraphs"[^>]*max="(\d+)"', html).group(1) == str(MAX_PARAGRAPHS)
    assert f"at least {MIN_SAMPLE_WORDS} words" in html


@pytest.mark.parametrize(
    "pasted",
    ["rsk_" + "x" * 43, "rsk_abc def", "Bearer rsk_abc"],
    ids=["unknown key", "key with a space", "key with its header name"],
)
def test_a_wrong_key_is_explained_in_plain_words(page, studio, pasted):
    sign_in(page, pasted)
    page.wait_for_selector("#message:not([hidden])")
    text = page.inner_text("#message")
    assert text.startswith("This API key is not valid:") and "resonance tenants create" in text
    for jargon in ("Authorization", "Bearer <key>", "malformed", "401"):
        assert jargon not in text
    assert re.search(r"[a-z)]\. [A-Z(]", text) and "  " not in text  # sentences end before the next begins
    assert page.evaluate("document.activeElement.id") == "api-key"  # ready for another try
    assert page.evaluate("sessionStorage.length") == 0


def test_focus_moves_to_the_profiles_heading_after_sign_in(page, studio):
    signed_in(page, studio)
    assert page.evaluate("document.activeElement.id") == "profiles-title"
    assert page.evaluate("document.activeElement.textContent") == "Profiles"
    page.keyboard.press("Tab")  # the next stop is in the Profiles panel, not back at the top
    assert page.evaluate("document.activeElement.closest('#panel-profiles') !== null")


def test_a_profile_of_the_same_name_is_replaced_only_after_confirming(page, studio):
    signed_in(page, studio)
    page.fill("#new-name", "newsletter")
    page.fill("#voice-text", VOICE)
    page.click("#create-form button[type=submit]")
    page.wait_for_selector("#notice:not([hidden])")
    assert page.inner_text("#notice") == "Profile newsletter created."
    first = api(studio, "GET", "/v1/profiles/newsletter").json()

    def submit_again() -> str:
        page.fill("#new-name", "newsletter")
        page.fill("#voice-text", SHORT)
        page.click("#create-form button[type=submit]")
        page.wait_for_selector("#overwrite-dialog[open]")
        return page.inner_text("#overwrite-dialog")

    asked = submit_again()
    assert "A profile named newsletter already exists (version 1" in asked
    assert "becomes version 2" in asked and "earlier versions stay in its history" in asked
    assert (
        page.evaluate("document.activeElement.textContent") == "Keep the existing profile"
    )  # the safe choice
    page.keyboard.press("Enter")
    page.wait_for_function("!document.querySelector('#overwrite-dialog').open")
    # the notice follows the dialog's close event: wait for it rather than read it at once
    page.wait_for_selector("#notice:not([hidden]) >> text=Nothing was changed")
    assert page.inner_text("#notice").startswith("Nothing was changed")
    assert api(studio, "GET", "/v1/profiles/newsletter").json() == first

    submit_again()
    page.keyboard.press("Escape")  # Escape keeps it too
    page.wait_for_function("!document.querySelector('#overwrite-dialog').open")
    assert api(studio, "GET", "/v1/profiles/newsletter").json()["version"] == 1

    submit_again()
    page.click("#overwrite-dialog button[value=replace]")
    page.wait_for_selector("#notice:not([hidden]) >> text=now version 2")
    notice = page.inner_text("#notice")
    assert notice.startswith("Profile newsletter replaced: now version 2.")
    assert f"a voice needs at least {MIN_SAMPLE_WORDS} to measure" in notice  # the 5-word sample
    assert "warning" in page.get_attribute("#notice", "class")
    history = api(studio, "GET", "/v1/profiles/newsletter/history").json()["versions"]
    assert [v["version"] for v in history] == [1, 2] and history[0]["hrv"] == first["hrv"]


def test_text_areas_count_characters_and_words_against_their_limits(page, studio):
    signed_in(page, studio)
    page.fill("#voice-text", SHORT)
    assert page.inner_text("#voice-text-count") == (
        f"5 of the {MIN_SAMPLE_WORDS} words a voice needs · 26 / {MAX_TEXT_CHARS:,} characters"
    )
    page.fill("#voice-text", VOICE)
    words = len(VOICE.split())
    assert page.inner_text("#voice-text-count").startswith(f"{words} words · {len(VOICE):,} / ")

    page.click("#tabs button[data-tab=analyze]")
    assert page.inner_text("#analyze-text-count") == f"0 / {MAX_TEXT_CHARS:,} characters"
    page.fill("#analyze-text", "Tide 🌊 and salt.")  # an emoji is one character, as the service counts
    assert page.inner_text("#analyze-text-count") == f"16 / {MAX_TEXT_CHARS:,} characters"
    page.fill("#analyze-text", "a" * MAX_TEXT_CHARS)
    assert "over" not in (page.get_attribute("#analyze-text-count", "class") or "")
    page.fill("#analyze-text", "a" * (MAX_TEXT_CHARS + 12))
    counter = page.inner_text("#analyze-text-count")
    assert counter.endswith("12 characters over the limit: shorten the text.")
    assert "over" in page.get_attribute("#analyze-text-count", "class")
    sent = []
    page.on("request", lambda request: sent.append(request.url))
    page.click("#analyze-form button[type=submit]")
    page.wait_for_timeout(300)
    assert not any("/v1/" in url for url in sent)  # the browser holds the form back, naming the fix
    assert page.evaluate("document.querySelector('#analyze-text').validationMessage").startswith(
        "12 characters over"
    )

    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "harbour mornings")
    assert page.inner_text("#write-prompt-count") == f"16 / {MAX_PROMPT_CHARS:,} characters"
