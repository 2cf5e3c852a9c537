"""Resonance Studio's page weight and time to interactive in headless Chromium, against a budget.

Starts ``resonance serve`` (``--backend``: the template drafting mode by default, so the figures do not
wait on a model; ``local`` for screenshots that show SmolLM2's prose) on a fresh SQLite database with a tenant made by
``resonance tenants create``, then loads ``/`` in Debian's Chromium through Playwright, cold (a new
browser context each time), ``--loads`` times per setting:

- desktop: no throttling, 1280x900;
- phone: Lighthouse's mobile setting (4x CPU slowdown, 150 ms round trip, 1.6 Mbit/s down,
  750 kbit/s up), 390x844.

Page weight is the bytes on the wire (``transferSize``: headers + bodies) of every request of the load;
time to interactive is the page's own ``studio-ready`` mark (set once its modules ran, the dimension
definitions arrived and every control has its handler), from navigation start; the median is reported.
With ``--screenshots DIR`` it also trains a writing policy (a real PPO job toward ``creative``, three
updates, through ``/v1/train``; a minute on an idle machine, far longer on a busy one), then drives the main screens (sign in, profile from
text, write with that policy, analyze, refine, learn, train) and saves them at both widths.

    python benchmarks/bench_studio.py --loads 10
    python benchmarks/bench_studio.py --loads 3 --backend local --screenshots docs/img
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

RESONANCE = str(Path(sys.executable).with_name("resonance"))
SETTINGS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}, "cpu": 1, "network": None},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "cpu": 4,
        "network": {"latency": 150, "downloadThroughput": 1.6e6 / 8, "uploadThroughput": 750e3 / 8},
    },
}
WAIT_MS = 600_000
"""How long a screenshot step waits for the page (a 3-paragraph article from the local model takes about
a minute on 2 cores, more on a busy machine)."""
BUDGET = {"weight_kib": 1600.0, "tti_s": 3.8}
"""Lighthouse's guidance: total byte weight under 1,600 KiB; time to interactive under 3.8 s is 'fast'."""

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
"""Rated through the API before the screenshots, so the Learn screen has a reward model to show."""

VOICE = (
    "I walked down to the harbour before dawn. The boats were painted by the fishermen last spring, and "
    "they glowed like lanterns on the black water. Why do we remember mornings like that? My grandfather "
    "told me the sea was a patient teacher. We listened. We learned. Then the sun came up and it was gone!"
)
DRAFT = (
    "We were delighted by the wonderful results. The report was written by the team last week. It is a "
    "very good plan and the numbers are clear. Perhaps the market will grow.\n\n"
    "The market grew quickly in the spring. Prices rose and buyers waited for better deals. The new shop "
    "was opened by the mayor."
)
"""A plain draft refined toward ``creative`` for the refine screenshot (six suggested edits, one of
them rejected before the shot)."""


def start_server(home: Path, backend: str) -> tuple[subprocess.Popen, str, str]:
    env = {**os.environ, "RESONANCE_HOME": str(home), "RESONANCE_BACKEND": backend}
    env.pop("RESONANCE_DB", None)
    db_url = f"sqlite:///{home / 'studio.db'}"
    created = subprocess.run(
        [RESONANCE, "tenants", "create", "studio-bench", "--db", db_url],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = (home / "server.log").open("wb")
    process = subprocess.Popen(
        [RESONANCE, "serve", "--port", str(port), "--db", db_url],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url, created.stdout.strip().splitlines()[-1]
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"server did not start; see {home / 'server.log'}")


def cold_load(browser, url: str, setting: dict) -> tuple[float, int, int]:
    """(seconds to the studio-ready mark, bytes on the wire, requests) of one cold load."""
    context = browser.new_context(viewport=setting["viewport"])
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": setting["cpu"]})
    if setting["network"]:
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {"offline": False, **setting["network"]})
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")
    tti_ms, weight, requests = page.evaluate(
        """() => {
            const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
            return [performance.getEntriesByName("studio-ready")[0].startTime,
                    entries.reduce((sum, e) => sum + e.transferSize, 0), entries.length];
        }"""
    )
    context.close()
    return tti_ms / 1000, weight, requests


POLICY_TIMESTEPS = 3 * 2048
"""Three PPO updates of the default 2,048 steps: a learning curve for the Train screen that a shared,
busy machine trains in minutes (the job worker runs at the lowest CPU priority)."""


def train_policy(url: str, key: str) -> str:
    """A finished policy job's id (and a cancelled job beside it), as the Train screen lists them."""
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    body = {"profile": "creative", "timesteps": POLICY_TIMESTEPS, "seed": 0}
    job = client.post("/v1/train", json=body).json()
    extra = client.post("/v1/train", json={**body, "timesteps": 1_000_000}).json()
    client.delete(f"/v1/jobs/{extra['id']}")
    while (state := client.get(f"/v1/jobs/{job['id']}").json())["state"] not in (
        "succeeded",
        "failed",
        "cancelled",
    ):
        time.sleep(2)
    client.close()
    if state["state"] != "succeeded":
        raise SystemExit(f"the training job for the screenshots {state['state']}: {state['error']}")
    return job["id"]


