"""DDIM sampling with eta = 1 and the log-probability of every denoising step (the MDP of DDPO).

Each DDIM step from timestep ``t`` to ``prev = t - T / num_steps`` (clamped at 0) is a Gaussian policy::

    x0_hat   = (x_t - sqrt(1 - a_t) * eps) / sqrt(a_t)                  (clipped to [-1, 1])
    sigma_t  = eta * sqrt((1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev))
    mean     = sqrt(a_prev) * x0_hat + sqrt(1 - a_prev - sigma_t^2) * eps
    x_prev   ~ N(mean, sigma_t^2 I)
    log pi   = mean over pixels of [-(x_prev - mean)^2 / (2 sigma_t^2) - log sigma_t - log sqrt(2 pi)]

where ``a`` is the cumulative product of (1 - beta) of a linear DDPM schedule and ``eps`` is the
classifier-free-guided noise prediction ``eps_u + w (eps_c - eps_u)``. The log-density is averaged
over dimensions as ddpo-pytorch does, so the policy ratio stays near 1 and a clip range of 1e-4 is
meaningful. Re-evaluating a stored trajectory under unchanged weights gives the same log-probs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from resonance_os.diffusion.unet import ConditionalUNet

NUM_TRAIN_TIMESTEPS = 1000
_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def linear_alphas_cumprod(num_train_timesteps: int = NUM_TRAIN_TIMESTEPS) -> torch.Tensor:
    """Cumulative products ``a_t`` of the DDPM linear schedule (beta from 1e-4 to 0.02)."""
    betas = torch.linspace(1e-4, 0.02, num_train_timesteps, dtype=torch.float64)
    return torch.cumprod(1.0 - betas, dim=0).float()


def ddim_timesteps(num_steps: int, num_train_timesteps: int = NUM_TRAIN_TIMESTEPS) -> torch.Tensor:
    """Descending DDIM timesteps with "leading" spacing and offset 1, e.g. 10 steps: 901, 801, ..., 1."""
    ratio = num_train_timesteps // num_steps
    return torch.arange(num_steps - 1, -1, -1, dtype=torch.long) * ratio + 1


def guided_eps(
    unet: ConditionalUNet,
    x: torch.Tensor,
    timesteps: torch.Tensor,
    labels: torch.Tensor,
    guidance_scale: float,
) -> torch.Tensor:
    """Classifier-free-guided noise prediction for timesteps (B,); both branches run as one forward pass.

    ``guidance_scale == 1`` is the plain conditional model and needs a single branch.
    """
    if guidance_scale == 1.0:
        return unet(x, timesteps, labels)
    null = torch.full_like(labels, unet.null_label)
    eps = unet(torch.cat([x, x]), torch.cat([timesteps, timesteps]), torch.cat([null, labels]))
    eps_uncond, eps_cond = eps.chunk(2)
    return eps_uncond + guidance_scale * (eps_cond - eps_uncond)


def _alphas_of_step(
    t: torch.Tensor, alphas_cumprod: torch.Tensor, num_steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a_t, a_prev)`` shaped (B, 1, 1, 1) for DDIM timesteps ``t`` (B,), the previous one clamped at 0."""
    prev_t = (t - alphas_cumprod.shape[0] // num_steps).clamp(min=0)
    return alphas_cumprod[t].view(-1, 1, 1, 1), alphas_cumprod[prev_t].view(-1, 1, 1, 1)


def policy_std(
    t: torch.Tensor, alphas_cumprod: torch.Tensor, num_steps: int, *, eta: float = 1.0
) -> torch.Tensor:
    """The standard deviation sigma_t of the DDIM step leaving timesteps ``t`` (B,), shaped (B, 1, 1, 1)."""
    a_t, a_prev = _alphas_of_step(t, alphas_cumprod, num_steps)
    return eta * ((1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev)).sqrt()


def ddim_step_with_logprob(
    eps: torch.Tensor,
    t: torch.Tensor,
    x_t: torch.Tensor,
    alphas_cumprod: torch.Tensor,
    num_steps: int,
    *,
    eta: float = 1.0,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One DDIM step ``x_t -> x_prev`` for timesteps ``t`` of shape (B,); returns ``(x_prev, log_prob)``.

    ``log_prob`` has shape (B,). Pass ``prev_sample`` to score a stored transition instead of drawing one.
    """
    a_t, a_prev = _alphas_of_step(t, alphas_cumprod, num_steps)
    x0_hat = ((x_t - (1 - a_t).sqrt() * eps) / a_t.sqrt()).clamp(-1.0, 1.0)
    std = policy_std(t, alphas_cumprod, num_steps, eta=eta)
    mean = a_prev.sqrt() * x0_hat + (1 - a_prev - std**2).clamp(min=0).sqrt() * eps
    if prev_sample is None:
        noise = torch.randn(x_t.shape, generator=generator, dtype=x_t.dtype)
        prev_sample = mean + std * noise
    log_prob = -((prev_sample.detach() - mean) ** 2) / (2 * std**2) - torch.log(std) - _LOG_SQRT_2PI
    return prev_sample, log_prob.mean(dim=tuple(range(1, log_prob.dim())))


@dataclass
class Trajectory:
    """A batch of denoising chains.

    latents: (B, S + 1, C, H, W), x_T first and the final sample x_0 last.
    log_probs: (B, S) log pi of each step under the sampling weights.
    timesteps: (S,) the DDIM timesteps, descending.
    labels: (B,) the class each chain was conditioned on (the "prompt").
    """

    latents: torch.Tensor
    log_probs: torch.Tensor
    timesteps: torch.Tensor
    labels: torch.Tensor

    @property
    def images(self) -> torch.Tensor:
        """Final samples, (B, C, H, W) in [-1, 1]."""
        return self.latents[:, -1].clamp(-1.0, 1.0)


@torch.inference_mode()
def sample_with_logprob(
    unet: ConditionalUNet,
    labels: torch.Tensor,
    *,
    num_steps: int = 10,
    guidance_scale: float = 3.0,
    eta: float = 1.0,
    generator: torch.Generator | None = None,
    alphas_cumprod: torch.Tensor | None = None,
) -> Trajectory:
    """Sample one chain per label with DDIM and record every step's latent and log-probability."""
    alphas = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod
    cfg = unet.config
    x = torch.randn((labels.shape[0], cfg.in_channels, cfg.image_size, cfg.image_size), generator=generator)
    timesteps = ddim_timesteps(num_steps, alphas.shape[0])
    latents, log_probs = [x], []
    for t in timesteps:
        batch_t = t.expand(labels.shape[0])
        eps = guided_eps(unet, x, batch_t, labels, guidance_scale)
        x, log_prob = ddim_step_with_logprob(eps, batch_t, x, alphas, num_steps, eta=eta, generator=generator)
        latents.append(x)
        log_probs.append(log_prob)
    return Trajectory(torch.stack(latents, dim=1), torch.stack(log_probs, dim=1), timesteps, labels.clone())


def trajectory_log_prob(
    unet: ConditionalUNet,
    trajectory: Trajectory,
    steps: torch.Tensor,
    *,
    num_steps: int,
    guidance_scale: float,
    eta: float = 1.0,
    alphas_cumprod: torch.Tensor | None = None,
    index: torch.Tensor | None = None,
) -> torch.Tensor:
    """log pi(x_{s+1} | x_s) of stored chains under the current weights (differentiable), shape (B,).

    ``index`` (B,) selects chains (a minibatch; default all) and ``steps`` (B,) the step of each.
    """
    alphas = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod
    rows = torch.arange(trajectory.labels.shape[0]) if index is None else index
    x_t = trajectory.latents[rows, steps]
    t = trajectory.timesteps[steps]
    eps = guided_eps(unet, x_t, t, trajectory.labels[rows], guidance_scale)
    _, log_prob = ddim_step_with_logprob(
        eps, t, x_t, alphas, num_steps, eta=eta, prev_sample=trajectory.latents[rows, steps + 1]
    )
    return log_prob
