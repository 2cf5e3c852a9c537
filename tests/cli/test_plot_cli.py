"""``resonance plot RUN_DIR``: learning curves from metrics.jsonl to a PNG, clear errors otherwise."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.rl.logger import MetricsLogger

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_run(run_dir: Path, updates: int = 5) -> None:
    with MetricsLogger(run_dir) as logger:
        for i in range(1, updates + 1):
            logger.record(
                {
                    "episode_reward_mean": -1000 + 150 * i,
                    "episode_reward_std": 50.0,
                    "loss": 1.0 / i,
                    "value_loss": 2.0 / i,
                    "explained_variance": float("nan") if i == 1 else 0.1 * i,
                    "fps": 1500.0,
                },
                timesteps=4096 * i,
            )


def test_plot_writes_a_png_of_the_learning_curves(tmp_path: Path):
    write_run(tmp_path / "run")
    out = tmp_path / "figs" / "curves.png"
    result = runner.invoke(app, ["plot", str(tmp_path / "run"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert "episode_reward_mean" in result.output and "explained_variance" in result.output
    assert "policy_loss" not in result.output  # absent metrics get no panel


def test_plot_defaults_to_a_png_inside_the_run_dir(tmp_path: Path):
    write_run(tmp_path)
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "learning_curves.png").read_bytes()[:8] == PNG_MAGIC


def test_plot_reports_a_missing_or_empty_run_in_one_line(tmp_path: Path):
    result = runner.invoke(app, ["plot", str(tmp_path / "nothing")])
    assert result.exit_code == 2
    assert "no metrics.jsonl" in result.output
    (tmp_path / "metrics.jsonl").write_text("")
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2 and "no rows" in result.output
    write_run(tmp_path / "ok")
    result = runner.invoke(app, ["plot", str(tmp_path / "ok"), "--out", str(tmp_path / "x.jpg")])
    assert result.exit_code == 2 and ".png" in result.output
