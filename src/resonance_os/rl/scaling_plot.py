"""Draw fitted compute curves: one panel per recipe, side by side, on a log-compute axis.

Each panel shows the run's points (grey: left out as early compute; hollow: held out for the
extrapolation check), the sigmoid solid over the fitted range and dashed where it extrapolates, its
bootstrap band shaded, the asymptote A dotted, and the power law for comparison.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from resonance_os.rl.errors import CurveFitError
from resonance_os.rl.scaling import ComputeCurve, ScalingFit


def plot_compute_curves(
    fits: Sequence[ScalingFit],
    runs: Sequence[Sequence[ComputeCurve]],
    out: str | os.PathLike[str],
    *,
    metric_name: str = "metric",
    compute_name: str = "compute",
    extend_to: float | None = None,
) -> Path:
    """Write a PNG with one panel per fit (``runs[i]`` are the points of ``fits[i]``); return its path.

    ``extend_to`` draws the curves out to that compute (a budget you are considering); by default to the
    largest compute logged. The file is written under a temporary name and renamed.
    """
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise CurveFitError(f"plot path {out} must end in .png")
    if len(fits) != len(runs) or not fits:
        raise CurveFitError("plot_compute_curves needs one list of runs per fit, and at least one fit")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    same_scale = len({fit.bounds for fit in fits}) == 1  # recipes of one metric share the y axis
    fig, axes = plt.subplots(1, len(fits), figsize=(5.0 * len(fits), 3.8), sharey=same_scale, squeeze=False)
    for ax, fit, fit_runs in zip(axes[0], fits, runs):
        _draw_panel(ax, fit, fit_runs, extend_to)
        ax.set_xlabel(f"{compute_name} (log scale)")
    for ax in axes[0] if not same_scale else axes[0][:1]:
        ax.set_ylabel(metric_name)
    axes[0][-1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        dir=out.parent, prefix=f".{out.stem}.", suffix=".png", delete=False
    ) as handle:
        temp = Path(handle.name)
    try:
        fig.savefig(temp, dpi=120)
        os.replace(temp, out)
    finally:
        plt.close(fig)
        temp.unlink(missing_ok=True)
    return out


def _draw_panel(ax, fit: ScalingFit, runs: Sequence[ComputeCurve], extend_to: float | None) -> None:  # noqa: ANN001
    start, end_fit = fit.fit_range
    cutoff = fit.held_out["from_compute"] if fit.held_out else end_fit
    for run in runs:
        early = run.compute < start
        held = run.compute > cutoff
        used = ~early & ~held
        ax.scatter(run.compute[early], run.metric[early], s=10, color="0.7", label=None)
        ax.scatter(run.compute[used], run.metric[used], s=10, color="tab:blue", alpha=0.7)
        ax.scatter(run.compute[held], run.metric[held], s=12, facecolors="none", edgecolors="tab:blue")
    largest = max(float(run.compute.max()) for run in runs)
    end = max(largest, extend_to or 0.0)
    smallest = min(float(run.compute[run.compute > 0].min()) for run in runs if (run.compute > 0).any())
    inside = np.geomspace(smallest, end_fit, 200)
    beyond = np.geomspace(end_fit, end, 200) if end > end_fit else np.empty(0)
    band_x = np.concatenate([inside, beyond])
    band_low, band_high = fit.band(band_x)
    level = int(round(100 * fit.confidence))
    ax.fill_between(
        band_x, band_low, band_high, color="tab:orange", alpha=0.2, linewidth=0, label=f"{level}% band"
    )
    ax.plot(inside, fit.curve(inside), color="tab:orange", label="sigmoid (fitted)")
    if beyond.size:
        ax.plot(beyond, fit.curve(beyond), color="tab:orange", linestyle="--", label="sigmoid (extrapolated)")
        ax.plot(
            beyond, fit.power_law(beyond), color="tab:green", linestyle=":", label="power law (extrapolated)"
        )
    ax.axhline(fit.curve.a, color="tab:orange", linestyle=":", linewidth=0.8)
    ax.set_xscale("log")
    a_low, a_high = fit.intervals["A"]
    ax.set_title(
        f"{fit.label or 'run'}: A {fit.curve.a:.3g} [{a_low:.3g}, {a_high:.3g}], B {fit.curve.b:.2f}, "
        f"C_mid {fit.curve.c_mid:.3g}",
        fontsize=9,
    )
