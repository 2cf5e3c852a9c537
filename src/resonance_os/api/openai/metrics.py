"""Prometheus series of the OpenAI routes on ``GET /metrics`` (nothing per tenant).

Counted as requests end: ``resonance_llm_prompt_tokens_total``, ``resonance_llm_completion_tokens_total``,
``resonance_llm_time_to_first_token_seconds`` (histogram). Read from the engine at scrape time:
``resonance_llm_queue_depth`` (requests waiting), ``resonance_llm_batch_size`` (sequences decoding),
``resonance_llm_tokens_per_second`` (generated, last 10 s), ``resonance_llm_prefix_cache_hit_rate``
(prompt tokens of admitted sequences not computed: shared by ``n`` siblings or found in the prefix
store), ``resonance_llm_prefill_tokens_total`` and ``resonance_llm_prefix_hit_tokens_total``. The
engine series come from the process answering the scrape (``resonance serve`` runs one by default).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:  # the engine (and torch) load with the first request, not with the app
    from resonance_os.llm.engine import GenerationEngine, RequestHandle


PROMPT_TOKENS = Counter("resonance_llm_prompt_tokens_total", "Prompt tokens of OpenAI-API requests")
COMPLETION_TOKENS = Counter(
    "resonance_llm_completion_tokens_total", "Tokens generated for OpenAI-API requests"
)
TIME_TO_FIRST_TOKEN = Histogram(
    "resonance_llm_time_to_first_token_seconds",
    "Seconds from a request's arrival at the engine to its first token",
    buckets=(0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)

_engines: weakref.WeakSet[GenerationEngine] = weakref.WeakSet()


def watch(engine: GenerationEngine) -> None:
    """Report ``engine``'s load and counters at scrape time (while it lives)."""
    _engines.add(engine)


def observe(handle: RequestHandle) -> None:
    """Count a finished request's tokens and its time to first token."""
    PROMPT_TOKENS.inc(len(handle.prompt_ids))
    COMPLETION_TOKENS.inc(sum(len(c.token_ids) for c in handle.choices))
    if handle.ttft_s is not None:
        TIME_TO_FIRST_TOKEN.observe(handle.ttft_s)


class EngineCollector:
    """Queue depth, batch size, tokens/s and prefix-cache figures of the engines in this process."""

    def collect(self):
        stats = [engine.stats() for engine in list(_engines)]
        gauges = {
            "resonance_llm_queue_depth": ("Requests waiting for room in the batch", sum(s.waiting for s in stats)),
            "resonance_llm_batch_size": ("Sequences in the running batch", sum(s.running for s in stats)),
            "resonance_llm_tokens_per_second": ("Tokens generated per second, last 10 s", sum(s.tokens_per_s for s in stats)),
        }  # fmt: skip
        for name, (doc, value) in gauges.items():
            yield GaugeMetricFamily(name, doc, value=value)
        prefill = sum(s.prefill_tokens for s in stats)
        hits = sum(s.prefix_hit_tokens for s in stats)
        yield GaugeMetricFamily(
            "resonance_llm_prefix_cache_hit_rate",
            "Share of admitted sequences' prompt tokens not computed (siblings or the prefix store)",
            value=hits / (hits + prefill) if hits + prefill else 0.0,
        )
        yield CounterMetricFamily("resonance_llm_prefill_tokens", "Prompt tokens computed", value=prefill)
        yield CounterMetricFamily(
            "resonance_llm_prefix_hit_tokens", "Prompt tokens reused, not computed", value=hits
        )


REGISTRY.register(EngineCollector())
