"""Short sandbox limits for the tests, and a check that a run left the machine clean."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from resonance_os.verify.outcomes import Outcome
from resonance_os.verify.sandbox import Sandbox, SandboxLimits, processes_of

FIRST_UID = 62_000
UID_COUNT = 64
SHORT = SandboxLimits(wall_seconds=10.0, cpu_seconds=5, memory_bytes=512 * 1024**2, output_bytes=1024**2)
"""Limits of most tests: small memory and output caps, a wall limit no loaded machine reaches."""
QUICK_TIMEOUT = SandboxLimits(
    wall_seconds=1.5, cpu_seconds=1, memory_bytes=512 * 1024**2, output_bytes=1024**2
)
"""Limits of the tests whose programs must time out."""


def listeners_of(uids: range) -> list[str]:
    """Listening TCP sockets (host namespace) owned by any of ``uids``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == "0A" and int(fields[7]) in uids:
                    found.append(line.strip())
    return found


def assert_clean(sandbox: Sandbox) -> None:
    """No process, listener or work folder is left by any run of ``sandbox`` (programs or harnesses)."""
    uids = range(FIRST_UID, FIRST_UID + UID_COUNT)
    assert processes_of(uids) == []
    assert listeners_of(uids) == []
    assert os.listdir(sandbox.work_root) == []


def sandbox_without_namespaces() -> Sandbox:
    """A ``Sandbox(use_namespaces=False)`` whose interpreter an unprivileged uid can read (the base
    interpreter may live where only root may go, /root/.pyenv); skips the test when there is none."""
    if os.geteuid() != 0:
        pytest.skip("the sandbox starts as root (it drops each run to its own uid)")
    candidates = [python for python in (None, "/usr/bin/python3") if python is None or os.path.exists(python)]
    for python in candidates:
        plain = Sandbox(SHORT, first_uid=FIRST_UID, uid_count=UID_COUNT, use_namespaces=False, python=python)
        probe = plain.run("pass")
        if probe.outcome is None:
            return plain
        assert probe.outcome is Outcome.SANDBOX_ERROR and "cannot enter" in probe.detail
        plain.close()
    pytest.skip("no interpreter here that an unprivileged uid can read without a mount namespace")


@contextmanager
def accepting(listener: socket.socket) -> Iterator[list]:
    """Accept one connection on ``listener`` (with its timeout) in a thread while the block runs; yields
    the list the connection lands in (empty when nothing reached the listener). Closes the listener."""
    accepted: list = []

    def accept() -> None:
        try:
            accepted.append(listener.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        yield accepted
    finally:
        thread.join()
        listener.close()
