import math

import pytest

from resonance_os.rl.errors import LogDirError
from resonance_os.rl.logger import MetricsLogger, read_metrics


def test_rows_are_written_as_json_lines_and_read_back(tmp_path):
    with MetricsLogger(tmp_path / "run") as logger:
        logger.record({"episode_reward_mean": 0.5, "loss": 0.2}, timesteps=64)
        logger.record({"episode_reward_mean": 0.75, "loss": math.nan}, timesteps=128)
    rows = read_metrics(tmp_path / "run")
    assert [r["timesteps"] for r in rows] == [64, 128]
    assert rows[1]["episode_reward_mean"] == 0.75
    assert rows[1]["loss"] is None
    assert rows == [{k: v for k, v in r.items()} for r in logger.history]


def test_in_memory_logger_keeps_history_without_files(tmp_path):
    logger = MetricsLogger(None, progress_bar=True, total_timesteps=10)
    logger.record({"fps": 100.0}, timesteps=10)
    logger.close()
    assert logger.history[0]["fps"] == 100.0


def test_unwritable_log_dir_and_missing_run_are_clear_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LogDirError, match="pass a writable log_dir"):
        MetricsLogger(blocker / "run")
    with pytest.raises(LogDirError, match="no metrics.jsonl"):
        read_metrics(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('{"timesteps": 1}\nnot json\n')
    with pytest.raises(LogDirError, match="line 2"):
        read_metrics(tmp_path)
