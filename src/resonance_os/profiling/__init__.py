"""Profiling: measure the Human Resonance Vector (HRV) of English text.

``HRVExtractor().extract(text)`` returns 8 floats in [0, 1] in ``HRV_DIMENSIONS`` order;
``analyze(text)`` adds per-dimension evidence. Definitions of every dimension: ``docs/hrv.md``.
"""

from importlib import resources

from resonance_os.profiling.hrv_extractor import HRVAnalysis, HRVExtractor


def sample_article() -> str:
    """The ~200-word sample article shipped with the package (``data/sample_article.txt``)."""
    return resources.files(__name__).joinpath("data/sample_article.txt").read_text("utf-8")


__all__ = ["HRVAnalysis", "HRVExtractor", "sample_article"]
