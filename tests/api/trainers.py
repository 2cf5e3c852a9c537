"""A stand-in trainer for job-machinery tests: counts slowly, reporting progress (imported by the worker
process through PYTHONPATH)."""

from __future__ import annotations

import os
import time

from resonance_os.api.job_worker import JobReport, TrainingResult
from resonance_os.core.errors import ValidationError


def count(params: dict, report: JobReport) -> TrainingResult:
    steps = int(params["timesteps"]) // 64
    delay = float(os.environ.get("TEST_TRAINER_DELAY", "0.02"))
    for step in range(1, steps + 1):
        time.sleep(delay)
        report.progress(step / steps, {"steps": step}, force=True)
    if params.get("seed") == 13:
        raise ValidationError("seed 13 is unlucky; pick another seed")
    return TrainingResult(metrics={"steps": steps, "pid": os.getpid()}, artifact=b"weights")
