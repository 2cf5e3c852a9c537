"""Local-process actors: calls, state, concurrency, errors, a dying worker and a clean stop."""

from __future__ import annotations

import os

import pytest
from actor_samples import BrokenStart, Counter

from resonance_os.core.errors import ValidationError
from resonance_os.distributed import ActorError, LocalProcesses, RayUnavailableError, placement_for


@pytest.fixture
def placement():
    local = LocalProcesses()
    yield local
    local.close()


def test_calls_run_in_another_process_and_keep_its_state(placement):
    actor = placement.start(Counter, 10, name="counter")
    assert actor.call("pid").result() not in (os.getpid(), None)
    assert [actor.call("add", 1).result(), actor.call("add", amount=5).result()] == [11, 16]


def test_max_concurrency_calls_run_at_once(placement):
    actor = placement.start(Counter, 0, 3, name="meeting", max_concurrency=3)
    calls = [actor.call("meet") for _ in range(3)]  # each returns only when all three are inside
    assert [call.result(timeout=60) for call in calls] == [True, True, True]


def test_errors_come_back_as_themselves_or_as_actor_errors(placement):
    actor = placement.start(Counter, 0, name="errors")
    with pytest.raises(ValidationError, match="amount=-1 must be >= 0"):
        actor.call("reject").result()
    with pytest.raises(ActorError, match="Unpicklable in actor errors: holds a lock"):
        actor.call("raise_unpicklable").result()
    assert actor.call("add", 2).result() == 2  # the actor lives on
    with pytest.raises(ValidationError, match="BrokenStart needs a config"):
        placement.start(BrokenStart, name="broken")


def test_a_worker_that_dies_fails_its_calls_and_later_ones(placement):
    actor = placement.start(Counter, 0, name="mortal")
    with pytest.raises(ActorError, match=r"actor mortal ended \(exit code 3\) before answering"):
        actor.call("exit_now", 3).result(timeout=60)
    with pytest.raises(ActorError, match="actor mortal is stopped"):
        actor.call("add", 1)


def test_stop_closes_the_instance_and_ends_the_process(tmp_path):
    placement = LocalProcesses()
    actor = placement.start(Counter, 0, name="closing")
    pid = actor.call("pid").result()
    actor.call("mark_closed_in", str(tmp_path / "closed")).result()
    placement.close()
    assert (tmp_path / "closed").read_text() == "closed"
    assert not os.path.exists(f"/proc/{pid}")


def test_no_address_is_local_processes_and_ray_missing_says_how_to_install(monkeypatch):
    assert isinstance(placement_for(None), LocalProcesses)
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(RayUnavailableError, match=r"pip install 'resonance-os\[ray\]'"):
        placement_for("auto")


def test_importing_distributed_loads_only_core_no_torch_no_ray():
    import subprocess
    import sys

    code = (
        "import sys, resonance_os.distributed\n"
        "ours = sorted({m.split('.')[1] for m in sys.modules if m.startswith('resonance_os.')})\n"
        "print(ours, 'torch' in sys.modules, 'ray' in sys.modules)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "['core', 'distributed'] False False"
