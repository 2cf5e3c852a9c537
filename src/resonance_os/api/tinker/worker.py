"""The training worker: one thread that executes the stored requests, in order, batching where it can.

Each loop reads the pending futures. A training run's requests run in ``seq_id`` order (a request
whose predecessor has not arrived waits up to ``GAP_WAIT_S``, then runs: the SDK sends a
multi-chunk ``forward_backward`` concurrently, first chunk last). The next ``forward_backward``/
``forward`` requests of every run on the same base model run as one batch; a sampler's pending
``sample`` requests (``compute_logprobs`` included) are decoded together in one engine run; other
requests (create, optim_step, save, load) run one by one. A result or error is written to the future's
row and the long polls waiting on it are woken.

Concurrent clients' requests do not arrive at the same instant, so a pass started at the first one
would run it alone and the rest after it. Runs whose requests have been pending together are
*partners*: a batch is held (other requests run meanwhile) until every partner on its base model has
a request pending, for at most ``TinkerConfig.batch_window_ms``; a partner that lets the window run out
stops being waited for until its requests overlap another run's again, so clients taking turns never
wait, and clients training at once share every pass after their first.

The models live in this process's memory. After a restart, a request on a run that was loaded before
it fails with an error that says so and names the run's newest checkpoint to resume from; requests that
need no lost state (create, load from a checkpoint, sampling saved weights) complete.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from prometheus_client import Histogram

import resonance_os.api.tinker.backend as backend
import resonance_os.api.tinker.checkpoints as checkpoints
import resonance_os.api.tinker.futures as futures
from resonance_os.api.persistence.db import Database
from resonance_os.api.tinker.config import TinkerConfig
from resonance_os.api.tinker.errors import TinkerError, UserError
from resonance_os.api.tinker.store import (
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    TinkerCheckpoint,
    TinkerFuture,
    TinkerModel,
    TinkerSampler,
    TinkerSession,
)
from resonance_os.api.tinker.wire import decode_forward_backward, encode_forward_backward, encode_sample
from resonance_os.llm.lora_slots import DEFAULT_ALPHA, LoraSpec
from resonance_os.profiles.schema import utcnow

log = logging.getLogger("resonance_os.api.tinker")

GAP_WAIT_S = 5.0
"""How long a run's request waits for a missing predecessor (by seq_id) before it runs anyway."""

MAX_BATCH_TOKENS = 65536
"""Most tokens in one batched forward/backward pass."""

SNAPSHOTS_KEPT = 4
"""Ephemeral sampler snapshots kept per training run (older ones are dropped, newest first kept)."""

FWD_KINDS = ("forward_backward",)

SWEEP_EVERY_S = 30.0
"""How often the worker deletes old futures and expired checkpoints and unloads stale sessions."""

FUTURE_KEEP_S = 3600.0
"""How long a finished future (its request and result) stays retrievable."""

STALE_SESSION_S = 600.0
"""A session without a heartbeat for this long has its runs and samplers unloaded (checkpoints stay)."""

PASS_RUNS = Histogram(
    "resonance_tinker_forward_backward_pass_runs",
    "Training runs whose forward/backward requests shared one pass",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
)

SAMPLE_PASS_REQUESTS = Histogram(
    "resonance_tinker_sample_pass_requests",
    "Sample requests of one sampler decoded together in one engine run",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)


@dataclass
class Loaded:
    """A training run in memory."""

    tenant_id: int
    base: str
    run: backend.Run


@dataclass
class SamplerState:
    base: str
    adapter: str | None  # the slot it samples with; None: the base model
    owned: bool  # the slot belongs to this sampler (a snapshot or loaded weights), not to a run


