"""``resonance classic``: the grid world and the reproductions from the command line."""

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["classic", *args])


def test_gridworld_value_iteration_prints_values_and_arrows():
    result = invoke("gridworld")
    assert result.exit_code == 0, result.output
    assert "0.531↓" in result.stdout and "0.9↑" in result.stdout
    assert "7 steps, reaches the award" in result.stdout


def test_gridworld_q_learning_and_sarsa():
    q = invoke("gridworld", "--algo", "q-learning", "--steps", "1000")
    assert q.exit_code == 0, q.output and "7 steps, reaches the award" in q.stdout
    s = invoke("gridworld", "--algo", "sarsa", "--steps", "5000")
    assert s.exit_code == 0, s.output
    assert "sarsa, 5000 steps" in s.stdout and "7 steps, reaches the award" in s.stdout


def test_gridworld_custom_map_and_bad_map(tmp_path):
    good = tmp_path / "corridor.txt"
    good.write_text("0 0 0 1\n")
    result = invoke("gridworld", "--map", str(good))
    assert result.exit_code == 0, result.output  # (2, 2) is off this map: starts on the first grass tile
    assert "3 steps, reaches the award" in result.stdout
    result = invoke("gridworld", "--map", str(good), "--start", "1,0")
    assert "2 steps, reaches the award" in result.stdout
    assert invoke("gridworld", "--start", "two").exit_code == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("0 7\n")
    result = invoke("gridworld", "--map", str(bad))
    assert result.exit_code == 2 and "[7]" in result.output


def test_reproduce_quick_writes_png_and_table(tmp_path):
    result = invoke("reproduce", "--figure", "9.1", "--out", str(tmp_path), "--quick")
    assert result.exit_code == 0, result.output
    assert "Fig 9.1" in result.stdout and "ratio" in result.stdout
    assert (tmp_path / "fig_9_1.png").exists()


def test_reproduce_unknown_figure_exits_2():
    result = invoke("reproduce", "--figure", "9.3")
    assert result.exit_code == 2 and "unknown figure" in result.output
