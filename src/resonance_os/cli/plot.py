"""``resonance plot RUN_DIR``: draw a training run's learning curves (``metrics.jsonl``) to a PNG."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from resonance_os.cli.errors import fail, run_reporting_user_errors
from resonance_os.rl.logger import read_metrics

CURVES: tuple[tuple[str, str], ...] = (
    ("episode_reward_mean", "episode reward (mean ± std)"),
    ("loss", "loss"),
    ("policy_loss", "policy loss"),
    ("value_loss", "value loss"),
    ("entropy_loss", "entropy loss"),
    ("explained_variance", "explained variance"),
    ("approx_kl", "approx KL"),
    ("clip_fraction", "clip fraction"),
    ("learning_rate", "learning rate"),
    ("fps", "env steps / second"),
)
"""Metrics drawn, in panel order, with their titles; absent or all-null metrics get no panel."""


def draw_learning_curves(rows: Sequence[dict[str, Any]], out: Path, title: str = "") -> list[str]:
    """Draw one panel per metric present in ``rows`` against ``timesteps``; return the metrics drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def series(key: str) -> tuple[list[float], list[float]]:
        points = [(r["timesteps"], r[key]) for r in rows if _finite(r.get(key)) and "timesteps" in r]
        return [p[0] for p in points], [p[1] for p in points]

    present = [(key, label) for key, label in CURVES if series(key)[0]]
    if not present:
        raise fail(f"no learning-curve metrics in the run's rows; expected some of {[k for k, _ in CURVES]}")
    cols = 2 if len(present) > 1 else 1
    nrows = math.ceil(len(present) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 2.8 * nrows), squeeze=False)
    for ax, (key, label) in zip(axes.flat, present):
        xs, ys = series(key)
        ax.plot(xs, ys, color="tab:blue", linewidth=1.5)
        if key == "episode_reward_mean":
            spread = [(r["timesteps"], r[key], r.get("episode_reward_std")) for r in rows]
            band = [(t, m, s) for t, m, s in spread if _finite(m) and _finite(s)]
            if band:
                ax.fill_between(
                    [b[0] for b in band],
                    [b[1] - b[2] for b in band],
                    [b[1] + b[2] for b in band],
                    color="tab:blue",
                    alpha=0.2,
                    linewidth=0,
                )
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("timesteps", fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(present) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [key for key, _ in present]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def plot(
    run_dir: Path = typer.Argument(..., help="A training run's log_dir (it holds metrics.jsonl)."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="PNG to write. Default RUN_DIR/learning_curves.png."
    ),
) -> None:
    """Draw the learning curves of a training run (metrics.jsonl) to a PNG."""
    rows = run_reporting_user_errors(lambda: read_metrics(run_dir))
    if not rows:
        raise fail(f"{run_dir / 'metrics.jsonl'} has no rows yet; train first (or wait for the first update)")
    target = out if out is not None else run_dir / "learning_curves.png"
    if target.suffix.lower() != ".png":
        raise fail(f"--out {target} must end in .png")
    drawn = draw_learning_curves(rows, target, title=str(run_dir))
    typer.echo(f"wrote {target} ({len(rows)} updates; {', '.join(drawn)})")
