"""Process lifetimes on this host: whether a process still runs (job workers, a serving gate's owning
server), and worker processes that die with the server that started them.

A worker (a text worker, a job worker, a ``--workers N`` server process) calls :func:`die_with_parent`
with its parent's pid as soon as it starts. Two mechanisms, because each alone can miss:

- ``prctl(PR_SET_PDEATHSIG)``: the kernel signals the worker (:data:`DEATH_SIGNAL`) the moment its
  parent dies, even by ``kill -9``. It is tied to the parent *thread* that forked the worker, so it
  also fires when that thread ends while the process lives on (a thread-pool thread that started a
  text worker): the handler therefore acts only if the parent pid has really changed;
- a watchdog thread that compares ``os.getppid()`` with the parent's pid every :data:`WATCH_S`
  seconds, for where the signal is not available (not Linux) or is lost (the parent died between the
  worker's start and its ``prctl`` call, which is checked once at once too).

Either way the worker's ``on_parent_death`` runs once, in the watchdog thread (never inside the signal
handler, which may interrupt a database transaction of the main thread).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = signal.SIGUSR2
"""The signal the kernel sends a worker when its parent dies (handled, so it never kills by itself)."""
WATCH_S = 1.0
"""How often the watchdog compares the parent pid (the longest a worker outlives its parent if the
signal was lost)."""
PARENT_PID_ENV = "RESONANCE_PARENT_PID"
"""Environment variable naming the pid a worker started by ``subprocess`` must outlive no longer."""


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs on this host; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def _exit_now() -> None:
    os._exit(1)


def _set_parent_death_signal(signum: int) -> bool:
    """Ask the kernel for ``signum`` when the parent dies; False where ``prctl`` is unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int, on_parent_death: Callable[[], None] = _exit_now) -> None:
    """Run ``on_parent_death`` (default: exit at once) when ``parent_pid`` is no longer this process's
    parent: at once if it already is not, else within :data:`WATCH_S` of its death (see the module
    docstring). ``on_parent_death`` should end the process; it is called at most once."""
    parent_gone = threading.Event()

    def watch() -> None:
        while not parent_gone.wait(WATCH_S):
            if os.getppid() != parent_pid:
                break
        on_parent_death()

    if threading.current_thread() is threading.main_thread():

        def on_signal(_signum: int, _frame: object) -> None:
            if os.getppid() != parent_pid:  # else only the thread that forked us ended
                parent_gone.set()

        signal.signal(DEATH_SIGNAL, on_signal)
        _set_parent_death_signal(DEATH_SIGNAL)
    if os.getppid() != parent_pid:
        parent_gone.set()
    threading.Thread(target=watch, name="resonance-parent-watch", daemon=True).start()


def parent_pid_from_env() -> int | None:
    """The pid in ``$RESONANCE_PARENT_PID`` (set by the process that launched this one), if any."""
    value = os.environ.get(PARENT_PID_ENV, "")
    return int(value) if value.isdigit() else None
