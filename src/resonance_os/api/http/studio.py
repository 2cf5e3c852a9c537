"""Resonance Studio: the web page served at ``/`` that drives the public API from a browser.

The page is static files shipped in ``resonance_os/api/studio/`` (no build step, no CDN): ``/`` serves
``index.html``, ``/studio/...`` its scripts and styles, and ``/studio/definitions.json`` the HRV
dimensions and their definitions (:mod:`resonance_os.core.hrv_constants`) and the writing reward's terms
with the descriptions the API documents (:class:`~resonance_os.api.http.schemas.WritingTerms`), so the
page's hover text has one source of truth. Every call the page makes goes through the documented ``/v1`` routes with the
tenant's API key, exactly like any other client.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from resonance_os.api.http.schemas import WritingTerms
from resonance_os.api.jobs.hr_ppo import PPO_UPDATE_STEPS
from resonance_os.api.text.rewards import lm_reward_missing
from resonance_os.core.hrv_constants import (
    GAP_CONVENTION,
    HRV_DESCRIPTIONS,
    HRV_DIMENSIONS,
    REWARD_TERM_MEANINGS,
)

STUDIO_DIR = Path(__file__).parents[1] / "studio"
"""The page's files: ``resonance_os/api/studio/``."""

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
"""The page loads only its own files and talks only to its own origin; no referrer leaves it."""
FAST_REWARD = "Fast: the shipped fluency and coherence models, a millisecond a revision."
LM_REWARD = (
    "LM: SmolLM2 reads fluency and coherence; stronger, seconds a revision (training takes far longer)."
)


def definitions() -> dict:
    """The 8 HRV dimensions in vector order and the reward's numeric terms, each with its meaning in
    one sentence, the gap's sign convention, and what the Train form offers: the trainer's update
    size and the writing rewards, each with why this server cannot compute it (null: it can)."""
    terms = [
        {"name": name, "description": REWARD_TERM_MEANINGS[name]}
        for name in WritingTerms.model_fields
        if name != "meta_text"
    ]
    return {
        "dimensions": [{"name": name, "description": HRV_DESCRIPTIONS[name]} for name in HRV_DIMENSIONS],
        "terms": terms,
        "gap": GAP_CONVENTION,
        "training": {
            "update_steps": PPO_UPDATE_STEPS,
            "rewards": [
                {"name": "fast", "description": FAST_REWARD, "unavailable": None},
                {"name": "lm", "description": LM_REWARD, "unavailable": lm_reward_missing()},
            ],
        },
    }


def mount_studio(app: FastAPI) -> None:
    """Serve the studio at ``/`` and its assets under ``/studio`` (kept out of the OpenAPI schema)."""

    @app.get("/", include_in_schema=False)
    def studio_page() -> FileResponse:
        return FileResponse(STUDIO_DIR / "index.html", media_type="text/html", headers=SECURITY_HEADERS)

    @app.get("/studio/definitions.json", include_in_schema=False)
    def studio_definitions() -> dict:
        return definitions()

    app.mount("/studio", StaticFiles(directory=STUDIO_DIR), name="studio")
