"""``resonance scaling fit FILE...``: fit sigmoidal compute curves (ScaleRL) to training runs.

Each FILE is a run folder, a metrics ``.jsonl`` or a ``compute,metric`` CSV. ``NAME=FILE`` names the run's
recipe; runs given the same NAME are seeds of one config, fitted together with a bootstrap over seeds.
Prints a table of (R0, A, B, C_mid) with intervals per recipe, or with ``--json`` one JSON object per
recipe per line; ``--plot`` draws the curves side by side.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.rl.errors import CurveFitError

if TYPE_CHECKING:  # rl.scaling loads SciPy: imported by the commands that fit, not at start-up
    from resonance_os.rl.scaling import ComputeCurve, ScalingFit

console = Console(highlight=False)
app = typer.Typer(
    help="Fit sigmoidal compute curves (ScaleRL) to RL runs: ceiling, efficiency, extrapolation.",
    no_args_is_help=True,
)


@app.command("fit")
def fit(
    files: list[str] = typer.Argument(
        ...,
        metavar="FILE...",
        help="Run folder, metrics .jsonl or compute,metric .csv; NAME=FILE groups runs (seeds) of one recipe.",
    ),
    compute: str | None = typer.Option(
        None,
        help="Compute column (GPU-hours, CPU-seconds, samples...): timesteps for .jsonl, compute for .csv.",
    ),
    metric: str | None = typer.Option(
        None, help="Metric column: pass_rate if logged, else episode_reward_mean; metric for .csv."
    ),
    weights: str | None = typer.Option(None, help="Column of positive per-point weights (default: equal)."),
    bounds: tuple[float, float] = typer.Option(
        (0.0, 1.0), metavar="LOW HIGH", help="The metric's possible range (e.g. 0 500 for CartPole returns)."
    ),
    r0: float | None = typer.Option(None, "--r0", help="Fix R0 at this value (the untrained metric)."),
    a_grid: str | None = typer.Option(
        None, metavar="LOW:HIGH:STEP", help="Grid-search the asymptote A over these values (the paper's fit)."
    ),
    exclude_below: float = typer.Option(
        0.0, help="Leave out points at compute below C (the early, noisy regime)."
    ),
    fit_fraction: float | None = typer.Option(
        None,
        help="Fit only up to this fraction of the largest compute; report the error predicting the rest.",
    ),
    loss: str = typer.Option("soft_l1", help="Robust loss: soft_l1, huber, cauchy or linear."),
    bootstrap: int = typer.Option(200, help="Bootstrap refits for the intervals."),
    block_length: int | None = typer.Option(
        None,
        help="Points per bootstrap block (default: from the residuals' autocorrelation; 1: single points).",
    ),
    confidence: float = typer.Option(0.95, help="Two-sided level of the intervals."),
    seed: int = typer.Option(0, help="Seed of the bootstrap."),
    plot: Path | None = typer.Option(None, help="Write the fitted curves side by side to this .png."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per recipe per line."),
) -> None:
    """Fit R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) to each recipe, with bootstrap intervals."""

    def run() -> None:
        from resonance_os.rl.scaling import fit_compute_curve

        groups = _read_groups(files, compute, metric, weights)
        grid = _parse_grid(a_grid)
        fits = [
            fit_compute_curve(
                runs,
                bounds=bounds,
                r0=r0,
                a_grid=grid,
                exclude_below=exclude_below,
                fit_fraction=fit_fraction,
                loss=loss,
                n_bootstrap=bootstrap,
                block_length=block_length,
                confidence=confidence,
                seed=seed,
                label=name,
            )
            for name, runs in groups.items()
        ]
        _show(fits, list(groups.values()), plot, as_json, metric, compute, confidence)

    run_reporting_user_errors(run)


def _show(
    fits: list[ScalingFit],
    runs: list[list[ComputeCurve]],
    plot: Path | None,
    as_json: bool,
    metric: str | None,
    compute: str | None,
    confidence: float,
) -> None:
    """Print the fits (a table, or one JSON object per recipe per line) and draw them to ``plot``."""
    if plot is not None:
        from resonance_os.rl.scaling_plot import plot_compute_curves

        plot_compute_curves(
            fits, runs, plot, metric_name=metric or "metric", compute_name=compute or "compute"
        )
    if as_json:
        for result in fits:
            typer.echo(json.dumps(result.to_dict()))
    else:
        _print_table(fits, confidence)
        if plot is not None:
            console.print(f"plot: {plot}")


def _read_groups(
    files: list[str], compute: str | None, metric: str | None, weights: str | None
) -> dict[str, list[ComputeCurve]]:
    """Runs grouped by recipe name, in the order first given; an unnamed FILE is its own recipe."""
    from resonance_os.rl.scaling_io import read_compute_curve

    groups: dict[str, list[ComputeCurve]] = {}
    for spec in files:
        name, path = None, spec
        if "=" in spec and not Path(spec).exists():
            name, path = spec.split("=", 1)
        run = read_compute_curve(path, compute=compute, metric=metric, weights=weights)
        key = name if name else run.label
        if not name and key in groups:
            key = path
        groups.setdefault(key, []).append(run)
    return groups


def _parse_grid(spec: str | None) -> list[float] | None:
    if spec is None:
        return None
    try:
        low, high, step = (float(part) for part in spec.split(":"))
    except ValueError:
        raise CurveFitError(f"--a-grid {spec!r} must be LOW:HIGH:STEP, e.g. 0.45:0.80:0.005") from None
    if not (step > 0 and high >= low):
        raise CurveFitError(f"--a-grid {spec!r} needs STEP > 0 and HIGH >= LOW")
    count = int(np.floor((high - low) / step + 1e-9)) + 1
    if count > 2000:
        raise CurveFitError(f"--a-grid {spec!r} has {count} values; use a coarser STEP (at most 2000 values)")
    return [low + i * step for i in range(count)]


def _print_table(fits: list[ScalingFit], confidence: float) -> None:
    from resonance_os.rl.scaling import PARAMETERS

    table = Table(title=f"Sigmoidal compute curves, {round(100 * confidence)}% bootstrap intervals")
    table.add_column("recipe")
    table.add_column("runs / points", justify="right")
    for name in PARAMETERS:
        table.add_column(name, justify="right")
    extrapolated = any(f.extrapolation_error is not None for f in fits)
    if extrapolated:
        table.add_column("extrapolation MAE sigmoid / power law", justify="right")
    for result in fits:
        values = result.curve.as_dict()
        cells = [result.label, f"{result.n_runs} / {result.n_points}"]
        for name in PARAMETERS:
            low, high = result.intervals[name]
            cells.append(f"{values[name]:.4g} [{low:.4g}, {high:.4g}]")
        if extrapolated:
            error = result.extrapolation_error
            cells.append(f"{error['sigmoid']:.4g} / {error['power_law']:.4g}" if error else "")
        table.add_row(*cells)
    console.print(table)
    for result in fits:
        for note in result.warnings:
            console.print(f"[yellow]{result.label}:[/yellow] {note}")
