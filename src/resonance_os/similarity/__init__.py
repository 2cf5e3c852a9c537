"""Compare HRVs (similarity in [0, 1] by several methods) and watch a stream of them for drift."""

from resonance_os.similarity.drift import (
    AdaptiveDriftDetector,
    DriftAnalysis,
    DriftDetector,
    DriftFeedback,
    DriftPrediction,
)
from resonance_os.similarity.metrics import (
    MultiMethodResult,
    MultiMethodSimilarity,
    SimilarityCalculator,
    SimilarityMethod,
)

__all__ = [
    "AdaptiveDriftDetector",
    "DriftAnalysis",
    "DriftDetector",
    "DriftFeedback",
    "DriftPrediction",
    "MultiMethodResult",
    "MultiMethodSimilarity",
    "SimilarityCalculator",
    "SimilarityMethod",
]
