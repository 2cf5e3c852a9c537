"""``resonance ddpo train``: one line per epoch, a run folder ``resonance plot`` can draw, clear errors."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.diffusion.pretrain import load_pretrained
from resonance_os.rl.run import open_run

runner = CliRunner()


def test_pretrained_cache_is_read_back_without_retraining(tiny_cache) -> None:
    messages: list[str] = []
    models = load_pretrained(tiny_cache, on_progress=messages.append)
    assert messages == []  # nothing rebuilt
    assert models.unet.config.image_size == 8 and 0.0 <= models.classifier_accuracy <= 1.0


def test_train_prints_one_line_per_epoch_and_leaves_a_plottable_run(tiny_cache, tmp_path) -> None:
    out = tmp_path / "run"
    args = ["ddpo", "train", "--reward", "aesthetic", "--method", "is", "--epochs", "2", "--out", str(out)]
    args += ["--cache-dir", str(tiny_cache), "--samples-per-epoch", "8", "--grid-every", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    epoch_lines = [line for line in result.output.splitlines() if line.startswith("epoch ")]
    assert len(epoch_lines) == 2 and all("reward_mean" in line for line in epoch_lines)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["timesteps"] for r in rows] == [8, 16]
    assert (out / "samples" / "epoch_0002.png").is_file() and (out / "checkpoint" / "config.json").is_file()
    plotted = runner.invoke(app, ["plot", str(out)])
    assert plotted.exit_code == 0 and (out / "learning_curves.png").is_file()

    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "already holds a run" in again.output
    # --resume keeps the run's reward (aesthetic), whatever --reward says
    resume_args = ["ddpo", "train", "--epochs", "1", "--out", str(out), "--cache-dir", str(tiny_cache)]
    resumed = runner.invoke(app, [*resume_args, "--samples-per-epoch", "8", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "epoch 3 " in resumed.output
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    # classifier log-odds (about -2 on this barely trained model), not a JPEG size (below 1 kB)
    assert abs(last["episode_reward_mean"]) > 1.0
    run = open_run(out)
    assert (run.kind, run.layout, run.task["reward"], run.metrics()[-1]) == ("ddpo", "run", "aesthetic", last)

    # a run folder as an older build left it (checkpoint/ + metrics.jsonl) resumes as well
    old = tmp_path / "old"
    shutil.copytree(out / "checkpoint", old / "checkpoint")
    shutil.copy(out / "metrics.jsonl", old / "metrics.jsonl")
    resumed = runner.invoke(app, ["ddpo", "train", "--epochs", "1", "--out", str(old), "--cache-dir", str(tiny_cache), "--resume"])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert "epoch 4 " in resumed.output and open_run(old).metrics()[-1]["timesteps"] == 32
    nothing = runner.invoke(app, [*resume_args, "--resume", "--out", str(tmp_path / "empty")])
    assert nothing.exit_code == 2 and "no such folder" in nothing.output


def test_bad_method_is_one_line_error(tiny_cache, tmp_path) -> None:
    result = runner.invoke(
        app,
        ["ddpo", "train", "--method", "ppo", "--out", str(tmp_path / "r"), "--cache-dir", str(tiny_cache)],
    )
    assert result.exit_code == 2
    assert "unknown method 'ppo'" in result.output and "Traceback" not in result.output


def test_sf_with_several_inner_epochs_is_one_line_error(tiny_cache, tmp_path) -> None:
    args = ["ddpo", "train", "--method", "sf", "--inner-epochs", "2", "--out", str(tmp_path / "r")]
    result = runner.invoke(app, [*args, "--cache-dir", str(tiny_cache)])
    assert result.exit_code == 2
    assert "DDPO_SF trains on each batch once" in result.output and "Traceback" not in result.output
