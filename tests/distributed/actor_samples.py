"""Classes the actor tests start in other processes (importable there by module path)."""

from __future__ import annotations

import os
import threading

from resonance_os.core.errors import ValidationError


class Unpicklable(Exception):
    def __init__(self) -> None:
        super().__init__("holds a lock")
        self.lock = threading.Lock()


class Counter:
    """State that lives in the actor; ``meet`` returns only when ``parties`` calls are inside at once."""

    def __init__(self, start: int, parties: int = 1) -> None:
        self.value = start
        self.barrier = threading.Barrier(parties)
        self.closed_file: str | None = None

    def add(self, amount: int) -> int:
        self.value += amount
        return self.value

    def pid(self) -> int:
        return os.getpid()

    def meet(self) -> bool:
        self.barrier.wait(timeout=20)
        return True

    def reject(self) -> None:
        raise ValidationError("amount=-1 must be >= 0; pass a count")

    def raise_unpicklable(self) -> None:
        raise Unpicklable()

    def exit_now(self, code: int) -> None:
        os._exit(code)

    def mark_closed_in(self, path: str) -> None:
        self.closed_file = path

    def close(self) -> None:
        if self.closed_file:
            with open(self.closed_file, "w") as marker:
                marker.write("closed")


class BrokenStart:
    def __init__(self) -> None:
        raise ValidationError("BrokenStart needs a config; pass one")
