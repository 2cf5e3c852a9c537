"""Turns at the writer: tenants take turns paragraph by paragraph, waiting past the deadline is a 503,
and a tenant cannot queue more than its share (real threads, no clocks)."""

from __future__ import annotations

import threading
import time

import pytest

from resonance_os.api.text.turns import TooManyRequestsError, WriterTurns
from resonance_os.core.errors import BusyError


def _wait_until(condition, what: str) -> None:
    for _ in range(10_000):
        if condition():
            return
        time.sleep(0.001)
    raise AssertionError(f"never happened: {what}")


def _article(turns: WriterTurns, tenant: int, name: str, paragraphs: int, log: list[str], started=None):
    with turns.turn(tenant) as pass_turn:
        for index in range(1, paragraphs + 1):
            if index > 1:
                pass_turn()
            log.append(f"{name}{index}")
            if started is not None and index == 1:
                started.set()


def test_a_short_request_waits_one_paragraph_of_a_long_one_not_the_whole_article():
    turns, log = WriterTurns(), []
    a_started, release_a = threading.Event(), threading.Event()

    def long_article():
        with turns.turn(1) as pass_turn:
            log.append("A1")
            a_started.set()
            release_a.wait()
            for index in range(2, 6):
                pass_turn()
                log.append(f"A{index}")

    a = threading.Thread(target=long_article)
    a.start()
    a_started.wait()
    b = threading.Thread(target=_article, args=(turns, 2, "B", 1, log))
    b.start()
    _wait_until(lambda: turns.waiting() == 1, "B waits")
    release_a.set()
    a.join(), b.join()
    assert log == ["A1", "B1", "A2", "A3", "A4", "A5"]


def test_waiting_tenants_are_served_round_robin():
    turns, log = WriterTurns(), []
    a_started, release_a = threading.Event(), threading.Event()

    def first():
        with turns.turn(1) as pass_turn:
            log.append("A1")
            a_started.set()
            release_a.wait()
            for index in range(2, 4):
                pass_turn()
                log.append(f"A{index}")

    threads = [threading.Thread(target=first)]
    threads[0].start()
    a_started.wait()
    for tenant, name, paragraphs in ((2, "B", 2), (3, "C", 1)):
        threads.append(threading.Thread(target=_article, args=(turns, tenant, name, paragraphs, log)))
        threads[-1].start()
        _wait_until(lambda n=len(threads) - 1: turns.waiting() == n, f"{name} waits")
    release_a.set()
    for thread in threads:
        thread.join()
    assert log == ["A1", "B1", "C1", "A2", "B2", "A3"]


def test_waiting_past_the_deadline_is_busy_and_leaves_the_queue():
    turns = WriterTurns()
    with turns.turn(1):
        with pytest.raises(BusyError, match="time budget") as caught:
            with turns.turn(2, deadline=time.monotonic()):
                pass
        assert caught.value.http_status == 503
        assert turns.waiting() == 0
    with turns.turn(2, deadline=time.monotonic()):  # a free writer is taken whatever the deadline
        pass


def test_an_article_over_its_budget_stops_between_paragraphs_and_frees_the_writer():
    turns = WriterTurns()
    with pytest.raises(BusyError, match="fewer paragraphs"):
        with turns.turn(1, deadline=time.monotonic()) as pass_turn:
            pass_turn()
    with turns.turn(2, deadline=time.monotonic()):  # would be busy if the writer were still held
        pass


def test_a_tenant_with_two_requests_does_not_go_twice_before_a_waiting_tenant():
    turns, log = WriterTurns(), []
    a_started, release_a = threading.Event(), threading.Event()

    def first():
        with turns.turn(1) as pass_turn:
            log.append("A1")
            a_started.set()
            release_a.wait()
            pass_turn()
            log.append("A2")

    threads = [threading.Thread(target=first)]
    threads[0].start()
    a_started.wait()
    for tenant, name in ((1, "a"), (2, "B")):  # tenant 1's second request queues before tenant 2's
        threads.append(threading.Thread(target=_article, args=(turns, tenant, name, 1, log)))
        threads[-1].start()
        _wait_until(lambda n=len(threads) - 1: turns.waiting() == n, f"{name} waits")
    release_a.set()
    for thread in threads:
        thread.join()
    assert log == ["A1", "B1", "a1", "A2"]


def test_a_tenant_over_its_share_gets_429_and_the_process_over_its_total_503():
    turns = WriterTurns(per_tenant=1, total=2)
    with turns.turn(1):
        with pytest.raises(TooManyRequestsError, match="1 generations in progress") as caught:
            with turns.turn(1):
                pass
        assert caught.value.http_status == 429
        holder = threading.Event()
        done = threading.Event()

        def second_tenant():
            with turns.turn(2, deadline=None):
                holder.set()
            done.set()

        waiter = threading.Thread(target=second_tenant)
        waiter.start()
        _wait_until(lambda: turns.waiting() == 1, "tenant 2 waits")
        with pytest.raises(BusyError, match="2 generations in progress or waiting"):
            with turns.turn(3):
                pass
    waiter.join()
    assert holder.is_set() and done.is_set()
