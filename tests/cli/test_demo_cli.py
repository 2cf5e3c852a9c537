"""`resonance demo`, the `make run` job: its four sections run to the end and leave a run folder."""

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.rl.run import is_run

runner = CliRunner()


def test_demo_measures_drafts_trains_and_writes_with_the_policy(tmp_path):
    # the suite's default backend is the template composer (tests/conftest.py), so this needs no model
    out = tmp_path / "demo"
    result = runner.invoke(app, ["demo", "--timesteps", "64", "--out", str(out), "--seed", "0"])
    assert result.exit_code == 0, result.output
    sections = (
        "1. HRV of the sample article",
        "2. An article drafted by the default backend",
        "3. Training PPO in HRWritingEnv toward builtin/professional for 64 timesteps",
        "4. The same prompt drafted by",
    )
    positions = [result.stdout.find(title) for title in sections]
    assert -1 not in positions and positions == sorted(positions), result.stdout
    assert "evaluation, 20 seeded episodes" in result.stdout
    assert "success indicators" in result.stdout
    # the last section's article is revised by the trained policy and measured like the first
    assert "+policy" in result.stdout
    assert result.stdout.count("writing reward") >= 2
    assert is_run(out)
