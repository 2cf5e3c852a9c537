"""Run a benchmark against the package as it was at an earlier git revision, for side-by-side tables.

``run_at_revision(rev, script, args)`` exports ``src/`` at ``rev`` to a temporary folder and runs
``script`` there in a subprocess whose ``PYTHONPATH`` puts that old source first; the script prints one
JSON line last, which is returned.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_at_revision(revision: str, script: str, args: list[str]) -> dict[str, object]:
    """The last stdout line of ``script args`` run against ``src/`` at git ``revision``, parsed as JSON."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision, "src"], capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        env = {**os.environ, "PYTHONPATH": str(Path(folder) / "src")}
        result = subprocess.run(
            [sys.executable, script, *args], env=env, capture_output=True, text=True, check=True
        )
    return json.loads(result.stdout.strip().splitlines()[-1])
