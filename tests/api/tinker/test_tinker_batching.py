"""Concurrent training clients share the worker's forward/backward passes: four SDK clients stepping at
once through one server are computed in one pass per step (read from the server's Prometheus histogram
of runs per pass), and clients taking turns still each get their own pass without waiting."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import numpy as np
import pytest
import tinker
from prometheus_client.parser import text_string_to_metric_families
from tinker import types
from tinker_server import BASE, TinkerServer

from resonance_os.api.tinker.config import TinkerConfig
from resonance_os.api.tinker.worker import Loaded, TinkerWorker

SENTENCES = [
    "the cat sat on the mat .",
    "a dog ran under the tree .",
    "the bird flew over the roof .",
    "one two three four five six",
]
PASS_RUNS = "resonance_tinker_forward_backward_pass_runs"


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_model_folder) -> Iterator[TinkerServer]:
    """A server whose batch window is wide enough for a loaded test machine (the default is 250 ms)."""
    server = TinkerServer(
        tmp_path_factory.mktemp("tinker-batching"),
        tiny_model_folder,
        {"RESONANCE_TINKER_BATCH_WINDOW_MS": "5000"},
    ).start()
    yield server
    server.stop()


def histogram(server: TinkerServer, name: str) -> tuple[float, float]:
    """(observations, their sum) so far of the server's Prometheus histogram ``name`` (``GET /metrics``)."""
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == name:
            values = {sample.name: sample.value for sample in family.samples}
            return values[f"{name}_count"], values[f"{name}_sum"]
    return 0.0, 0.0


@contextlib.contextmanager
def paused(server: TinkerServer, seconds: float = 1.0) -> Iterator[None]:
    """The server process stopped (SIGSTOP) while the block sends requests and ``seconds`` after, then
    resumed: the requests are pending together when it reads them, however the clients' threads were
    scheduled (on a loaded machine they may send one by one, each answered before the next)."""
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
        time.sleep(seconds)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


def sft_step(run, text: str, losses: list[float]) -> None:
    tokenizer = run.get_tokenizer()
    ids = tokenizer.encode(text)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(ids[:-1]),
        loss_fn_inputs={"target_tokens": ids[1:], "weights": [1.0] * (len(ids) - 1)},
    )
    fwdbwd = run.forward_backward([datum], "cross_entropy")
    optim = run.optim_step(types.AdamParams(learning_rate=1e-2))
    losses.append(fwdbwd.result().metrics["loss:sum"])
    optim.result()


def test_clients_training_at_once_share_one_pass_and_clients_taking_turns_do_not_wait(server):
    client = server.service_client()
    runs = [client.create_lora_training_client(base_model=BASE, rank=4, seed=i).result() for i in range(4)]
    losses: list[list[float]] = [[] for _ in runs]

    def all_at_once(meet: bool = False) -> None:
        threads = [
            threading.Thread(target=sft_step, args=(run, text, seen))
            for run, text, seen in zip(runs, SENTENCES, losses, strict=True)
        ]
        with paused(server) if meet else contextlib.nullcontext():
            for thread in threads:
                thread.start()
        for thread in threads:
            thread.join()

    for _ in range(2):  # the first steps: the runs' requests meet, so they become partners
        all_at_once(meet=True)
    before = histogram(server, PASS_RUNS)
    for _ in range(3):
        all_at_once()
    after = histogram(server, PASS_RUNS)
    assert (after[0] - before[0], after[1] - before[1]) == (3, 12)  # each step: one pass of all 4 runs
    assert all(len(seen) == 5 and seen[-1] < seen[0] for seen in losses), losses

    for run, text, seen in zip(runs, SENTENCES, losses, strict=True):  # now one client at a time
        sft_step(run, text, seen)
    final = histogram(server, PASS_RUNS)
    assert (final[0] - after[0], final[1] - after[1]) == (4, 4)


