"""The Studio's steering sliders (issue 42): a real ``resonance serve`` writing with the local backend on
the tiny model (saved where the local backend loads its model from, ``$RESONANCE_CACHE``) and directions
built for it (``$RESONANCE_STEERING_DIRECTIONS``), written in the server process (a text worker
warms up by writing an article, which the random tiny model cannot); Chromium moves
a slider and sees the paragraph rewritten."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import served_studio
from studio_pages import VIEWPORT, signed_in

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", reason="steering needs the local extra (transformers)")

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
from tiny_lm import save_tiny_model  # noqa: E402

from resonance_os.generation.steering_directions import SteeringDirections  # noqa: E402
from resonance_os.quality.reference_lm import default_cache_dir  # noqa: E402

PARAGRAPH = "the cat sat on the mat . then the dog ran under the big tree and the bird flew over the roof ."
STEERABLE = ("emotional_valence", "storytelling_index")


@pytest.fixture(scope="module")
def steer_studio(tmp_path_factory):
    home = tmp_path_factory.mktemp("steer-home")
    cache = home / "cache"
    save_tiny_model(cache / default_cache_dir().name, context=512)
    gen = torch.Generator().manual_seed(7)
    checks = {
        "storytelling_index": {"curve": [0.0, 0.1, 0.4, 0.6, 0.7], "rho_curve": 1.0,
                               "fluency_ratio_half": {"-0.5": 0.96, "+0.5": 1.0},
                               "judged_fluency": [0.7, 0.96, 1.0, 1.0, 0.95]},
        "metaphor_density": {"curve": [0.0, 0.0, 0.1, 0.2, 0.0], "rho_curve": 0.34,
                             "fluency_ratio_half": {"-0.5": 1.0, "+0.5": 1.0}},
    }  # fmt: skip
    manifest = SteeringDirections(
        "tiny",
        {"emotional_valence": 0, "storytelling_index": 1},
        {d: 8.0 * torch.randn(64, generator=gen) for d in STEERABLE},
        {"built_by": "test", "heldout_check": checks},
    ).save(home / "steering")
    env = {
        "RESONANCE_BACKEND": "local",
        "RESONANCE_CACHE": str(cache),
        "RESONANCE_STEERING_DIRECTIONS": str(manifest),
        "RESONANCE_TEXT_WORKERS": "0",
    }
    with served_studio(home, **env) as served:
        yield served


@pytest.fixture
def steer_page(browser, steer_studio):
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    tab.steer_posts = []
    tab.on(
        "request",
        lambda r: (
            tab.steer_posts.append(r.post_data_json)
            if r.method == "POST" and r.url.endswith("/v1/steer")
            else None
        ),
    )
    tab.goto(steer_studio.url + "/")
    tab.wait_for_selector("body[data-ready=true]")
    signed_in(tab, steer_studio, "steer")
    tab.wait_for_selector("#steer-storytelling_index")
    yield tab
    context.close()


def _rewritten_after(page, previous: str) -> str:
    page.wait_for_function(
        "previous => { const t = document.querySelector('#steer-text').textContent;"
        " return t && t !== previous && document.querySelector('#steer-panel-body').getAttribute('aria-busy') === 'false'; }",
        arg=previous,
        timeout=60_000,
    )
    return page.inner_text("#steer-text")


def test_moving_a_slider_rewrites_the_paragraph_and_zero_brings_back_the_unsteered_one(steer_page):
    page = steer_page
    assert page.locator("#steer-sliders input[type=range]").count() == 2  # only the steerable dimensions
    hint = page.inner_text("#steer-storytelling_index-hint")
    assert "0.70 at +1.0" in hint and "rho 1.00" in hint
    assert "reads fluently from −0.5 to +1.0, the slider's range" in hint  # judged fluency 0.70 at -1
    slider = page.locator("#steer-storytelling_index")
    assert (slider.get_attribute("min"), slider.get_attribute("max")) == ("-0.5", "1")
    off = page.inner_text("#steer-off")
    assert "Metaphor density: not steerable: its held-out dose-response is too weak" in off
    assert "Curiosity index: not steerable: no steering direction for tiny" in off

    page.fill("#steer-paragraph", PARAGRAPH)
    page.click("#steer-form button[type=submit]")
    unsteered = _rewritten_after(page, "")
    assert "no steering (all 0)" in page.inner_text("#steer-status")
    assert page.steer_posts[-1]["steer"] == {"emotional_valence": 0, "storytelling_index": 0}

    before = len(page.steer_posts)
    page.focus("#steer-storytelling_index")
    for _ in range(10):  # ten steps of 0.05, as fast as a hand on the keyboard: one request
        page.keyboard.press("ArrowRight")
    assert page.input_value("#steer-storytelling_index") == "0.5"
    steered = _rewritten_after(page, unsteered)
    assert page.steer_posts[before:] == [
        {"paragraph": PARAGRAPH, "seed": 0, "steer": {"emotional_valence": 0, "storytelling_index": 0.5}}
    ]
    assert "Storytelling index +0.50" in page.inner_text("#steer-status")
    row = page.locator("table.steer-change tr.steered")
    assert row.count() == 1 and "+0.50" in row.inner_text()
    assert page.is_hidden("#message"), page.inner_text("#message")

    page.click("#steer-reset")
    assert _rewritten_after(page, steered) == unsteered  # strength 0 is the unsteered model, same seed
    at_zero = page.locator("table.steer-change tbody tr").first.locator("td").nth(2).inner_text()
    assert at_zero != "—"  # the unsteered rewrite's numbers are known now


def test_only_the_latest_slider_position_is_sent_and_shown(steer_page):
    """The page's request queue in the browser: a burst of moves is one request, moves during a request
    wait for it and then only the newest is sent, and the reply to a superseded request is dropped."""
    result = steer_page.evaluate(
        """async () => {
        const { LatestOnly } = await import("/studio/steer.js");
        const sent = [], shown = [], replies = [];
        const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
        const queue = new LatestOnly(
          (request) => { sent.push(request); return new Promise((resolve) => replies.push(() => resolve(request))); },
          { show: (reply) => shown.push(reply), fail: () => {}, busy: () => {}, delay: 20 },
        );
        queue.want(1); queue.want(2);
        await pause(80);
        queue.want(3); queue.want(4);
        await pause(80);
        const whileBusy = [...sent];
        replies[0]();
        await pause(20);
        replies[1]();
        await pause(20);
        return { whileBusy, sent, shown };
      }"""
    )
    assert result == {"whileBusy": [2], "sent": [2, 4], "shown": [4]}
