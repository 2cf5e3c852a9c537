"""Two processes write into one SQLite store at the same time; no write and no version is lost."""

import subprocess
import sys
import time

from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

WRITES = 40

WORKER = """
import sys, time
from pathlib import Path
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

store, worker, writes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
go = Path(store).parent / "go"
while not go.exists():  # start together, so both open the fresh store and write at once
    time.sleep(0.005)
manager = HRVProfileManager(store)
for i in range(writes):
    value = (worker * writes + i) / (2 * writes)
    manager.save_profile("acme", f"w{worker}-{i}", [value] * 8)
    manager.save_profile("acme", "shared", [value] * 8, description=f"w{worker}-{i}")
manager.close()
"""


def test_two_processes_lose_no_updates(tmp_path):
    store = tmp_path / "store"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(store), str(w), str(WRITES)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in (0, 1)
    ]
    time.sleep(0.2)
    (tmp_path / "go").touch()
    for proc in workers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err

    with HRVProfileManager(store) as manager:
        names = set(manager.list_profiles("acme"))
        assert names == {f"w{w}-{i}" for w in (0, 1) for i in range(WRITES)} | {"shared"}
        for w in (0, 1):
            for i in range(WRITES):
                value = (w * WRITES + i) / (2 * WRITES)
                assert manager.load_profile("acme", f"w{w}-{i}") == [value] * 8

        history = manager.profile_history("acme", "shared")
        assert [h.version for h in history] == list(range(1, 2 * WRITES + 1))
        assert manager.get_profile("acme", "shared").version == 2 * WRITES
        descriptions = [h.description for h in history]
        assert sorted(descriptions) == sorted(f"w{w}-{i}" for w in (0, 1) for i in range(WRITES))
        for w in (0, 1):  # each writer's own updates appear in the order it made them
            own = [d for d in descriptions if d.startswith(f"w{w}-")]
            assert own == [f"w{w}-{i}" for i in range(WRITES)]
