"""Per-tenant limits of the OpenAI routes: sequences in flight, tokens per minute, context length.

A request reserves its sequences (``n`` per prompt) and its worst-case tokens (prompt + ``n`` x
``max_tokens``) when it is admitted and gives back what it did not use when it ends; over a limit it
is refused at once (429 naming the limit and the wait, or 400 when it could never fit), so one
tenant's flood never queues in front of another tenant's requests.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

from resonance_os.api.openai.errors import OpenAIError

WINDOW_S = 60.0


@dataclass(frozen=True)
class TenantLimits:
    """sequences: sequences one tenant may have generating at once; tokens_per_minute: prompt +
    completion tokens per tenant per rolling minute; context: longest prompt + max_tokens;
    max_n: most choices one request may ask for; adapters: adapters one tenant may register."""

    sequences: int = 16
    tokens_per_minute: int = 200_000
    context: int = 8192
    max_n: int = 16
    adapters: int = 8


@dataclass
class Reservation:
    tenant: int
    sequences: int
    tokens: int
    stamp: float


class TenantLedger:
    """What each tenant has in flight and has used in the last minute (thread-safe)."""

    def __init__(self, limits: TenantLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._sequences: dict[int, int] = {}
        self._used: dict[int, deque[tuple[float, int]]] = {}

    def _recent(self, tenant: int, now: float) -> deque[tuple[float, int]]:
        used = self._used.setdefault(tenant, deque())
        while used and used[0][0] <= now - WINDOW_S:
            used.popleft()
        return used

    def reserve(self, tenant: int, sequences: int, tokens: int) -> Reservation:
        """Take ``sequences`` and ``tokens`` for ``tenant``, or raise the 400/429 naming the limit."""
        limits = self.limits
        if sequences > limits.sequences:
            raise OpenAIError(
                400, f"this request asks for {sequences} sequences; the limit is {limits.sequences} sequences "
                "in flight per tenant; lower n or send fewer prompts", param="n",
            )  # fmt: skip
        if tokens > limits.tokens_per_minute:
            raise OpenAIError(
                400, f"this request may use {tokens} tokens (prompt + n x max_tokens); the limit is "
                f"{limits.tokens_per_minute} tokens per minute per tenant; lower max_tokens or n",
                param="max_tokens",
            )  # fmt: skip
        now = time.monotonic()
        with self._lock:
            running = self._sequences.get(tenant, 0)
            if running + sequences > limits.sequences:
                raise OpenAIError(
                    429, f"concurrent sequences limit reached: {running} of {limits.sequences} sequences per "
                    f"tenant are generating and this request needs {sequences}; retry when one finishes",
                    type_="requests", code="rate_limit_exceeded", headers={"Retry-After": "1"},
                )  # fmt: skip
            used = self._recent(tenant, now)
            spent = sum(n for _, n in used)
            if spent + tokens > limits.tokens_per_minute:
                wait = WINDOW_S
                left = spent
                for stamp, n in used:  # the wait until enough of the minute's tokens have aged out
                    left -= n
                    if left + tokens <= limits.tokens_per_minute:
                        wait = stamp + WINDOW_S - now
                        break
                raise OpenAIError(
                    429, f"tokens per minute limit reached: {spent} of {limits.tokens_per_minute} used in the "
                    f"last minute and this request may use {tokens}; retry after {wait:.1f} s or lower max_tokens",
                    type_="tokens", code="rate_limit_exceeded", headers={"Retry-After": str(max(1, math.ceil(wait)))},
                )  # fmt: skip
            self._sequences[tenant] = running + sequences
            used.append((now, tokens))
        return Reservation(tenant, sequences, tokens, now)

    def release(self, reservation: Reservation, tokens_used: int) -> None:
        """End a reservation: free its sequences and count ``tokens_used`` instead of the worst case."""
        with self._lock:
            self._sequences[reservation.tenant] -= reservation.sequences
            used = self._used.get(reservation.tenant, deque())
            for i, (stamp, n) in enumerate(used):
                if stamp == reservation.stamp and n == reservation.tokens:
                    used[i] = (stamp, min(n, tokens_used))
                    break
