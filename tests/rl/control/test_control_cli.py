"""``resonance control``: learns, compares with no control, plots; user mistakes exit 2 with one line."""

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app


def test_lqr_on_mgm_prints_the_comparison_and_plots(tmp_path):
    out = tmp_path / "mgm.png"
    result = CliRunner().invoke(app, ["control", "mgm", "--algo", "lqr", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert "uncontrolled" in result.output and "LQR" in result.output
    assert out.stat().st_size > 10_000


def test_gp_with_a_tiny_budget_runs(tmp_path):
    result = CliRunner().invoke(
        app, ["control", "vanderpol", "--algo", "gp", "--steps", "400", "--seed", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "GP" in result.output


def test_lqr_on_meanfield_is_a_user_error():
    result = CliRunner().invoke(app, ["control", "meanfield", "--algo", "lqr"])
    assert result.exit_code == 2
    assert "not stabilisable" in result.output
