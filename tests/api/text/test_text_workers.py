"""Text workers: the service's writing, scoring and measuring run in real worker processes, give what
the same calls give in the server process, and one tenant holding a worker does not hold up another.

One ``TextWorkers(2)`` (two real processes, each building its own extractor and writer) serves the
module; the service's in-process engine computes the expected values."""

from __future__ import annotations

import os
import threading

import pytest
from service_helpers import unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import TenantContext, authenticate, create_tenant
from resonance_os.api.service import ResonanceService
from resonance_os.api.text.workers import TextWorkers
from resonance_os.core.errors import BusyError, ValidationError

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
TEXT = (
    "The harbour was quiet at dawn. Boats rocked gently on the grey water while gulls argued over "
    "the scraps of last night's catch. An old fisherman mended his nets by the sea wall."
)


@pytest.fixture(scope="module")
def workers():
    workers = TextWorkers(processes=2)
    yield workers
    workers.close()


@pytest.fixture(scope="module")
def svc(workers, tmp_path_factory):
    url = os.environ.get("RESONANCE_TEST_DB_URL") or f"sqlite:///{tmp_path_factory.mktemp('db') / 'w.db'}"
    db = Database(url)
    db.migrate()
    yield ResonanceService(db, workers)
    db.dispose()


def _tenant(svc: ResonanceService) -> TenantContext:
    return authenticate(svc.db, create_tenant(svc.db, unique("worker")))


def test_worker_processes_write_score_and_measure_as_the_server_process_does(svc):
    ctx = _tenant(svc)
    article = svc.generate(ctx, "harbour mornings", target_hrv=HRV, paragraphs=2, seed=7)
    here = svc.engine.write("harbour mornings", HRV, 2, 7)
    assert article["article"] == here.text
    assert article["reward"] == here.score.to_dict()

    scored = svc.score(ctx, TEXT, None, HRV, "the harbour")
    expected = svc.engine.score(TEXT, HRV, "the harbour")
    assert scored["reward"] == expected.reward and scored["hrv"] == expected.to_dict()["hrv"]

    long_text = " ".join([TEXT] * 40)
    assert svc.analyze(long_text, ctx=ctx) == svc.engine.analyze(long_text)
    item = svc.measure_submitted(ctx, TEXT, HRV)
    assert (item.hrv, item.resonance) == svc.engine.measure(TEXT, HRV)

    refined = svc.refine(ctx, TEXT + "\n\n" + TEXT, target_hrv=HRV, seed=3)
    assert refined["text"] == svc.engine.refine(TEXT + "\n\n" + TEXT, HRV, 3).text


def test_a_tenants_error_in_a_worker_reaches_the_caller_with_its_type(svc):
    ctx = _tenant(svc)
    with pytest.raises(ValidationError, match="no words"):
        svc.measure_submitted(ctx, "\u202e" * 10, None)
    with pytest.raises(BusyError, match="time budget"):  # a deadline already past stops the writing
        svc.workers.run(ctx.tenant_id, "write", "harbour", HRV, 3, 0, deadline=0.0)
    assert svc.generate(ctx, "harbour", target_hrv=HRV, paragraphs=1, seed=1)["article"]


def test_a_tenant_holding_a_worker_does_not_hold_up_another_tenant(workers):
    """Tenant 1 stops between its paragraphs while holding its worker's turn (a single writer would
    make every other tenant wait); tenant 2's call runs on the other worker and finishes meanwhile."""
    holding, second_done, results = threading.Event(), threading.Event(), {}

    def hold() -> None:
        holding.set()
        assert second_done.wait(timeout=300), "tenant 2 never finished while tenant 1 held its turn"

    def first() -> None:
        results[1] = workers.run(1, "write", "harbour", HRV, 2, 0, on_paragraph=hold)

    thread = threading.Thread(target=first)
    thread.start()
    assert holding.wait(timeout=300)
    results[2] = workers.run(2, "write", "gulls", HRV, 1, 0)
    second_done.set()
    thread.join()
    assert len(results[1].paragraphs) == 2 and len(results[2].paragraphs) == 1


def test_the_served_default_is_two_text_worker_processes_started_on_first_use(db_url, monkeypatch):
    monkeypatch.delenv("RESONANCE_TEXT_WORKERS")
    workers = create_app(db_url).state.service.workers
    assert workers.processes == 2 and workers.pids() == []
    monkeypatch.setenv("RESONANCE_TEXT_WORKERS", "-1")
    with pytest.raises(ValidationError, match="RESONANCE_TEXT_WORKERS"):
        create_app(db_url)
