"""Diffusion models fine-tuned with RL: DDIM sampling with per-step log-probs, DDPO (SF, IS), RWR, image rewards.

Modules: ``unet`` (the class-conditional noise predictor), ``ddim`` (sampling and log-probs),
``pretrain`` (DDPM pretraining on the digits and the on-disk cache), ``rewards`` (JPEG sizes and
the classifier reward), ``stat_tracker``, ``ddpo`` (the trainer), ``grid`` (PNG sample grids).
"""

from resonance_os.diffusion.ddim import Trajectory, sample_with_logprob, trajectory_log_prob
from resonance_os.diffusion.ddpo import DDPO, DDPOConfig
from resonance_os.diffusion.pretrain import PretrainConfig, load_pretrained
from resonance_os.diffusion.rewards import REWARD_NAMES, make_reward
from resonance_os.diffusion.unet import ConditionalUNet, UNetConfig

__all__ = [
    "DDPO",
    "REWARD_NAMES",
    "ConditionalUNet",
    "DDPOConfig",
    "PretrainConfig",
    "Trajectory",
    "UNetConfig",
    "load_pretrained",
    "make_reward",
    "sample_with_logprob",
    "trajectory_log_prob",
]
