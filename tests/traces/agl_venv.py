"""The separate virtual environment with agentlightning 0.3.0 (its pins clash with ours: httpx,
OpenTelemetry), used to run Agent Lightning's own code beside ours. ``$RESONANCE_AGL_PYTHON`` names its
interpreter (default ``/tmp/agl-venv/bin/python``); docs/agents.md says how to make it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

AGL_PYTHON = Path(os.environ.get("RESONANCE_AGL_PYTHON", "/tmp/agl-venv/bin/python"))
AGL_ENV = {
    **os.environ,
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "AGENTOPS_API_KEY": "",
    "PYTHONWARNINGS": "ignore",
}


def has_agentlightning() -> bool:
    if not AGL_PYTHON.exists():
        return False
    probe = subprocess.run(
        [str(AGL_PYTHON), "-c", "import importlib.metadata as m; print(m.version('agentlightning'))"],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0 and probe.stdout.strip() == "0.3.0"


def require_agentlightning() -> None:
    if not has_agentlightning():
        reason = (
            f"agentlightning 0.3.0 is not installed at {AGL_PYTHON} (python3.11 -m venv /tmp/agl-venv && "
            "/tmp/agl-venv/bin/pip install agentlightning==0.3.0 'opentelemetry-sdk<1.45' "
            "'opentelemetry-exporter-otlp-proto-http<1.45'; or set $RESONANCE_AGL_PYTHON)"
        )
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)


def run_agl(script: str, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Run ``script`` (Python source) with agentlightning's interpreter; fail with its output."""
    done = subprocess.run(
        [str(AGL_PYTHON), "-c", script, *args], capture_output=True, text=True, env=AGL_ENV, timeout=timeout
    )
    assert done.returncode == 0, (
        f"agentlightning script failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done
