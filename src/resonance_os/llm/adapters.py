"""LoRA adapters served by name: read from disk, and applied per row inside one batch.

``read_adapter(folder)`` reads the LoRA weights our trainers save and the ones ``peft`` saves:

- a ``peft`` folder: ``adapter_config.json`` + ``adapter_model.safetensors`` (``save_pretrained``);
- an ``LMPolicy`` / ``GRPO`` / ``SFT`` checkpoint: ``weights/adapter.safetensors`` + ``config.json``;
- a training run (``rl.run.open_run``: its checkpoint, in any run layout), or a folder holding one of
  those in ``policy/`` or ``checkpoint/``.

Nothing is unpickled (safetensors and JSON only). The result, an :class:`Adapter`, holds for every
adapted layer (by its module path in the transformers model) ``A`` (r x in), ``B`` (out x r) and the
scale ``alpha / r`` (``alpha / sqrt(r)`` with rsLoRA).

``MultiLoraLinear`` replaces a ``Linear`` of the served model once some adapter targets it. Before each
forward pass the engine sets the shared :class:`RowAdapters` plan (which rows use which adapter); the
layer then computes ``W x + b`` for every row and adds ``s B A x`` for each adapter's rows only (one
sub-batch per adapter present), so the base model and several adapters run in one batch.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import SafetensorError
from safetensors.torch import load_file

from resonance_os.llm.errors import LLMError
from resonance_os.llm.int8_weights import Int8Linear
from resonance_os.rl.run import RunError, is_run, open_run

RUN_SUBFOLDERS = ("policy", "checkpoint")
PEFT_PREFIX = "base_model.model."


class AdapterError(LLMError):
    """An adapter folder cannot be read, or does not fit the served model."""

    http_status = 400


@dataclass
class Adapter:
    """LoRA weights by module path: ``layers[path] = (A, B, scale)``; ``source`` is the folder read."""

    layers: dict[str, tuple[torch.Tensor, torch.Tensor, float]]
    source: str


def _lora_settings_peft(config: dict) -> tuple[float, int, bool]:
    unsupported = [
        key
        for key in ("use_dora", "modules_to_save", "rank_pattern", "alpha_pattern", "fan_in_fan_out")
        if config.get(key)
    ]
    if config.get("bias", "none") != "none":
        unsupported.append("bias")
    if unsupported:
        raise AdapterError(
            f"adapter_config.json sets {unsupported}; the engine serves plain LoRA adapters "
            "(no DoRA, no extra trained modules, one rank and alpha for every layer)"
        )
    return float(config.get("lora_alpha", 8)), int(config.get("r", 8)), bool(config.get("use_rslora"))


def _find_layout(folder: Path) -> Path:
    candidates = [folder, *(folder / sub for sub in RUN_SUBFOLDERS)]
    if is_run(folder):
        try:
            candidates.insert(1, open_run(folder).checkpoint)
        except RunError as exc:
            raise AdapterError(str(exc)) from None
    for candidate in candidates:
        if (candidate / "adapter_config.json").is_file() or (
            candidate / "weights" / "adapter.safetensors"
        ).is_file():
            return candidate
    for candidate in candidates:
        if (candidate / "weights" / "model.safetensors").is_file():
            raise AdapterError(
                f"{candidate} holds fully fine-tuned weights, not a LoRA adapter; export it with "
                "LMPolicy.export and serve that folder as the base model"
            )
    raise AdapterError(
        f"no LoRA adapter in {folder}: expected adapter_config.json + adapter_model.safetensors (peft), "
        "weights/adapter.safetensors + config.json (an LMPolicy/GRPO checkpoint), or a run folder with "
        "one of them in policy/ or checkpoint/"
    )


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise AdapterError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise AdapterError(f"{path} is not a JSON object")
    return data


def _load_tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise AdapterError(f"cannot read the adapter weights {path}: {exc}") from exc


def read_adapter(folder: str | Path) -> Adapter:
    """The LoRA adapter saved in ``folder`` (see the module docstring for the layouts read)."""
    root = Path(folder)
    if not root.is_dir():
        raise AdapterError(f"no folder at {root}; pass the folder a trainer or peft saved the adapter in")
    where = _find_layout(root)
    if (where / "adapter_config.json").is_file():
        alpha, rank, rslora = _lora_settings_peft(_read_json(where / "adapter_config.json"))
        weights = where / "adapter_model.safetensors"
        if not weights.is_file():
            raise AdapterError(f"{where} has adapter_config.json but no adapter_model.safetensors")
        tensors = _load_tensors(weights)
    else:
        policy = _read_json(where / "config.json").get("policy") or {}
        if policy.get("finetune", "lora") != "lora":
            raise AdapterError(f"{where} is not a LoRA checkpoint (finetune={policy.get('finetune')!r})")
        alpha, rank, rslora = float(policy.get("lora_alpha", 32)), int(policy.get("lora_rank", 16)), False
        tensors = _load_tensors(where / "weights" / "adapter.safetensors")
    scale = alpha / math.sqrt(rank) if rslora else alpha / rank
    layers: dict[str, tuple[torch.Tensor, torch.Tensor, float]] = {}
    for key, tensor in tensors.items():
        if not key.endswith(".lora_A.weight"):
            if not key.endswith(".lora_B.weight"):
                raise AdapterError(f"{where}: unexpected tensor {key!r}; only LoRA A/B weights are served")
            continue
        path = key.removesuffix(".lora_A.weight").removeprefix(PEFT_PREFIX)
        b = tensors.get(key.replace(".lora_A.", ".lora_B."))
        if b is None:
            raise AdapterError(f"{where}: {key} has no matching lora_B weight")
        layers[path] = (tensor, b, scale)
    if not layers:
        raise AdapterError(f"{where} holds no LoRA weights")
    return Adapter(layers, str(where))


class RowAdapters:
    """Which rows of the current forward pass use which adapter: ``groups = [(name, rows), ...]``
    (``rows`` a slice or an index tensor); rows of no group run the base model."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, slice | torch.Tensor]] = []


