"""Generation: write text toward a target HRV (planner -> sentences -> refiner, scored by the HRF model)."""

from resonance_os.generation.hrf_model import HRFModel
from resonance_os.generation.human_resonant_writer import Article, HumanResonantWriter
from resonance_os.generation.planner_layer import Outline, PlannerLayer
from resonance_os.generation.refiner_layer import RefinementResult, RefinerLayer
from resonance_os.generation.sentence_layer import SentenceLayer

__all__ = [
    "Article",
    "HRFModel",
    "HumanResonantWriter",
    "Outline",
    "PlannerLayer",
    "RefinementResult",
    "RefinerLayer",
    "SentenceLayer",
]
