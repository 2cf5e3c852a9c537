"""Read compute curves from the project's metrics JSON Lines (PPO, SAC, GRPO runs) or a CSV file.

JSON Lines: one object per row, as ``rl.logger.MetricsLogger`` writes it; compute defaults to the
``timesteps`` column and the metric to ``pass_rate`` when the run logs it (GRPO), else
``episode_reward_mean``. Rows whose metric is missing or null (no episode finished yet) are skipped.

CSV: a header row naming at least the ``compute`` and ``metric`` columns (or the columns passed).

A run folder stands for its ``metrics.jsonl``.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any

from resonance_os.rl.errors import CurveFitError
from resonance_os.rl.logger import METRICS_FILE
from resonance_os.rl.scaling import ComputeCurve

JSONL_COMPUTE = "timesteps"
JSONL_METRICS = ("pass_rate", "episode_reward_mean")
CSV_COMPUTE, CSV_METRIC = "compute", "metric"


def read_compute_curve(
    path: str | os.PathLike[str],
    *,
    compute: str | None = None,
    metric: str | None = None,
    weights: str | None = None,
    label: str | None = None,
) -> ComputeCurve:
    """Read one run's (compute, metric[, weight]) points from a run folder, a ``.jsonl`` or a ``.csv`` file.

    Args:
        path: run folder (its ``metrics.jsonl``), JSON Lines file, or CSV file with a header row.
        compute: column holding the compute spent; ``timesteps`` (JSON Lines) or ``compute`` (CSV) by default.
        metric: column holding the metric; see the module docstring for the defaults.
        weights: optional column of positive per-point weights.
        label: the run's name; the file's folder (run folder) or stem by default.
    """
    file = Path(path)
    if file.is_dir():
        file = file / METRICS_FILE
    if not file.is_file():
        raise CurveFitError(
            f"no such file {file}; pass a run folder, a metrics .jsonl file or a compute,metric CSV"
        )
    rows = _read_csv(file) if file.suffix.lower() == ".csv" else _read_jsonl(file)
    if not rows:
        raise CurveFitError(f"{file} has no rows; the run logged nothing yet")
    is_csv = file.suffix.lower() == ".csv"
    columns = sorted({key for row in rows for key in row})
    compute = compute or (CSV_COMPUTE if is_csv else JSONL_COMPUTE)
    metric = metric or (
        CSV_METRIC if is_csv else next((m for m in JSONL_METRICS if m in columns), JSONL_METRICS[-1])
    )
    for role, column in (("compute", compute), ("metric", metric), ("weights", weights)):
        if column is not None and column not in columns:
            raise CurveFitError(
                f"{file} has no {role} column {column!r}; its columns are {', '.join(columns)} (choose with --{role})"
            )

    points: list[tuple[float, float, float]] = []
    previous = -math.inf
    for number, row in enumerate(rows, start=2 if is_csv else 1):
        c = _number(row.get(compute), file, number, compute)
        if c is not None:
            if c < previous:
                raise CurveFitError(
                    f"{file} row {number}: {compute} goes back from {previous:g} to {c:g}; the file holds several "
                    "runs appended to one another: give each run its own file"
                )
            previous = c
        m = _number(row.get(metric), file, number, metric)
        w = 1.0 if weights is None else _number(row.get(weights), file, number, weights)
        if c is not None and m is not None and w is not None:
            points.append((c, m, w))
    if not points:
        raise CurveFitError(f"{file} has no row with both {compute!r} and {metric!r}; check the column names")
    name = label if label is not None else (file.parent.name if file.name == METRICS_FILE else file.stem)
    return ComputeCurve(
        [p[0] for p in points],
        [p[1] for p in points],
        None if weights is None else [p[2] for p in points],
        name,
    )


def _read_jsonl(file: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CurveFitError(
                f"{file} line {number} is not JSON ({exc.msg}); pass a JSON Lines or CSV file"
            ) from None
        if not isinstance(row, dict):
            raise CurveFitError(
                f"{file} line {number} is not a JSON object; each line must be one row of metrics"
            )
        rows.append(row)
    return rows


def _read_csv(file: Path) -> list[dict[str, Any]]:
    with file.open(newline="", encoding="utf-8") as handle:
        return [
            {key.strip(): value for key, value in row.items() if key is not None}
            for row in csv.DictReader(handle)
        ]


def _number(value: Any, file: Path, row: int, column: str) -> float | None:
    """A finite float, or None for an absent, empty or null cell; anything else is an error."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CurveFitError(f"{file} row {row}: {column} is {value!r}, not a number") from None
    return number if math.isfinite(number) else None