class MultiLoraLinear(torch.nn.Module):
    """A ``Linear`` plus any number of named LoRA adapters, each applied to its rows of the batch."""

    def __init__(self, base: torch.nn.Linear, plan: RowAdapters) -> None:
        super().__init__()
        self.base = base
        self.plan = plan
        self.adapters: dict[str, tuple[torch.Tensor, torch.Tensor, float]] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        for name, rows in self.plan.groups:
            lora = self.adapters.get(name)
            if lora is None:
                continue
            a, b, scale = lora
            if isinstance(rows, slice):
                out[rows] += F.linear(F.linear(x[rows], a), b) * scale
            else:
                out.index_add_(0, rows, F.linear(F.linear(x[rows], a), b) * scale)
        return out


def install(model: torch.nn.Module, name: str, adapter: Adapter, plan: RowAdapters) -> None:
    """Put ``adapter`` into ``model`` under ``name``: each targeted ``Linear`` becomes (once) a
    :class:`MultiLoraLinear` sharing ``plan``. Checks every layer exists and every shape fits first,
    so a refused adapter leaves the model untouched."""
    dtype = next(model.parameters()).dtype
    placed: list[tuple[torch.nn.Module, str, torch.nn.Module, tuple]] = []
    for path, (a, b, scale) in adapter.layers.items():
        try:
            layer = model.get_submodule(path)
        except AttributeError:
            raise AdapterError(
                f"adapter {name!r} ({adapter.source}) adapts {path!r}, which the served model does not have; "
                "it was trained on another base model"
            ) from None
        base = layer.base if isinstance(layer, MultiLoraLinear) else layer
        if not isinstance(base, (torch.nn.Linear, Int8Linear)):
            raise AdapterError(
                f"adapter {name!r} adapts {path!r}, a {type(base).__name__}; only Linear layers are served"
            )
        if a.shape[1] != base.in_features or b.shape[0] != base.out_features or a.shape[0] != b.shape[1]:
            raise AdapterError(
                f"adapter {name!r} does not fit the served model at {path!r} (A {tuple(a.shape)}, B "
                f"{tuple(b.shape)} for a {base.in_features} -> {base.out_features} layer); it was trained on "
                "another base model"
            )
        parent_path, _, child = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        device = next(itertools.chain(base.parameters(), base.buffers())).device
        placed.append((parent, child, layer, (a.to(device, dtype), b.to(device, dtype), float(scale))))
    for parent, child, layer, weights in placed:
        if not isinstance(layer, MultiLoraLinear):
            layer = MultiLoraLinear(layer, plan)
            setattr(parent, child, layer)
        layer.adapters[name] = weights


def uninstall(model: torch.nn.Module, name: str) -> None:
    """Remove adapter ``name`` from every layer of ``model`` (the wrappers stay, cheap without adapters)."""
    for module in model.modules():
        if isinstance(module, MultiLoraLinear):
            module.adapters.pop(name, None)
