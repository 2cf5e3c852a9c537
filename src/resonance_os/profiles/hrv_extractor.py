"""The original ResonanceOS path of the extractor: ``from resonance_os.profiles.hrv_extractor import HRVExtractor``.

The extractor lives in :mod:`resonance_os.profiling.hrv_extractor`; this module only re-exports it.
"""

from resonance_os.profiling.hrv_extractor import HRVAnalysis, HRVExtractor

__all__ = ["HRVAnalysis", "HRVExtractor"]
