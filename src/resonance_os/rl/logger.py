"""One metrics logger for every algorithm: JSON Lines on disk, optional TensorBoard, a live progress bar.

Metric names follow the spec: ``episode_reward_mean``, ``episode_reward_std``, ``loss``,
``policy_loss``, ``value_loss``, ``entropy_loss``, ``explained_variance``, ``learning_rate``, plus
``fps``, ``approx_kl``, ``clip_fraction`` and ``timesteps``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from resonance_os.rl.errors import LogDirError

METRICS_FILE = "metrics.jsonl"


class MetricsLogger:
    """Record metric dictionaries keyed by timestep.

    Args:
        log_dir: folder for ``metrics.jsonl`` (and TensorBoard events); ``None`` keeps metrics in memory.
        tensorboard: also write TensorBoard scalars (needs the ``tensorboard`` package).
        progress_bar: show a live bar of timesteps on the terminal.
        total_timesteps: length of the bar.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        *,
        tensorboard: bool = False,
        progress_bar: bool = False,
        total_timesteps: int | None = None,
        description: str = "training",
    ) -> None:
        self.history: list[dict[str, Any]] = []
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self._file = None
        self._tb = None
        self._start = time.time()
        if self.log_dir is not None:
            try:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                self._file = open(self.log_dir / METRICS_FILE, "a", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                raise LogDirError(
                    f"cannot write metrics to {self.log_dir}: {exc}; pass a writable log_dir"
                ) from exc
            if tensorboard:
                try:
                    from torch.utils.tensorboard import SummaryWriter
                except ImportError as exc:
                    raise LogDirError(
                        "tensorboard=True needs the tensorboard package: pip install tensorboard"
                    ) from exc
                self._tb = SummaryWriter(str(self.log_dir))
        self._progress: Progress | None = None
        self._task = None
        if progress_bar:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[summary]}"),
                TimeRemainingColumn(),
            )
            self._task = self._progress.add_task(description, total=total_timesteps, summary="")
            self._progress.start()

    def record(self, metrics: Mapping[str, float], timesteps: int) -> dict[str, Any]:
        """Store one row of metrics at ``timesteps``; non-finite values are written as ``null``."""
        row: dict[str, Any] = {
            "timesteps": int(timesteps),
            "time_elapsed": round(time.time() - self._start, 3),
        }
        for key, value in metrics.items():
            number = float(value)
            row[key] = number if math.isfinite(number) else None
        self.history.append(row)
        if self._file is not None:
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()
        if self._tb is not None:
            for key, value in row.items():
                if key != "timesteps" and value is not None:
                    self._tb.add_scalar(f"train/{key}", value, int(timesteps))
        if self._progress is not None:
            reward = row.get("episode_reward_mean")
            summary = f"reward {reward:.3f}" if reward is not None else ""
            self._progress.update(self._task, completed=int(timesteps), summary=summary)
        return row

    def advance(self, timesteps: int) -> None:
        """Move the progress bar to ``timesteps`` without recording metrics."""
        if self._progress is not None:
            self._progress.update(self._task, completed=int(timesteps))

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_metrics(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read every row of ``run_dir/metrics.jsonl``; raise ``LogDirError`` when there is none."""
    file = Path(run_dir) / METRICS_FILE
    if not file.is_file():
        raise LogDirError(f"no {METRICS_FILE} in {run_dir}; pass the log_dir of a training run")
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise LogDirError(f"{file} line {number} is not JSON ({exc}); the file is corrupt") from exc
    return rows
