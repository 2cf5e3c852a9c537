"""The classified outcome of running untrusted code against one test, and how it is decided."""

from __future__ import annotations

import signal
from enum import Enum


class Outcome(str, Enum):
    """What happened to one program on one test (or, for a rollout, on its first failing test)."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"


MEMORY_EXIT_CODE = 86
"""Exit code the program's runner uses when the program dies of ``MemoryError``."""

FILE_LIMIT_EXIT_CODE = 85
"""Exit code the program's runner uses when a write fails with ``EFBIG`` (the file-size limit)."""

SETUP_FAILED_EXIT_CODE = 87
"""Exit code of the launcher's child when the program could not even be started."""


def classify_exit(exit_code: int | None, signal_number: int | None) -> Outcome | None:
    """Outcome implied by how the process ended; None for a clean exit (the answer decides)."""
    if signal_number is not None:
        if signal_number == signal.SIGXCPU:
            return Outcome.TIMEOUT
        if signal_number == signal.SIGXFSZ:
            return Outcome.OUTPUT_LIMIT
        return Outcome.RUNTIME_ERROR
    if exit_code == MEMORY_EXIT_CODE:
        return Outcome.MEMORY_LIMIT
    if exit_code == FILE_LIMIT_EXIT_CODE:
        return Outcome.OUTPUT_LIMIT
    if exit_code == SETUP_FAILED_EXIT_CODE:
        return Outcome.SANDBOX_ERROR
    if exit_code:
        return Outcome.RUNTIME_ERROR
    return None


def normalize_output(text: str) -> list[str]:
    """Lines with trailing whitespace removed, leading and trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def outputs_match(actual: str, expected: str) -> bool:
    """Judge's comparison: equal line by line up to trailing whitespace and surrounding blank lines."""
    return normalize_output(actual) == normalize_output(expected)
