"""A real sandbox with short limits, shared by the module's tests."""

from __future__ import annotations

import os

import pytest
from sandbox_checks import FIRST_UID, SHORT, UID_COUNT, assert_clean

from resonance_os.verify.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox():
    if os.geteuid() != 0:
        pytest.skip("the sandbox starts as root (it drops each run to its own uid)")
    with Sandbox(SHORT, max_concurrency=8, first_uid=FIRST_UID, uid_count=UID_COUNT) as box:
        yield box
        assert_clean(box)


@pytest.fixture(scope="module")
def namespaces(sandbox):
    """Skip unless this kernel gave the sandbox its namespaces (otherwise it refuses sockets only)."""
    if sandbox.run("pass").network != "namespace":
        pytest.skip("the kernel refused namespaces here; the sandbox falls back to socket refusal")
