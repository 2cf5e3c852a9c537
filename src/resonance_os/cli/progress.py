"""Progress of a long command on standard error: a live status line on a terminal, else one plain line
per step (so logs and pipes see it too); standard output keeps only the result."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from resonance_os.cli.errors import error_console


class Progress:
    """Report steps with :meth:`step`; each shows the time since the command began."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._status = None

    def step(self, message: str) -> None:
        line = f"{message} ({time.monotonic() - self._start:.0f} s)"
        if self._status is not None:
            self._status.update(line)
        else:
            error_console.print(line, markup=False, highlight=False)

    def note(self, message: str) -> None:
        """A line that stays (above the live status line on a terminal)."""
        error_console.print(message, markup=False, highlight=False)


@contextmanager
def progress(first: str) -> Iterator[Progress]:
    """A :class:`Progress` showing ``first``; the live line is cleared when the block ends."""
    report = Progress()
    if error_console.is_terminal:
        with error_console.status(first) as status:
            report._status = status
            report.step(first)
            yield report
    else:
        report.step(first)
        yield report
