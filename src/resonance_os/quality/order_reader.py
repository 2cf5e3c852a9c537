"""The trained sentence-order reader: SmolLM2 with an order LoRA and a linear head (``LMCoherence``).

``scripts/train_order_reader.py`` trained it on about 37,000 real paragraphs (public-domain novels,
children's books and philosophy, plus the training prose of ``quality.corpus``) to score a paragraph's
real order above shuffles of its sentences (pairwise logistic loss). It ships as
``data/order_reader.safetensors``: for every attention and MLP projection of every layer the LoRA
factors ``A`` (r x in) and ``B`` (out x r) in float16, and the head (float32), with the rank, alpha and
pooling in the file's metadata (``data/SOURCES.md``).

:class:`OrderReader` merges ``W + (alpha / r) B A`` into a *copy* of the reference model (the model
that fluency reads stays as it was) and scores an order, the token ids of ``LM_START`` and its
sentences, as ``head . [h_last ; mean_t h_t]`` over the decoder's final normalised hidden states of the
first ``max_tokens`` tokens. A score means nothing alone: ``LMCoherence`` compares it with the scores of
other orders of the same sentences.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from resonance_os.quality.reference_lm import length_batches

READER_FILE = "data/order_reader.safetensors"
LORA_A, LORA_B = ".lora_A", ".lora_B"


class OrderReaderError(ValueError):
    """The reader's weights cannot be read or do not fit the model they are merged into."""


def default_reader_path() -> Path:
    """The shipped reader, ``quality/data/order_reader.safetensors``."""
    return Path(str(files("resonance_os.quality").joinpath(READER_FILE)))


class OrderReader:
    """Scores of orders of sentences under the trained reader (see the module docstring).

    Args:
        model: the reference ``LlamaForCausalLM`` (copied, never changed).
        path: the reader's safetensors file (default: the shipped one).
    """

    def __init__(self, model, path: str | Path | None = None) -> None:
        import torch
        from safetensors import SafetensorError, safe_open

        path = Path(path) if path is not None else default_reader_path()
        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {key: f.get_tensor(key) for key in f.keys()}  # noqa: SIM118 (safe_open has no iterator)
            scale = float(meta["alpha"]) / int(meta["rank"])
            self.max_tokens = int(meta["max_tokens"])
            weight, bias = tensors.pop("head.weight").float(), tensors.pop("head.bias").float()
        except (SafetensorError, OSError, KeyError, ValueError) as exc:
            raise OrderReaderError(
                f"cannot read the order reader {path}: {exc}; rebuild it with scripts/train_order_reader.py"
            ) from exc
        reader = copy.deepcopy(model).float().eval()
        with torch.no_grad():
            for key in sorted(k for k in tensors if k.endswith(LORA_A)):
                where = key.removesuffix(LORA_A)
                a, b = tensors[key].float(), tensors.get(where + LORA_B)
                try:
                    layer = reader.get_submodule(where)
                except AttributeError:
                    raise OrderReaderError(f"{path} adapts {where!r}, which this model lacks") from None
                if b is None or layer.weight.shape != (b.shape[0], a.shape[1]):
                    raise OrderReaderError(f"{path}: the factors of {where!r} do not fit this model")
                layer.weight += scale * (b.float() @ a)
        hidden = reader.config.hidden_size
        if weight.shape != (1, 2 * hidden):
            raise OrderReaderError(
                f"{path}: the head reads {weight.shape[1]} features, this model gives {2 * hidden}"
            )
        self.model, self.weight, self.bias = reader, weight[0], float(bias[0])

    def scores(self, sequences: Sequence[Sequence[int]], batch_size: int = 16) -> list[float]:
        """The reader's score of each token-id sequence (``LM_START`` then the sentences), batched by
        length; padding never changes a score."""
        import torch

        seqs = [list(s[: self.max_tokens]) for s in sequences]
        out = [0.0] * len(seqs)
        for chunk, ids, mask in length_batches(self.model, seqs, batch_size):
            with torch.inference_mode():
                h = self.model.model(input_ids=ids, attention_mask=mask).last_hidden_state.float().cpu()
            mask = mask.cpu()
            lengths = mask.sum(1)
            last = h[torch.arange(len(chunk)), lengths - 1]
            mean = (h * mask[..., None]).sum(1) / lengths[:, None]
            values = torch.cat([last, mean], -1) @ self.weight + self.bias
            for row, i in enumerate(chunk):
                out[i] = float(values[row])
        return out