class TinkerWorker:
    def __init__(self, db: Database, config: TinkerConfig, waiters: futures.Waiters) -> None:
        self.db = db
        self.config = config
        self.waiters = waiters
        self.bases: dict[str, backend.BaseModel] = {}
        self.runs: dict[str, Loaded] = {}
        self.samplers: dict[str, SamplerState] = {}
        self.snapshots: dict[str, list[str]] = {}  # model id -> its ephemeral sampler ids, oldest first
        self.last_seq: dict[str, int] = {}
        self.partners: dict[str, set[str]] = {}  # run -> runs whose requests were pending with its
        self._held_since: float | None = None  # when the batch now held first waited for partners
        self._ahead: set[str] = set()  # partners seen one pass ahead while the batch is held
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------------- lifetime
    def start(self) -> TinkerWorker:
        with self.db.write() as session:  # a request that was running when the server died runs again
            session.execute(
                sa.update(TinkerFuture).where(TinkerFuture.state == RUNNING).values(state=PENDING)
            )
            session.execute(
                sa.update(TinkerModel).where(TinkerModel.state.in_(("ready", "pending"))).values(state="lost")
            )
        self._thread = threading.Thread(target=self._loop, name="tinker-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        swept = 0.0
        while not self._stop.is_set():
            try:
                if time.monotonic() - swept > SWEEP_EVERY_S:
                    swept = time.monotonic()
                    self.sweep()
                busy = self.step()
            except Exception:  # keep serving; the failing futures were failed inside step()
                log.exception("tinker worker step failed")
                busy = False
            if not busy:
                self._wake.wait(0.5)
                self._wake.clear()

    def sweep(self) -> None:
        """Delete finished futures older than FUTURE_KEEP_S and checkpoints past their TTL (files
        first), and unload the runs of sessions silent for STALE_SESSION_S."""
        now = utcnow()
        with self.db.write() as session:
            session.execute(
                sa.delete(TinkerFuture).where(
                    TinkerFuture.state.in_((DONE, FAILED)),
                    TinkerFuture.finished_at < now - timedelta(seconds=FUTURE_KEEP_S),
                )
            )
            expired = session.scalars(
                sa.select(TinkerCheckpoint).where(TinkerCheckpoint.expires_at < now)
            ).all()
            for record in expired:
                shutil.rmtree(record.folder, ignore_errors=True)
                session.delete(record)
            stale = session.scalars(
                sa.select(TinkerSession.id).where(
                    TinkerSession.finished_at.is_(None),
                    TinkerSession.heartbeat_at < now - timedelta(seconds=STALE_SESSION_S),
                )
            ).all()
        for session_id in stale:
            if any(m.startswith(f"{session_id}:") for m in self.runs) or any(
                s.startswith(f"{session_id}:") for s in self.samplers
            ):
                log.info(
                    "unloading the runs of session %s: no heartbeat for %.0f s", session_id, STALE_SESSION_S
                )
                self._close_session(session_id)

    # ----------------------------------------------------------------------------------- scheduling
    def step(self) -> bool:
        """Run one round of eligible requests; False when there was nothing to do."""
        self._wake.clear()  # before the read: a request stored after it wakes a wait below
        with self.db.read() as session:
            rows = session.scalars(
                sa.select(TinkerFuture)
                .where(TinkerFuture.state == PENDING)
                .order_by(TinkerFuture.id)
                .limit(1000)
            ).all()
        if not rows:
            return False
        by_queue: dict[str, list[TinkerFuture]] = {}
        for row in rows:
            by_queue.setdefault(row.queue, []).append(row)
        now = utcnow()
        batch: list[TinkerFuture] = []
        singles: list[TinkerFuture] = []
        samples: list[list[TinkerFuture]] = []
        for queue, queued in by_queue.items():
            if queued[0].kind == "sample":
                samples.append(queued)
                continue
            queued.sort(key=lambda r: (r.seq_id is not None, r.seq_id or 0))
            last = self._last_seq(queue)
            expected = last + 1
            for row in queued:
                waited = (now - row.created_at).total_seconds()
                if row.seq_id is not None and row.seq_id > expected and waited < GAP_WAIT_S:
                    break
                if row.kind in FWD_KINDS:
                    batch.append(row)
                    expected = (row.seq_id or expected) + 1
                    continue
                if not batch or batch[-1].queue != queue:
                    singles.append(row)
                break
        self._note_partners(rows)
        held = bool(batch) and self._hold(batch, rows)
        if held:
            batch = []
        if not batch and not singles and not samples:
            self._wake.wait(0.05)
            return True
        if batch:
            self._run_fwdbwd(batch)
        for row in singles:
            self._run_single(row)
        for rows_of_sampler in samples:
            self._run_samples(rows_of_sampler)
        return True

    def _note_partners(self, rows: list[TinkerFuture]) -> None:
        """Make the loaded runs on one base model with requests pending now each other's partners."""
        by_base: dict[str, set[str]] = {}
        for row in rows:
            loaded = self.runs.get(_model_of(row.queue))
            if loaded is not None and loaded.tenant_id == row.tenant_id:
                by_base.setdefault(loaded.base, set()).add(loaded.run.model_id)
        for models in by_base.values():
            if len(models) > 1:
                for model_id in models:
                    self.partners.setdefault(model_id, set()).update(models - {model_id})

    def _hold(self, batch: list[TinkerFuture], rows: list[TinkerFuture]) -> bool:
        """Whether to hold ``batch`` back for the partners of its runs that have no forward pending yet,
        for at most the window. A partner with only its optim_step pending is one pass ahead (its
        step runs while the batch is held, and a training loop sends its next forward_backward
        then); when the window runs out, a partner that was one pass ahead stays a partner (it
        may simply have finished its loop) and the others are forgotten."""
        members = {_model_of(r.queue) for r in batch}
        forwards = {_model_of(r.queue) for r in rows if r.kind in FWD_KINDS}
        pending = {_model_of(r.queue) for r in rows}
        expected = set().union(*(self.partners.get(m, set()) for m in members))
        missing = {m for m in expected - forwards if m in self.runs}
        if missing and self.config.batch_window_ms > 0:
            now = time.monotonic()
            if self._held_since is None:
                self._held_since = now
            self._ahead |= missing & pending
            if now - self._held_since < self.config.batch_window_ms / 1000:
                return True
            for model_id in missing - self._ahead:
                self._forget_partner(model_id)
        self._held_since = None
        self._ahead = set()
        return False

    def _forget_partner(self, model_id: str) -> None:
        self.partners.pop(model_id, None)
        for others in self.partners.values():
            others.discard(model_id)

    def _last_seq(self, queue: str) -> int:
        if queue not in self.last_seq:
            with self.db.read() as session:
                value = session.scalar(
                    sa.select(sa.func.max(TinkerFuture.seq_id)).where(
                        TinkerFuture.queue == queue, TinkerFuture.state.in_((DONE, FAILED))
                    )
                )
            self.last_seq[queue] = -1 if value is None else value
        return self.last_seq[queue]

    def _mark_running(self, rows: list[TinkerFuture]) -> None:
        with self.db.write() as session:
            session.execute(
                sa.update(TinkerFuture).where(TinkerFuture.id.in_([r.id for r in rows])).values(state=RUNNING)
            )

    def _done(self, row: TinkerFuture, result: bytes | dict[str, Any], fmt: str) -> None:
        futures.finish(self.db, row.id, result, fmt)
        self._settled(row)

    def _failed(self, row: TinkerFuture, exc: BaseException) -> None:
        if isinstance(exc, TinkerError):
            message, category = str(exc), exc.category
        else:
            log.error("tinker %s request %s failed", row.kind, row.id, exc_info=exc)
            message, category = f"internal error in {row.kind}: {type(exc).__name__}: {exc}", "server"
        futures.fail(self.db, row.id, message, category)
        self._settled(row)

    def _settled(self, row: TinkerFuture) -> None:
        if row.seq_id is not None and row.kind != "sample":
            self.last_seq[row.queue] = max(self._last_seq(row.queue), row.seq_id)
        self.waiters.notify(row.id)

    # ----------------------------------------------------------------------------------- fwd/bwd
    def _run_fwdbwd(self, rows: list[TinkerFuture]) -> None:
        self._mark_running(rows)
        groups: dict[str, list[tuple[TinkerFuture, backend.FwdBwdItem]]] = {}
        for row in rows:
            try:
                request = decode_forward_backward(row.request)
                loaded = self._loaded(row.tenant_id, request.model_id)
                base = self.bases[loaded.base]
                config = backend.check_fwdbwd(base, request)
                groups.setdefault(loaded.base, []).append(
                    (row, backend.FwdBwdItem(loaded.run, request, config))
                )
            except Exception as exc:
                self._failed(row, exc)
        for base_name, entries in groups.items():
            for chunk in _token_chunks(entries):
                PASS_RUNS.observe(len({item.run.model_id for _, item in chunk}))
                try:
                    results = backend.forward_backward(self.bases[base_name], [item for _, item in chunk])
                except Exception as exc:
                    for row, _ in chunk:
                        self._failed(row, exc)
                    continue
                for (row, _), (outputs, metrics) in zip(chunk, results, strict=True):
                    self._done(row, encode_forward_backward(outputs, metrics), "proto")
        self._touch([_model_of(r.queue) for r in rows])

    # ----------------------------------------------------------------------------------- the rest
    def _run_samples(self, rows: list[TinkerFuture]) -> None:
        """One sampler's pending sample requests, decoded together in one engine run."""
        self._mark_running(rows)
        accepted: list[tuple[TinkerFuture, list[int], Any]] = []
        for row in rows:  # one queue: every row names the same sampler
            try:
                state, prompt, request = self._sample_request(row)
                accepted.append((row, prompt, request))
            except Exception as exc:
                self._failed(row, exc)
        if not accepted:
            return
        SAMPLE_PASS_REQUESTS.observe(len(accepted))
        try:
            results = backend.sample(
                self.bases[state.base], state.adapter, [(prompt, request) for _, prompt, request in accepted]
            )
        except Exception as exc:
            for row, _, _ in accepted:
                self._failed(row, exc)
            return
        for (row, _, _), (sequences, prompt_lp) in zip(accepted, results, strict=True):
            self._done(row, encode_sample(sequences, prompt_lp), "proto")

    def _run_single(self, row: TinkerFuture) -> None:
        self._mark_running([row])
        try:
            body = json.loads(row.request)
            handler = getattr(self, f"_do_{row.kind}")
            result = handler(row, body)
        except Exception as exc:
            self._failed(row, exc)
            return
        if isinstance(result, bytes):
            self._done(row, result, "proto")
        else:
            self._done(row, result, "json")
        self._touch([_model_of(row.queue)])

    def _touch(self, model_ids: list[str]) -> None:
        with self.db.write() as session:
            session.execute(
                sa.update(TinkerModel)
                .where(TinkerModel.id.in_(set(model_ids)))
                .values(last_request_at=utcnow())
            )

    def _base(self, name: str) -> backend.BaseModel:
        if name not in self.config.base_models:
            raise UserError(
                f"base_model={name!r} is not served here; choose one of {sorted(self.config.base_models)} "
                "(GET /api/v1/get_server_capabilities)"
            )
        if name not in self.bases:
            tokenizer, model, folder = backend.load_base_model(self.config.base_models[name])
            self.bases[name] = backend.BaseModel(name, tokenizer, model, folder)
        return self.bases[name]

    def _loaded(self, tenant_id: int, model_id: str) -> Loaded:
        loaded = self.runs.get(model_id)
        if loaded is not None and loaded.tenant_id == tenant_id:
            return loaded
        with self.db.read() as session:
            model = session.scalar(
                sa.select(TinkerModel).where(TinkerModel.id == model_id, TinkerModel.tenant_id == tenant_id)
            )
            newest = session.scalar(
                sa.select(TinkerCheckpoint)
                .where(TinkerCheckpoint.model_id == model_id, TinkerCheckpoint.kind == "training")
                .order_by(TinkerCheckpoint.created_at.desc())
                .limit(1)
            )
        if model is None:
            raise UserError(f"model_id={model_id!r}: no such training run of this tenant")
        if model.state == "lost":
            resume = (
                f"resume with create_training_client_from_state_with_optimizer({str(checkpoints.TinkerPath(model_id, 'training', newest.name))!r})"
                if newest is not None
                else "it has no saved state; start a new run"
            )
            raise TinkerError(
                f"model_id={model_id!r} is no longer loaded: the server restarted and its unsaved training "
                f"state is gone; {resume}"
            )
        raise UserError(f"model_id={model_id!r} is {model.state}; it cannot take requests")

    def _adapter_room(self, base: backend.BaseModel) -> None:
        if len(base.slots.specs) >= self.config.max_adapters:
            raise TinkerError(
                f"{base.name} holds {self.config.max_adapters} adapters (training runs and samplers), the "
                "server's limit; close other clients or sessions and retry"
            )

    def _new_run(
        self, row: TinkerFuture, model_id: str, base_name: str, spec: LoraSpec, seed: int | None
    ) -> Loaded:
        tenant_runs = sum(1 for r in self.runs.values() if r.tenant_id == row.tenant_id)
        if tenant_runs >= self.config.max_models:
            raise UserError(
                f"this tenant has {tenant_runs} training runs loaded, its limit "
                f"(RESONANCE_TINKER_MAX_MODELS={self.config.max_models}); finish a session to free one"
            )
        base = self._base(base_name)
        self._adapter_room(base)
        loaded = Loaded(row.tenant_id, base_name, base.add_run(model_id, spec, seed))
        self.runs[model_id] = loaded
        return loaded

    def _set_model_state(self, model_id: str, state: str) -> None:
        with self.db.write() as session:
            session.execute(sa.update(TinkerModel).where(TinkerModel.id == model_id).values(state=state))

    def _do_create_model(self, row: TinkerFuture, body: dict[str, Any]) -> dict[str, Any]:
        model_id = body["model_id"]
        lora = body["lora"]
        try:
            spec = LoraSpec(
                rank=int(lora["rank"]),
                train_mlp=bool(lora["train_mlp"]),
                train_attn=bool(lora["train_attn"]),
                train_unembed=bool(lora["train_unembed"]),
                alpha=float(lora.get("alpha", DEFAULT_ALPHA)),
            )
        except Exception as exc:
            self._set_model_state(model_id, "failed")
            raise UserError(f"lora_config: {exc}") from None
        if model_id not in self.runs:
            try:
                self._new_run(row, model_id, body["base_model"], spec, lora.get("seed"))
            except Exception:
                self._set_model_state(model_id, "failed")
                raise
        self._set_model_state(model_id, "ready")
        return {"model_id": model_id, "type": "create_model"}

    def _do_optim_step(self, row: TinkerFuture, body: dict[str, Any]) -> dict[str, Any]:
        loaded = self._loaded(row.tenant_id, body["model_id"])
        params = body.get("adam_params")
        if not isinstance(params, dict):
            raise UserError("optim_step: send adam_params (AdamParams); other optimizers are not supported")
        return {"metrics": backend.optim_step(loaded.run, params), "type": "optim_step"}

    # ----------------------------------------------------------------------------------- checkpoints
    def _meta(self, loaded: Loaded) -> dict[str, Any]:
        spec = loaded.run.spec
        base = self.bases[loaded.base]
        return {
            "model_id": loaded.run.model_id,
            "base_model": loaded.base,
            "base_folder": base.folder,
            "seed": loaded.run.seed,
            "lora": {
                "rank": spec.rank,
                "alpha": spec.alpha,
                "train_mlp": spec.train_mlp,
                "train_attn": spec.train_attn,
                "train_unembed": spec.train_unembed,
            },
        }

    def _record_checkpoint(
        self, row: TinkerFuture, where: checkpoints.TinkerPath, folder: Path, size: int, body: dict[str, Any]
    ) -> None:
        ttl = body.get("ttl_seconds")
        expires = utcnow() + timedelta(seconds=int(ttl)) if ttl else None
        with self.db.write() as session:
            used = session.scalar(
                sa.select(sa.func.coalesce(sa.func.sum(TinkerCheckpoint.size_bytes), 0)).where(
                    TinkerCheckpoint.tenant_id == row.tenant_id,
                    ~sa.and_(
                        TinkerCheckpoint.model_id == where.model_id,
                        TinkerCheckpoint.kind == where.kind,
                        TinkerCheckpoint.name == where.name,
                    ),
                )
            )
            if used + size > self.config.storage_bytes:
                shutil.rmtree(folder, ignore_errors=True)
                raise UserError(
                    f"saving {where} ({size} bytes) would take this tenant's checkpoints to {used + size} bytes, "
                    f"over its {self.config.storage_bytes}-byte limit; delete checkpoints first"
                )
            session.execute(
                sa.delete(TinkerCheckpoint).where(
                    TinkerCheckpoint.model_id == where.model_id,
                    TinkerCheckpoint.kind == where.kind,
                    TinkerCheckpoint.name == where.name,
                )
            )
            session.add(
                TinkerCheckpoint(
                    tenant_id=row.tenant_id,
                    model_id=where.model_id,
                    kind=where.kind,
                    name=where.name,
                    folder=str(folder),
                    size_bytes=size,
                    user_metadata=body.get("user_metadata") or {},
                    expires_at=expires,
                )
            )

    def _do_save_weights(self, row: TinkerFuture, body: dict[str, Any]) -> dict[str, Any]:
        loaded = self._loaded(row.tenant_id, body["model_id"])
        name = checkpoints.check_name(body.get("path"))
        where = checkpoints.TinkerPath(loaded.run.model_id, "training", name)
        folder = checkpoints.folder_for(self.config.checkpoints, row.tenant_id, where)
        base = self.bases[loaded.base]
        size = checkpoints.write_training(
            folder,
            where,
            base.slots.state_dict(loaded.run.model_id),
            loaded.run.optimizer.state_dict(),
            self._meta(loaded),
            overwrite=bool(body.get("overwrite")),
        )
        self._record_checkpoint(row, where, folder, size, body)
        return {"path": str(where), "type": "save_weights"}

    def _do_save_weights_for_sampler(self, row: TinkerFuture, body: dict[str, Any]) -> dict[str, Any]:
        loaded = self._loaded(row.tenant_id, body["model_id"])
        base = self.bases[loaded.base]
        model_id = loaded.run.model_id
        if body.get("path") is not None:
            where = checkpoints.TinkerPath(model_id, "sampler", checkpoints.check_name(body["path"]))
            folder = checkpoints.folder_for(self.config.checkpoints, row.tenant_id, where)
            size = checkpoints.write_sampler(
                folder, where, base.slots.state_dict(model_id), self._meta(loaded), overwrite=True
            )
            self._record_checkpoint(row, where, folder, size, body)
            return {"path": str(where), "type": "save_weights_for_sampler"}
        sampler_id = (
            f"{model_id.split(':train:')[0]}:sample:{body.get('sampling_session_seq_id', uuid.uuid4().hex)}"
        )
        if body.get("kind") == "inflight":
            self.samplers[sampler_id] = SamplerState(loaded.base, model_id, owned=False)
        else:
            self._adapter_room(base)
            slot = f"snapshot:{sampler_id}"
            base.slots.remove(slot)
            base.slots.add(slot, loaded.run.spec, seed=0)
            base.slots.load_state_dict(slot, base.slots.state_dict(model_id))
            self._drop_sampler(sampler_id)
            self.samplers[sampler_id] = SamplerState(loaded.base, slot, owned=True)
            kept = self.snapshots.setdefault(model_id, [])
            kept.append(sampler_id)
            while len(kept) > SNAPSHOTS_KEPT:
                self._drop_sampler(kept.pop(0))
        with self.db.write() as session:
            session.merge(
                TinkerSampler(
                    id=sampler_id,
                    tenant_id=row.tenant_id,
                    session_id=sampler_id.split(":")[0],
                    base_model=loaded.base,
                    model_path=None,
                )
            )
        return {"path": None, "sampling_session_id": sampler_id, "type": "save_weights_for_sampler"}

    def _drop_sampler(self, sampler_id: str) -> None:
        state = self.samplers.pop(sampler_id, None)
        if state is not None and state.owned and state.adapter is not None:
            self.bases[state.base].slots.remove(state.adapter)

    def _checkpoint_folder(
        self, tenant_id: int, path: str, field: str = "path"
    ) -> tuple[checkpoints.TinkerPath, Path]:
        where = checkpoints.parse_path(path, field)
        with self.db.read() as session:
            record = session.scalar(
                sa.select(TinkerCheckpoint).where(
                    TinkerCheckpoint.tenant_id == tenant_id,
                    TinkerCheckpoint.model_id == where.model_id,
                    TinkerCheckpoint.kind == where.kind,
                    TinkerCheckpoint.name == where.name,
                )
            )
        if record is None:
            raise UserError(
                f"{field}={path!r}: no such checkpoint of this tenant (list them with the REST client)"
            )
        return where, Path(record.folder)

    def _do_load_weights(self, row: TinkerFuture, body: dict[str, Any]) -> dict[str, Any]:
        where, folder = self._checkpoint_folder(row.tenant_id, body["path"])
        if where.kind != "training":
            raise UserError(
                f"path={body['path']!r} is sampler weights; load a training state (tinker://.../weights/...)"
            )
        meta = checkpoints.read_meta(folder)
        model_id = body["model_id"]
        if body.get("new_client"):
            base_name = body.get("base_model") or meta["base_model"]
            if base_name != meta["base_model"]:
                raise UserError(
                    f"base_model={base_name!r} differs from the checkpoint's {meta['base_model']!r}"
                )
            lora = meta["lora"]
            spec = LoraSpec(
                lora["rank"], lora["train_mlp"], lora["train_attn"], lora["train_unembed"], lora["alpha"]
            )
            loaded = self.runs.get(model_id) or self._new_run(
                row, model_id, base_name, spec, meta.get("seed")
            )
        else:
            loaded = self._loaded(row.tenant_id, model_id)
        base = self.bases[loaded.base]
        base.slots.load_state_dict(model_id, checkpoints.read_adapter(folder))
        for p in loaded.run.params:
            p.grad = None
        if body.get("optimizer"):
            loaded.run.optimizer.load_state_dict(checkpoints.read_optimizer(folder))
        else:
            loaded.run.optimizer.state.clear()
        self._set_model_state(model_id, "ready")
        return {"path": body["path"], "model_id": model_id, "type": "load_weights"}

    # ----------------------------------------------------------------------------------- sampling
    def _sampler(self, tenant_id: int, sampler_id: str) -> SamplerState:
        with self.db.read() as session:
            record = session.scalar(
                sa.select(TinkerSampler).where(
                    TinkerSampler.id == sampler_id, TinkerSampler.tenant_id == tenant_id
                )
            )
        if record is None:
            raise UserError(f"sampling_session_id={sampler_id!r}: no such sampling session of this tenant")
        state = self.samplers.get(sampler_id)
        if state is not None:
            return state
        if record.model_path is None and ":sample:" in sampler_id:
            raise TinkerError(
                f"sampling_session_id={sampler_id!r}: its weights snapshot is gone (the server restarted, or "
                f"more than {SNAPSHOTS_KEPT} newer snapshots of the run were taken); call "
                "save_weights_and_get_sampling_client again"
            )
        base = self._base(record.base_model)
        if record.model_path is None:
            state = SamplerState(record.base_model, None, owned=False)
        else:
            where, folder = self._checkpoint_folder(tenant_id, record.model_path, "model_path")
            meta = checkpoints.read_meta(folder)
            lora = meta["lora"]
            self._adapter_room(base)
            slot = f"weights:{sampler_id}"
            base.slots.remove(slot)
            base.slots.add(
                slot,
                LoraSpec(
                    lora["rank"], lora["train_mlp"], lora["train_attn"], lora["train_unembed"], lora["alpha"]
                ),
                seed=0,
            )
            base.slots.load_state_dict(slot, checkpoints.read_adapter(folder))
            state = SamplerState(record.base_model, slot, owned=True)
        self.samplers[sampler_id] = state
        return state

    def _sample_request(self, row: TinkerFuture) -> tuple[SamplerState, list[int], Any]:
        """(the sampler, the prompt, the engine's sampling request) of a sample future, or a user error
        naming the field that cannot be served."""
        body = json.loads(row.request)
        state = self._sampler(row.tenant_id, body["sampling_session_id"])
        base = self.bases[state.base]
        prompt: list[int] = []
        for i, chunk in enumerate(body["prompt"].get("chunks", [])):
            if chunk.get("type") != "encoded_text":
                raise UserError(f"prompt.chunks[{i}]: only encoded_text chunks are supported")
            prompt += [int(t) for t in chunk["tokens"]]
        unsupported = [
            name
            for name in ("topk_prompt_logprobs", "topk_sample_logprobs", "prompt_alt_tokens_k")
            if body.get(name)
        ] + [name for name in ("target_prompt_logprobs", "record_stability_info") if body.get(name)]
        if unsupported:
            raise UserError(f"{unsupported[0]} is not supported by this server; leave it at its default")
        n = int(body.get("num_samples", 1))
        if not 1 <= n <= 128:
            raise UserError(f"num_samples={n} must be between 1 and 128")
        params = body.get("sampling_params") or {}
        stop = params.get("stop") if isinstance(params, dict) else None
        if isinstance(stop, str):
            stop = [stop]
        try:
            sample_params = backend.SampleParams(
                max_tokens=None if params.get("max_tokens") is None else int(params["max_tokens"]),
                temperature=float(params.get("temperature", 1.0)),
                top_k=int(params.get("top_k", -1)),
                top_p=float(params.get("top_p", 1.0)),
                seed=None if params.get("seed") is None else int(params["seed"]),
                stop=None if stop is None else list(stop),
            )
        except (AttributeError, TypeError, ValueError) as exc:
            raise UserError(
                f"sampling_params: {exc}; send max_tokens, temperature, top_k, top_p, seed, stop"
            ) from None
        if not 0 < sample_params.top_p <= 1:
            raise UserError(f"sampling_params.top_p={sample_params.top_p} must be in (0, 1]")
        last_n = body.get("prompt_logprobs_last_n")
        if last_n is not None and (isinstance(last_n, bool) or not isinstance(last_n, int)):
            raise UserError(f"prompt_logprobs_last_n={last_n!r} must be an integer or null")
        if last_n is not None and not body.get("prompt_logprobs"):
            raise UserError("prompt_logprobs_last_n applies to prompt logprobs; set prompt_logprobs=true")
        scoring = backend.PromptScoring(last_n) if body.get("prompt_logprobs") else None
        return state, prompt, backend.sampling_request(base, prompt, n, sample_params, scoring)

    def _do_close_session(self, row: TinkerFuture, body: dict[str, Any]) -> dict[str, Any]:
        self._close_session(body["session_id"])
        return {"type": "close_session"}

    def _close_session(self, session_id: str) -> None:
        """Unload the session's training runs and samplers (their saved checkpoints stay)."""
        for model_id in [m for m in self.runs if m.startswith(f"{session_id}:")]:
            loaded = self.runs.pop(model_id)
            self._forget_partner(model_id)
            for sampler_id in self.snapshots.pop(model_id, []):
                self._drop_sampler(sampler_id)
            self.bases[loaded.base].remove(model_id)
            self._set_model_state(model_id, "closed")
        for sampler_id in [s for s in self.samplers if s.startswith(f"{session_id}:")]:
            self._drop_sampler(sampler_id)


def _model_of(queue: str) -> str:
    """The model (or sampler) id of a queue key ``"<tenant id>/<id>"``."""
    return queue.split("/", 1)[1]


def _token_chunks(entries: list[tuple[TinkerFuture, backend.FwdBwdItem]]):
    """Split a batch so no pass holds more than MAX_BATCH_TOKENS tokens (padded)."""
    chunk: list[tuple[TinkerFuture, backend.FwdBwdItem]] = []
    rows = width = 0
    for entry in entries:
        data = entry[1].request.data
        new_width = max(width, max(d.tokens.size for d in data))
        if chunk and (rows + len(data)) * new_width > MAX_BATCH_TOKENS:
            yield chunk
            chunk, rows, new_width = [], 0, max(d.tokens.size for d in data)
        chunk.append(entry)
        rows += len(data)
        width = new_width
    if chunk:
        yield chunk
