"""Training yields to requests: the server's count of requests in flight, and the wait a job makes on it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import gymnasium as gym
import pytest
from fastapi.testclient import TestClient

from resonance_os.api.hr_server import create_app
from resonance_os.api.jobs import queue, serving_gate
from resonance_os.api.jobs.hr_ppo import learn_resumable
from resonance_os.api.jobs.report import JobReport
from resonance_os.api.jobs.serving_gate import GATE_ENV, RequestYield, ServingGate
from resonance_os.api.settings import Settings
from resonance_os.core.errors import ValidationError


def test_a_worker_sees_the_servers_requests_in_flight_and_its_share(tmp_path):
    gate = ServingGate.create(tmp_path, max_share=0.5)
    seen = ServingGate.open(gate.path)
    assert seen is not None and seen.in_flight == 0 and seen.owner_alive()
    assert seen.max_share == 0.5 and RequestYield(seen).max_share == 0.5
    gate.enter()
    gate.enter()
    assert seen.in_flight == 2
    gate.leave()
    gate.leave()
    gate.leave()  # never below zero
    assert seen.in_flight == 0
    gate.close()
    assert not gate.path.exists()
    assert ServingGate.open(tmp_path / "missing") is None


def test_a_new_gate_removes_the_files_of_dead_servers(tmp_path):
    code = (
        "import pathlib, sys; from resonance_os.api.jobs.serving_gate import ServingGate; "
        "ServingGate.create(pathlib.Path(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)  # exits without closing
    assert len(list(tmp_path.glob("gate-*"))) == 1
    gate = ServingGate.create(tmp_path)
    assert list(tmp_path.glob("gate-*")) == [gate.path]
    gate.close()


def test_training_waits_until_the_requests_in_flight_end(tmp_path):
    gate = ServingGate.create(tmp_path)
    pause = RequestYield(ServingGate.open(gate.path), max_wait_s=30.0, max_share=1.0)
    time.sleep(0.2)  # some wall time, so the share allows a wait
    gate.enter()
    threading.Timer(0.05, gate.leave).start()
    pause()
    assert gate.in_flight == 0 and pause.waited_s > 0
    gate.close()


def test_requests_cannot_stall_training(tmp_path):
    gate = ServingGate.create(tmp_path)
    gate.enter()  # a request that never ends
    started = time.monotonic()
    pause = RequestYield(ServingGate.open(gate.path), max_wait_s=0.02, max_share=0.5)
    for _ in range(20):
        pause()
    elapsed = time.monotonic() - started
    assert pause.waited_s <= 0.5 * elapsed + 0.005
    gate.close()


def test_a_job_that_trained_undisturbed_has_not_saved_up_waiting(tmp_path):
    gate = ServingGate.create(tmp_path)
    pause = RequestYield(ServingGate.open(gate.path), max_wait_s=1.0, max_share=0.5, window_s=0.1)
    time.sleep(0.6)  # training with no requests: at most 0.5 x 0.1 s of waiting banks up
    gate.enter()  # then a flood that never ends
    started = time.monotonic()
    for _ in range(10):
        pause()
    elapsed = time.monotonic() - started
    assert pause.waited_s <= 0.5 * (elapsed + 0.1) + 0.005
    assert elapsed < 0.3  # without the window it would have waited 0.3 s in its first call alone
    gate.close()


def test_no_wait_once_the_server_that_owns_the_gate_is_gone(tmp_path, monkeypatch):
    code = (
        "import pathlib, sys; from resonance_os.api.jobs.serving_gate import ServingGate; "
        "ServingGate.create(pathlib.Path(sys.argv[1])).enter()"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)  # dies with a request open
    orphan = ServingGate.open(next(tmp_path.glob("gate-*")))
    assert orphan.in_flight == 1 and not orphan.owner_alive()
    monkeypatch.setattr(serving_gate, "OWNER_CHECK_S", 0.0)
    pause = RequestYield(orphan, max_wait_s=30.0, max_share=1.0)
    time.sleep(0.01)
    pause()
    assert pause.waited_s == 0.0


def test_the_server_counts_a_request_while_it_runs_and_names_its_gate_to_workers(db_url, monkeypatch):
    app = create_app(db_url, rate_limit_per_s=1000.0, rate_limit_burst=1000.0)
    app.add_api_route("/probe", lambda: {"in_flight": app.state.serving_gate.in_flight})
    with TestClient(app) as client:
        gate = app.state.serving_gate
        assert client.get("/probe").json() == {"in_flight": 1}
        assert gate.in_flight == 0
        assert app.state.job_runner.serving_gate == gate.path
        assert queue.worker_environment(db_url, serving_gate=gate.path)[GATE_ENV] == str(gate.path)
        monkeypatch.setenv(GATE_ENV, "/stale/gate")
        assert GATE_ENV not in queue.worker_environment(db_url)
    assert app.state.serving_gate is None and not gate.path.exists()


def test_an_operator_can_let_training_never_wait(db_url):
    app = create_app(db_url, training_yield_share=0.0)
    with TestClient(app) as client:
        assert client.get("/health").status_code == 200
        assert app.state.serving_gate is None and app.state.job_runner.serving_gate is None


@pytest.mark.parametrize("share", [-0.1, 0.96, 1.0])
def test_a_share_that_could_stop_training_is_refused_with_the_setting_named(share, monkeypatch):
    with pytest.raises(ValidationError, match="RESONANCE_TRAINING_YIELD_SHARE"):
        Settings(training_yield_share=share)
    monkeypatch.setenv("RESONANCE_TRAINING_YIELD_SHARE", str(share))
    with pytest.raises(ValidationError, match="RESONANCE_TRAINING_YIELD_SHARE"):
        Settings.from_env()


def test_learn_resumable_yields_before_every_env_step_and_optimiser_step(db_url, tmp_path):
    from resonance_os.api.persistence.db import Database

    calls = []
    db = Database(db_url)
    db.migrate()
    report = JobReport(db, "no-such-job", 1, work_dir=tmp_path / "work")
    config = {"n_steps": 64, "batch_size": 32, "n_epochs": 2, "seed": 0}
    model = learn_resumable(gym.make("CartPole-v1"), config, 128, report, pause=lambda *a: calls.append(a))
    db.dispose()
    env_steps = sum(1 for c in calls if not c)
    optimiser_steps = sum(1 for c in calls if c)
    assert env_steps == model.num_timesteps == 128
    assert optimiser_steps == 2 * (64 // 32) * 2  # 2 updates x 2 minibatches x 2 epochs
