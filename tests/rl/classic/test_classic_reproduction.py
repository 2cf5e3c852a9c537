"""Quick reproductions of the book's figures: the qualitative results, with margins."""

import numpy as np
import pytest

from resonance_os.rl.errors import ConfigError
from resonance_os.rl.sutton_reproduction import FIGURES, format_result, reproduce


def _run(name, tmp_path=None):
    (result,) = reproduce([name], out=tmp_path, quick=True)
    return result


def test_gridworld_path_is_shortest_and_article_variant_settles_within_1000_steps(tmp_path):
    result = _run("gridworld", tmp_path)
    d = result.data
    assert d["path_length"] == d["shortest"] == 7
    article = d["curves"]["article (all actions, alpha 0.005)"]
    assert article[d["checkpoints"] == 1000][0] >= 0.9 and article[d["checkpoints"] == 100][0] < 0.5
    assert {p.name for p in result.pngs} == {"gridworld_values.png", "gridworld_learning_curve.png"}
    assert all(p.stat().st_size > 5000 for p in result.pngs)
    assert "V(start)" in format_result(result)


def test_fig_9_1_mc_staircase_is_close_to_the_true_values():
    d = _run("9.1").data
    assert np.max(np.abs(d["w"] - d["asymptote"])) < 0.04
    assert d["root_ve"] < 0.07


def test_fig_9_2_right_best_n_is_small():
    d = _run("9.2-right").data
    best = d["errors"].min(axis=1)
    assert d["best_n"] in (2, 4, 8) and best.min() < 0.31
    assert best[d["ns"].index(512)] > best.min() + 0.1  # large n degrade


def test_fig_9_5_fourier_beats_polynomials():
    curves = _run("9.5").data["curves"]
    fourier = [curves[f"Fourier {n}"][-1] for n in (5, 10, 20)]
    poly = [curves[f"polynomial {n}"][-1] for n in (5, 10, 20)]
    assert max(fourier) < 0.07 and min(poly) > 0.1 and max(fourier) < 0.7 * min(poly)


def test_fig_9_10_many_tilings_beat_one():
    curves = _run("9.10").data["curves"]
    one, many = curves["state aggregation (one tiling)"][-1], curves["tile coding (50 tilings)"][-1]
    assert many < 0.8 * one


def test_fig_10_2_mountain_car_steps_fall_well_below_the_start():
    curves = _run("10.2").data["curves"]
    for curve in curves.values():
        assert curve[-10:].mean() < 0.2 * curve[0]
    assert curves[0.5][-20:].mean() < curves[0.1][-20:].mean()  # larger alpha learns faster


def test_unknown_figure_is_a_clear_error():
    with pytest.raises(ConfigError, match="9.3"):
        reproduce(["9.3"])
    assert set(FIGURES) == {"gridworld", "9.1", "9.2-left", "9.2-right", "9.5", "9.10", "10.2"}


@pytest.mark.slow
def test_full_reproduction_matches_the_book(tmp_path):
    results = {r.figure: r for r in reproduce(out=tmp_path)}
    assert results["9.2 right"].data["best_n"] == 4
    curves = results["10.2"].data["curves"]
    assert 110 < curves[0.5][-10:].mean() < 150
    assert len(list(tmp_path.glob("*.png"))) == 8
