"""Keep a long-running process's loaded models out of the garbage collector's full passes.

A server process holds about 250,000 Python objects once its extractor is loaded, a text worker about
600,000 once its engine is warm (lexicons, language-model tables). Python's cyclic collector walks all
of them in every full collection: about 130 ms and 300 ms on this machine (``bench_gc_pause.py``),
during which the process answers nothing (``benchmarks/abuse.py`` saw another tenant's one-paragraph
``/v1/generate`` take 195-291 ms instead of 20 ms, with no attack running). :func:`settle_heap`, called
once the loading is done, moves the objects alive then into the collector's permanent generation
(``gc.freeze``): later collections walk only what was made after it.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect the garbage made while loading, then exempt every object alive now from later collections.

    Call it once, after a process has loaded what it keeps for its lifetime; objects frozen here are
    still freed by reference counting, but a reference cycle among them that is dropped later is never
    reclaimed, so do not call it where short-lived apps come and go (tests)."""
    gc.collect()
    gc.freeze()
