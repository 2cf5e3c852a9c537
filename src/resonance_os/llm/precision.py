"""Which floating-point precision a model runs fastest in on this machine, detected and overridable.

bf16 halves the bytes each weight costs, but a CPU only computes it faster when it has matrix units
for it: Intel AMX (``amx_bf16``). Without them torch converts bf16 to float32 around every product;
on this project's AVX-512 machine without AMX (``avx512_bf16`` present, ``amx_bf16`` absent) a
SmolLM2-135M decode step at batch 8 took 742 ms in bf16 against 266 ms in float32 (2.8x slower), and
the issue measured 0.59x on an AVX2-only EPYC, 1.59x faster on a CPU with AMX. So the rule is: CUDA
with bf16 support or a CPU with AMX -> bf16, anything else -> float32. ``$RESONANCE_ENGINE_DTYPE``
(``float32``, ``bfloat16``, ``float16``) or an explicit dtype overrides the choice.
"""

from __future__ import annotations

import os
from functools import cache

import torch

from resonance_os.llm.errors import ConfigError

DTYPE_ENV = "RESONANCE_ENGINE_DTYPE"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
REPORTED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_bf16", "amx_int8")


@cache
def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of the first CPU in ``/proc/cpuinfo`` (empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def instruction_sets() -> str:
    """The flags that decide low-precision speed, as one line for benchmark output (``avx2 avx512f ...``)."""
    found = [flag for flag in REPORTED_FLAGS if flag in cpu_flags()]
    return " ".join(found) or "none of " + ", ".join(REPORTED_FLAGS)


def parse_dtype(value: str | torch.dtype) -> torch.dtype:
    """A torch dtype from a name (``float32``, ``bfloat16``, ``float16``) or a dtype; ``ConfigError`` otherwise."""
    if isinstance(value, torch.dtype) and value in DTYPES.values():
        return value
    if isinstance(value, str) and value.lower() in DTYPES:
        return DTYPES[value.lower()]
    raise ConfigError(f"dtype {value!r} is not one of {sorted(DTYPES)}; pick one of them")


def fast_dtype(device: str | torch.device = "cpu") -> torch.dtype:
    """The precision to run on ``device``: ``$RESONANCE_ENGINE_DTYPE`` if set, else bf16 on a CUDA device
    that supports it or a CPU with AMX, else float32."""
    override = os.environ.get(DTYPE_ENV)
    if override:
        return parse_dtype(override)
    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if "amx_bf16" in cpu_flags() else torch.float32
