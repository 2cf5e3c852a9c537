"""The documented client flow of the ResonanceOS service, end to end, with httpx.

Against your server:  RESONANCE_URL=http://127.0.0.1:8000 RESONANCE_TENANT=acme RESONANCE_API_KEY=rsk_... python examples/api_hr_example.py
Self-contained:       python examples/api_hr_example.py   (starts a throw-away server on 127.0.0.1)

Steps: a profile from a sample text, an article toward it (the documented /hr_generate and the full
/v1/generate), analysis and scoring, feedback (ratings and preferences), a reward model trained on it,
and a PPO training job steered by it, whose policy then writes. With the local model as the server's
writer the self-contained run takes about 8 minutes on 2 CPU cores (18 paragraphs, each drafted from
6 candidates and up to 2 sentence rewrites); with RESONANCE_BACKEND=builtin (template draft mode)
about 20 seconds.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

SAMPLE = (
    "Last spring our team rebuilt the onboarding flow from scratch. We talked to forty new users. "
    "Why did so many of them stop at step three? The answer was simple: the form asked for too much, "
    "too soon. We cut it in half, and sign-ups rose by a third within a month."
)


# The server answers a generation that runs past its budget (RESONANCE_GENERATE_BUDGET_S, default 300 s)
# with 503; the client waits longer than that, so the server's answer, not a client-side timeout, ends a
# slow call. A fresh server's first generation also starts its text workers (each loads the local model,
# converting it once on a fresh install, and writes a warm-up paragraph): 2-4 minutes on 2 cores, so the
# throw-away server below gets a longer budget.
THROW_AWAY_BUDGET_S = 900
TIMEOUT = httpx.Timeout(30.0, read=THROW_AWAY_BUDGET_S + 60.0)


@contextmanager
def local_server():
    """Start ``python -m resonance_os.api.hr_server`` with a fresh database; yield (url, key)."""
    from resonance_os.api.persistence.db import Database
    from resonance_os.api.persistence.tenants import create_tenant

    with tempfile.TemporaryDirectory(prefix="resonance-example-") as home:
        os.environ["RESONANCE_HOME"] = home
        db_url = f"sqlite:///{Path(home) / 'service.db'}"
        db = Database(db_url)
        db.migrate()
        key = create_tenant(db, "acme")
        db.dispose()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(port), "--db", db_url],
            env={**os.environ, "RESONANCE_GENERATE_BUDGET_S": str(THROW_AWAY_BUDGET_S)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            yield url, key, "acme"
        finally:
            server.terminate()
            server.wait(timeout=30)


def check(response: httpx.Response) -> dict:
    if response.is_error:
        error = response.json().get("error", {})
        raise SystemExit(
            f"{response.request.method} {response.request.url.path}: {response.status_code} {error}"
        )
    return response.json() if response.content else {}


def wait_for_job(api: httpx.Client, job: dict) -> dict:
    """Follow a queued job (training, or a reward-model fit) until it ends, printing its progress."""
    shown = None
    while job["state"] in ("queued", "starting", "running"):
        time.sleep(1)
        job = check(api.get(f"/v1/jobs/{job['id']}"))
        if (job["state"], job["progress"]) != shown:
            shown = (job["state"], job["progress"])
            print(f"  {job['kind']} job {job['id'][:8]} {job['state']} {job['progress']:.0%}")
    return job


def run(url: str, key: str, tenant: str) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT) as api:
        print("health:", check(api.get("/health")))

        profile = check(api.post("/v1/profiles/from-text", json={"name": "blog", "text": SAMPLE}))
        print(f"profile blog v{profile['version']}:", {k: round(v, 2) for k, v in profile["hrv"].items()})

        started_at = time.monotonic()
        documented = check(
            api.post("/hr_generate", json={"prompt": "onboarding", "tenant": tenant, "profile_name": "blog"})
        )
        seconds = time.monotonic() - started_at
        print(f"\n/hr_generate article ({seconds:.0f} s):\n" + documented["article"][:400] + " ...")

        drafts = [
            check(
                api.post(
                    "/v1/generate",
                    json={"prompt": "onboarding", "profile": "blog", "paragraphs": 1, "seed": s},
                )
            )
            for s in range(12)
        ]
        print(
            f"\n{len(drafts)} drafts, resonance {min(d['resonance'] for d in drafts):.3f}-{max(d['resonance'] for d in drafts):.3f}"
        )

        analysis = check(api.post("/v1/analyze", json={"text": drafts[0]["article"]}))
        print("questions found:", analysis["evidence"]["curiosity_index"]["questions"])
        score = check(api.post("/v1/score", json={"text": SAMPLE, "profile": "blog"}))
        print(f"sample vs blog: resonance {score['resonance']:.3f}")

        # An editor who likes curious drafts: rate each and compare neighbours.
        curiosity = [d["hrv"]["curiosity_index"] for d in drafts]
        for draft, c in zip(drafts, curiosity):
            check(
                api.post(
                    "/v1/feedback",
                    json={"kind": "rating", "item": {"id": draft["id"]}, "rating": 1 + round(4 * c)},
                )
            )
        for i in range(len(drafts)):
            j = (i + 1) % len(drafts)
            preferred = "a" if curiosity[i] >= curiosity[j] else "b"
            body = {
                "kind": "preference",
                "item": {"id": drafts[i]["id"]},
                "other": {"id": drafts[j]["id"]},
                "preferred": preferred,
            }
            check(api.post("/v1/feedback", json=body))
        fit = wait_for_job(api, check(api.post("/v1/reward-model/train", json={"seed": 0})))
        if fit["state"] != "succeeded":
            raise SystemExit(f"reward model training {fit['state']}: {fit['error']}")
        model = check(api.get("/v1/reward-model"))
        print(
            f"reward model v{model['version']}:",
            {k: v for k, v in model["metrics"].items() if "accuracy" in k or "mae" in k},
        )

        started = api.post("/v1/train", json={"profile": "blog", "timesteps": 2048, "seed": 0})
        if started.status_code == 503:
            print("training is not available on this server:", started.json()["error"]["message"])
            return
        job = wait_for_job(api, check(started))
        if job["state"] == "failed":
            raise SystemExit(f"training failed: {job['error']}")
        steered = check(
            api.post(
                "/v1/generate",
                json={"prompt": "onboarding", "profile": "blog", "policy": job["id"], "seed": 1},
            )
        )
        print(
            f"\npolicy-steered article (resonance {steered['resonance']:.3f}):\n"
            + steered["article"][:400]
            + " ..."
        )


if __name__ == "__main__":
    if os.environ.get("RESONANCE_API_KEY"):
        run(
            os.environ.get("RESONANCE_URL", "http://127.0.0.1:8000"),
            os.environ["RESONANCE_API_KEY"],
            os.environ["RESONANCE_TENANT"],
        )
    else:
        with local_server() as (server_url, api_key, tenant_name):
            run(server_url, api_key, tenant_name)
