"""Per-tenant limits of the OpenAI routes (api.openai.limits): sequences in flight, tokens per minute."""

from __future__ import annotations

import pytest

from resonance_os.api.openai.errors import OpenAIError
from resonance_os.api.openai.limits import TenantLedger, TenantLimits


def test_sequences_in_flight_are_limited_per_tenant_and_given_back():
    ledger = TenantLedger(TenantLimits(sequences=4, tokens_per_minute=10_000))
    held = ledger.reserve(1, 3, 100)
    with pytest.raises(OpenAIError, match="concurrent sequences limit reached: 3 of 4") as caught:
        ledger.reserve(1, 2, 100)
    assert caught.value.status == 429 and caught.value.code == "rate_limit_exceeded"
    ledger.reserve(2, 4, 100)  # another tenant has its own allowance
    ledger.release(held, 50)
    ledger.reserve(1, 4, 100)


def test_tokens_per_minute_count_what_was_used_and_name_the_wait():
    ledger = TenantLedger(TenantLimits(sequences=16, tokens_per_minute=1_000))
    first = ledger.reserve(1, 1, 900)  # worst case: prompt + max_tokens
    with pytest.raises(OpenAIError, match="tokens per minute limit reached: 900 of 1000") as caught:
        ledger.reserve(1, 1, 200)
    assert caught.value.status == 429 and int(caught.value.headers["Retry-After"]) >= 59
    ledger.release(first, 300)  # it ended early: only what it used counts
    ledger.reserve(1, 1, 600)


def test_a_request_that_can_never_fit_is_a_400():
    ledger = TenantLedger(TenantLimits(sequences=4, tokens_per_minute=1_000))
    for sequences, tokens, field in ((5, 10, "n"), (1, 5_000, "max_tokens")):
        with pytest.raises(OpenAIError) as caught:
            ledger.reserve(1, sequences, tokens)
        assert caught.value.status == 400 and caught.value.param == field
