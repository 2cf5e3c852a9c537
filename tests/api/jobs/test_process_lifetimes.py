"""Worker processes die with the process that started them (``processes.die_with_parent``), however it
dies: the kernel's parent-death signal, checked against the real parent (it also fires when merely the
thread that forked the worker ends), and a watchdog for where that signal is missing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from resonance_os.api.jobs.processes import WATCH_S, pid_alive

PARENT = textwrap.dedent(
    """
    import subprocess, sys, threading, time
    CHILD = '''
    import sys, threading, time
    from resonance_os.api.jobs.processes import die_with_parent
    parent = int(sys.argv[1])
    if sys.argv[2] == "watchdog-only":  # off the main thread: no signal handler, no prctl
        threading.Thread(target=die_with_parent, args=(parent,)).start()
    else:
        die_with_parent(parent)
    print("armed", flush=True)
    time.sleep(600)
    '''
    started = []

    def fork():  # a short-lived thread starts the child, then ends
        started.append(subprocess.Popen(
            [sys.executable, "-c", CHILD, str(__import__("os").getpid()), sys.argv[1]],
            stdout=subprocess.PIPE, text=True,
        ))

    thread = threading.Thread(target=fork)
    thread.start()
    thread.join()
    assert started[0].stdout.readline().strip() == "armed"
    print(started[0].pid, flush=True)
    time.sleep(600)
    """
)


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("mode", ["signal-and-watchdog", "watchdog-only"])
def test_a_worker_outlives_the_thread_that_forked_it_but_not_its_parent_process(mode):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        child = int(parent.stdout.readline())
        time.sleep(2 * WATCH_S)  # the forking thread has ended: the parent-death signal fired, wrongly
        assert pid_alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait_gone(child, 5 * WATCH_S)
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
