"""Sigmoidal compute curves (rl.scaling): recovery, intervals, extrapolation, inputs, errors and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.rl.errors import CurveFitError
from resonance_os.rl.logger import MetricsLogger
from resonance_os.rl.scaling import ComputeCurve, SigmoidCurve, fit_compute_curve
from resonance_os.rl.scaling_io import read_compute_curve

TRUTH = SigmoidCurve(r0=0.40, a=0.61, b=1.92, c_mid=2542.0)  # ScaleRL's 8B dense run (14k generation length)
runner = CliRunner()


def noisy_run(
    truth: SigmoidCurve = TRUTH, budget: float = 16_000.0, n: int = 80, sd: float = 0.01, seed: int = 0
):
    rng = np.random.default_rng(seed)
    compute = np.linspace(budget / n, budget, n)
    return ComputeCurve(compute, truth(compute) + rng.normal(0.0, sd, n), label=f"seed{seed}")


def write_csv(path: Path, run: ComputeCurve) -> Path:
    path.write_text("compute,metric\n" + "".join(f"{c},{m}\n" for c, m in zip(run.compute, run.metric)))
    return path


def test_fit_recovers_the_papers_curve_within_its_intervals():
    fit = fit_compute_curve(noisy_run(), n_bootstrap=60, seed=0)
    truth = TRUTH.as_dict()
    for name, value in fit.curve.as_dict().items():
        low, high = fit.intervals[name]
        assert low <= truth[name] <= high, (name, low, truth[name], high)
        assert low <= value <= high
    assert abs(fit.curve.a - TRUTH.a) < 0.01
    assert abs(fit.curve.c_mid / TRUTH.c_mid - 1) < 0.15
    assert fit.warnings == ()


def test_sigmoid_extrapolates_from_half_the_budget_better_than_a_power_law():
    truth = SigmoidCurve(0.40, 0.645, 1.89, 11_272.0)  # the 8B run continued to 100k GPU-hours
    run = noisy_run(truth, budget=100_000.0, sd=0.008, seed=3)
    fit = fit_compute_curve(run, exclude_below=1500.0, fit_fraction=0.5, n_bootstrap=0)
    held = run.compute[run.compute > 50_000.0]
    assert fit.held_out == {"from_compute": 50_000.0, "to_compute": 100_000.0, "points": held.size}
    assert fit.fit_range[1] <= 50_000.0
    sigmoid = np.abs(fit.curve(held) - truth(held)).mean()
    power_law = np.abs(fit.power_law(held) - truth(held)).mean()
    assert sigmoid < 0.5 * power_law
    assert fit.extrapolation_error["sigmoid"] < fit.extrapolation_error["power_law"]


def test_robust_loss_shrugs_off_spikes_that_pull_plain_least_squares():
    run = noisy_run(sd=0.005, seed=1)
    spiked = run.metric.copy()
    spiked[60::4] -= 0.25  # collapsed evaluations near the end
    corrupted = ComputeCurve(run.compute, spiked)
    robust = fit_compute_curve(corrupted, n_bootstrap=0)
    plain = fit_compute_curve(corrupted, loss="linear", n_bootstrap=0)
    assert abs(robust.curve.a - TRUTH.a) < 0.01
    assert abs(plain.curve.a - TRUTH.a) > 2 * abs(robust.curve.a - TRUTH.a)


def test_weights_discount_points_the_user_distrusts():
    run = noisy_run(sd=0.005, seed=2)
    biased = run.metric.copy()
    biased[-20:] -= 0.08
    weights = np.where(np.arange(run.compute.size) >= run.compute.size - 20, 1e-4, 1.0)
    weighted = fit_compute_curve(ComputeCurve(run.compute, biased, weights), loss="linear", n_bootstrap=0)
    unweighted = fit_compute_curve(ComputeCurve(run.compute, biased), loss="linear", n_bootstrap=0)
    assert abs(weighted.curve.a - TRUTH.a) < 0.02 < abs(unweighted.curve.a - TRUTH.a)


def test_fixed_r0_and_a_grid_follow_the_papers_procedure():
    run = noisy_run(seed=4)
    grid = np.round(np.arange(0.55, 0.70001, 0.005), 3)
    fit = fit_compute_curve(run, r0=0.40, a_grid=grid, exclude_below=1500.0, n_bootstrap=10)
    assert fit.curve.r0 == 0.40 and fit.intervals["R0"] == (0.40, 0.40)
    assert np.isclose(grid, fit.curve.a).any()  # A is a grid value
    assert abs(fit.curve.a - TRUTH.a) <= 0.01
    assert fit.fit_range[0] >= 1500.0


def test_bootstrap_over_seeds_carries_the_spread_between_runs():
    seeds = [
        noisy_run(SigmoidCurve(0.40, a, 1.92, 2542.0), sd=0.002, seed=s)
        for s, a in enumerate((0.58, 0.61, 0.64))
    ]
    pooled = fit_compute_curve(seeds, n_bootstrap=80, block_length=1, seed=0)
    single = fit_compute_curve(seeds[1], n_bootstrap=80, block_length=1, seed=0)
    assert pooled.n_runs == 3 and pooled.n_points == 3 * seeds[0].compute.size
    pooled_width = np.subtract(*pooled.intervals["A"][::-1])
    single_width = np.subtract(*single.intervals["A"][::-1])
    assert pooled_width > 0.02 and pooled_width > 4 * single_width
    assert pooled.intervals["A"][0] <= 0.61 <= pooled.intervals["A"][1]


def test_fit_refuses_data_it_cannot_fit_with_a_clear_message():
    run = noisy_run()
    with pytest.raises(CurveFitError, match="needs at least 6"):
        fit_compute_curve(ComputeCurve(run.compute[:5], run.metric[:5]))
    with pytest.raises(CurveFitError, match="does not rise with compute"):
        fit_compute_curve(ComputeCurve(run.compute, run.metric[::-1]))
    returns = ComputeCurve(run.compute, 500.0 * run.metric)
    with pytest.raises(CurveFitError, match=r"outside the bounds \[0, 1\].*--bounds"):
        fit_compute_curve(returns)
    assert abs(fit_compute_curve(returns, bounds=(0.0, 500.0), n_bootstrap=0).curve.a - 500 * TRUTH.a) < 5
    with pytest.raises(CurveFitError, match="fit_fraction"):
        fit_compute_curve(run, fit_fraction=1.5)
    with pytest.raises(CurveFitError, match="exclusion"):
        fit_compute_curve(run, exclude_below=15_900.0)
    with pytest.raises(CurveFitError, match="negative compute"):
        ComputeCurve([-1.0, 2.0], [0.1, 0.2])
    with pytest.raises(CurveFitError, match="unknown loss"):
        fit_compute_curve(run, loss="l2")


def test_reads_the_projects_metrics_jsonl_and_csv(tmp_path: Path):
    with MetricsLogger(tmp_path / "ppo") as logger:
        logger.record({"episode_reward_mean": float("nan"), "fps": 900.0}, timesteps=2048)  # no episode yet
        for i in range(2, 8):
            logger.record({"episode_reward_mean": 20.0 * i, "fps": 900.0}, timesteps=2048 * i)
    run = read_compute_curve(tmp_path / "ppo")
    assert run.label == "ppo" and run.compute.tolist() == [2048.0 * i for i in range(2, 8)]
    assert run.metric.tolist() == [20.0 * i for i in range(2, 8)]
    assert read_compute_curve(tmp_path / "ppo", compute="time_elapsed").compute.size == 6

    with MetricsLogger(tmp_path / "grpo") as logger:
        for i in range(1, 4):
            logger.record({"episode_reward_mean": 0.1 * i, "pass_rate": 0.2 * i}, timesteps=i)
    assert read_compute_curve(tmp_path / "grpo").metric.tolist() == pytest.approx([0.2, 0.4, 0.6])

    csv = write_csv(tmp_path / "curve.csv", noisy_run())
    assert read_compute_curve(csv).compute.size == 80

    with pytest.raises(CurveFitError, match="no metric column 'reward'.*episode_reward_mean"):
        read_compute_curve(tmp_path / "ppo", metric="reward")
    with MetricsLogger(tmp_path / "ppo") as logger:  # a second run appended to the same file
        logger.record({"episode_reward_mean": 5.0}, timesteps=2048)
    with pytest.raises(CurveFitError, match="goes back from 14336 to 2048.*its own file"):
        read_compute_curve(tmp_path / "ppo")


def test_cli_prints_one_json_object_per_recipe(tmp_path: Path):
    files = [write_csv(tmp_path / f"s{seed}.csv", noisy_run(seed=seed)) for seed in range(3)]
    args = ["scaling", "fit", f"base={files[0]}", f"base={files[1]}", str(files[2])]
    plot = tmp_path / "curves.png"
    result = runner.invoke(
        app, [*args, "--fit-fraction", "0.5", "--bootstrap", "20", "--json", "--plot", str(plot)]
    )
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.output.splitlines()]
    assert [o["label"] for o in objects] == ["base", "s2"] and [o["runs"] for o in objects] == [2, 1]
    for obj in objects:
        for name in ("R0", "A", "B", "C_mid"):
            assert set(obj["intervals"][name]) == {"low", "high"}
            assert obj["intervals"][name]["low"] <= obj["intervals"][name]["high"]
        assert obj["intervals"]["A"]["low"] - 0.02 <= TRUTH.a <= obj["intervals"]["A"]["high"] + 0.02
        assert set(obj["extrapolation_error"]) == {"sigmoid", "power_law"}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    table = runner.invoke(app, ["scaling", "fit", str(files[0]), "--bootstrap", "10"])
    assert table.exit_code == 0 and "C_mid" in table.output
    assert "extrapolation_error" not in runner.invoke(app, ["scaling", "fit", str(files[0]), "--json"]).output


def test_cli_reports_bad_input_in_one_line(tmp_path: Path):
    csv = write_csv(tmp_path / "returns.csv", ComputeCurve(np.arange(1.0, 21.0), np.linspace(10, 400, 20)))
    result = runner.invoke(app, ["scaling", "fit", str(csv)])
    assert result.exit_code == 2 and "--bounds" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["scaling", "fit", str(csv), "--bounds", "0", "500", "--a-grid", "0.5"])
    assert result.exit_code == 2 and "LOW:HIGH:STEP" in result.output
    result = runner.invoke(app, ["scaling", "fit", str(tmp_path / "missing.csv")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_importing_scaling_loads_no_torch():
    code = (
        "import sys, resonance_os.rl.scaling, resonance_os.rl.scaling_io; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