def test_a_client_one_pass_ahead_waits_for_partners_whose_optim_step_is_still_pending(tmp_path):
    """The staggered case a live run falls into after a first unbatched step: run A's next
    forward_backward is pending while its partners B and C still have only their optim_step pending
    (their forward ran in the pass before). Running A alone would keep the clients one pass apart
    for the rest of training; the worker holds A (the optim steps run meanwhile) until the window
    runs out, and a partner with a forward pending is never waited for. When the window runs out, a
    partner that was one pass ahead stays a partner (it may have finished its loop, and next time
    it sends first); one that had nothing pending is forgotten (clients taking turns never wait)."""
    worker = TinkerWorker(None, TinkerConfig(batch_window_ms=60_000, checkpoints=tmp_path), None)
    worker.runs = {run: Loaded(tenant_id=1, base=BASE, run=None) for run in ("a", "b", "c")}
    worker.partners = {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a", "b"}}

    def row(run: str, kind: str) -> SimpleNamespace:
        return SimpleNamespace(queue=f"1/{run}", kind=kind, tenant_id=1)

    ahead = [row("a", "forward_backward")]
    assert worker._hold(ahead, ahead + [row("b", "optim_step"), row("c", "optim_step")])
    caught_up = [row("a", "forward_backward"), row("b", "forward_backward"), row("c", "forward_backward")]
    assert not worker._hold(caught_up, caught_up)

    worker.config = TinkerConfig(batch_window_ms=0, checkpoints=tmp_path)  # no window: never held
    assert not worker._hold(ahead, ahead + [row("b", "optim_step")])

    worker.config = TinkerConfig(batch_window_ms=1, checkpoints=tmp_path)  # the window runs out:
    assert worker._hold(ahead, ahead + [row("b", "optim_step")])  # b one pass ahead, c idle
    time.sleep(0.01)
    assert not worker._hold(ahead, ahead)
    assert worker.partners["a"] == {"b"}  # b may have finished its loop: still a partner; c is forgotten


SAMPLE_PASSES = "resonance_tinker_sample_pass_requests"


def test_sample_requests_in_flight_are_decoded_together_with_the_tokens_each_gets_alone(server):
    """An RL loop or an evaluation sends many sample requests to one sampler at once; the worker
    decodes them in one engine run, and each request's tokens and log-probs are those it gets alone
    (its seed decides its tokens, whatever shares the batch). A request that cannot be served fails
    by itself, naming the field."""
    client = server.service_client()
    sampler = client.create_sampling_client(base_model=BASE).result()
    tokenizer = client.create_lora_training_client(base_model=BASE, rank=4).result().get_tokenizer()
    prompts = [types.ModelInput.from_ints(tokenizer.encode(text)) for text in SENTENCES * 8]
    params = [types.SamplingParams(max_tokens=6, temperature=1.0, seed=i, stop=[]) for i in range(32)]
    alone = [sampler.sample(p, 2, s).result() for p, s in zip(prompts, params, strict=True)]

    before = histogram(server, SAMPLE_PASSES)
    with paused(server):  # the requests reach the server together, as a busy server finds them
        futures = [sampler.sample(p, 2, s) for p, s in zip(prompts, params, strict=True)]
        too_long = sampler.sample(prompts[0], 1, types.SamplingParams(max_tokens=10**6, stop=[]))
    together = [f.result() for f in futures]
    after = histogram(server, SAMPLE_PASSES)

    for one, shared in zip(alone, together, strict=True):
        assert [s.tokens for s in shared.sequences] == [s.tokens for s in one.sequences]
        for a, b in zip(one.sequences, shared.sequences, strict=True):
            np.testing.assert_allclose(b.logprobs, a.logprobs, rtol=1e-4, atol=1e-5)
    with pytest.raises(tinker.RequestFailedError, match="max_tokens"):
        too_long.result()
    runs, requests = after[0] - before[0], after[1] - before[1]
    assert requests == 32 and runs < 16, (runs, requests)  # the refused one is not decoded; alone: 32 runs