def screenshots(browser, url: str, key: str, out: Path, width: str, policy: str) -> list[Path]:
    """The main screens at one of the SETTINGS' widths, as PNGs under ``out``."""
    saved = []
    context = browser.new_context(viewport=SETTINGS[width]["viewport"])
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")

    def shot(name: str) -> None:
        path = out / f"studio-{name}-{width}.png"
        page.screenshot(path=path, full_page=True)
        saved.append(path)

    shot("sign-in")
    page.fill("#api-key", key)
    page.press("#api-key", "Enter")
    page.wait_for_selector("#tabs:not([hidden])")
    name = f"harbour-{width}"
    page.fill("#new-name", name)
    page.fill("#new-description", "Morning at sea, learned from a page of memoir")
    page.fill("#voice-text", VOICE)
    page.click("#create-form button[type=submit]")
    page.wait_for_selector("#profile-detail:not([hidden])")
    shot("profiles")
    page.click("#tabs button[data-tab=write]")
    page.fill("#write-prompt", "Why early mornings at the harbour matter")
    page.select_option("#write-policy", policy)
    page.select_option("#write-profile", name)
    page.fill("#write-seed", "7")
    page.click("#write-form button[type=submit]")
    page.wait_for_selector("#write-result:not([hidden])")
    page.click("#article details.numbers summary >> nth=0")
    shot("write")
    page.click("#tabs button[data-tab=analyze]")
    page.fill("#analyze-text", VOICE)
    page.select_option("#analyze-profile", "professional")
    page.click("#analyze-form button[type=submit]")
    page.wait_for_selector("#analyze-result:not([hidden])")
    shot("analyze")
    page.fill("#analyze-text", DRAFT)
    page.select_option("#analyze-profile", "creative")
    page.click("#refine-button")
    page.wait_for_selector("#refine-result:not([hidden])")
    page.check("#suggestion-1-reject")
    page.locator("#refine-result").scroll_into_view_if_needed()
    shot("refine")
    page.click("#tabs button[data-tab=learn]")
    page.click("#train-form button[type=submit]")
    page.wait_for_selector("#notice:has-text('trained')")
    shot("learn")
    page.click("#tabs button[data-tab=train]")
    page.click(f"#job-list button:has-text('{policy[:8]}')")
    page.wait_for_selector("#job-status:has-text('Finished')")
    shot("train")
    context.close()
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=10, help="Cold loads per setting (median reported).")
    parser.add_argument("--screenshots", type=Path, help="Save the main screens here as PNGs.")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument(
        "--backend",
        choices=("builtin", "local"),
        default="builtin",
        help="The server's drafting backend (local: SmolLM2, for screenshots of real prose).",
    )
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-studio-"))
    server, url, key = start_server(home, args.backend)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            print(
                f"Resonance Studio at {url}, {args.loads} cold loads per setting, Chromium {browser.version}"
            )
            print(f"{'setting':<8} {'requests':>8} {'weight KiB':>10} {'budget KiB':>10} {'ratio':>6} "
                  f"{'TTI s':>7} {'budget s':>8} {'ratio':>6}")  # fmt: skip
            for name, setting in SETTINGS.items():
                runs = [cold_load(browser, url, setting) for _ in range(args.loads)]
                tti = statistics.median(r[0] for r in runs)
                weight = statistics.median(r[1] for r in runs) / 1024
                requests = runs[0][2]
                print(f"{name:<8} {requests:>8} {weight:>10.1f} {BUDGET['weight_kib']:>10.0f} "
                      f"{weight / BUDGET['weight_kib']:>6.3f} {tti:>7.3f} {BUDGET['tti_s']:>8.1f} "
                      f"{tti / BUDGET['tti_s']:>6.3f}")  # fmt: skip
            if args.screenshots:
                args.screenshots.mkdir(parents=True, exist_ok=True)
                for i, text in enumerate(RATED_TEXTS):
                    rating = {"kind": "rating", "item": {"text": text}, "rating": 1 + i % 5}
                    httpx.post(  # the first waits for the text workers to start (model loading)
                        f"{url}/v1/feedback",
                        json=rating,
                        headers={"Authorization": f"Bearer {key}"},
                        timeout=WAIT_MS / 1000,
                    )
                policy = train_policy(url, key)
                for width in SETTINGS:
                    for path in screenshots(browser, url, key, args.screenshots, width, policy):
                        print(f"saved {path}")
            browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
