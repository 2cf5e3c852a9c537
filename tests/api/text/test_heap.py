"""settle_heap: loaded objects leave the collector's full passes, garbage made while loading does not stay."""

from __future__ import annotations

import gc
import weakref

from resonance_os.api.text.heap import settle_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_settle_heap_freezes_what_is_alive_and_collects_the_garbage_first():
    kept = [_Node() for _ in range(100)]
    dropped = _Node()
    dropped_ref = weakref.ref(dropped)
    del dropped
    try:
        settle_heap()
        assert dropped_ref() is None, "garbage from loading was frozen instead of collected"
        assert gc.get_freeze_count() >= len(kept)
        tracked_after = len(gc.get_objects())
        assert tracked_after < gc.get_freeze_count(), "a full collection still walks the loaded objects"
    finally:
        gc.unfreeze()
