"""Why DDPO trains only the denoising steps with enough policy noise (``DDPOConfig.min_policy_std``).

On the pretrained 16x16 digits DDPM, for each of the 10 DDIM steps, prints side by side with
ddpo-pytorch's setting (Stable Diffusion's scaled-linear schedule, 50 steps) where it applies:

- sigma_t, the std of the step's Gaussian policy, and |d mean / d eps| / sigma_t, how far a change
  in the noise prediction moves the policy mean in units of its std;
- the norm of the gradient of mean_i(A_i * log pi(x_{t-1} | x_t)) over 64 chains, compressibility
  advantages (the score-function term each step contributes);
- the median |log ratio| of each step after one AdamW step (lr 1e-4, gradient norm clipped to 1),
  taken on every step (as before the floor) or on the steps with sigma_t >= 0.05 only (the
  default), and for the latter the share of chains whose ratio is past the clip ranges 1e-4 and 1e-3.

    .venv/bin/python benchmarks/ddpo_step_gradients.py
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from resonance_os.diffusion.ddim import ddim_timesteps, linear_alphas_cumprod, policy_std, trajectory_log_prob
from resonance_os.diffusion.ddpo import DDPO, DDPOConfig
from resonance_os.diffusion.pretrain import load_pretrained
from resonance_os.diffusion.rewards import make_reward

CHAINS = 64
STEPS = 10


def mean_sensitivity(alphas: torch.Tensor, num_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(sigma_t, |d mean / d eps| / sigma_t) of each DDIM step, ignoring the x0 clip."""
    t = ddim_timesteps(num_steps, alphas.shape[0])
    prev = (t - alphas.shape[0] // num_steps).clamp(min=0)
    a_t, a_prev = alphas[t].double(), alphas[prev].double()
    std = policy_std(t, alphas.double(), num_steps).flatten()
    slope = -(a_prev.sqrt() * (1 - a_t).sqrt() / a_t.sqrt()) + (1 - a_prev - std**2).clamp(min=0).sqrt()
    return std.numpy(), (slope.abs() / std).numpy()


def stable_diffusion_alphas() -> torch.Tensor:
    """Stable Diffusion's scaled-linear schedule (beta from 8.5e-4 to 1.2e-2 on a sqrt scale)."""
    betas = torch.linspace(0.00085**0.5, 0.012**0.5, 1000, dtype=torch.float64) ** 2
    return torch.cumprod(1 - betas, dim=0)


def main() -> None:
    torch.set_num_threads(1)
    models = load_pretrained(on_progress=print)
    reward_fn = make_reward("compressibility")
    trainer = DDPO(copy.deepcopy(models.unet), reward_fn, DDPOConfig(num_steps=STEPS))
    labels = torch.arange(CHAINS) % 10
    trajectory = trainer.sample(labels, seed=0)
    rewards = reward_fn(trajectory.images, labels)
    advantages = torch.as_tensor((rewards - rewards.mean()) / rewards.std(), dtype=torch.float32)
    alphas = linear_alphas_cumprod()
    settings = {"num_steps": STEPS, "guidance_scale": trainer.config.guidance_scale, "alphas_cumprod": alphas}

    def log_probs(unet, step: int) -> torch.Tensor:
        return trajectory_log_prob(unet, trajectory, torch.full((CHAINS,), step), **settings)

    gradient_norms = []
    for step in range(STEPS):
        trainer.unet.zero_grad()
        (advantages * log_probs(trainer.unet, step)).mean().backward()
        gradient_norms.append(torch.sqrt(sum((p.grad**2).sum() for p in trainer.unet.parameters())).item())

    ours_std, ours_sens = mean_sensitivity(alphas, STEPS)

    def log_ratios_after_one_step(trained: list[int]) -> list[torch.Tensor]:
        unet = copy.deepcopy(models.unet)
        optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4, weight_decay=0.0)
        for step in trained:
            (-(advantages * log_probs(unet, step)).mean() / len(trained)).backward()
        torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
        optimizer.step()
        with torch.no_grad():
            return [(log_probs(unet, step) - trajectory.log_probs[:, step]).abs() for step in range(STEPS)]

    every_step = log_ratios_after_one_step(list(range(STEPS)))
    floored = log_ratios_after_one_step([s for s in range(STEPS) if ours_std[s] >= 0.05])
    sd_std, sd_sens = mean_sensitivity(stable_diffusion_alphas().float(), 50)
    print(
        f"ddpo-pytorch (Stable Diffusion schedule, 50 steps), last three steps: sigma_t {np.round(sd_std[-3:], 3)}"
    )
    print(f"  |d mean/d eps|/sigma_t {np.round(sd_sens[-3:], 2)}")
    header = f"{'step':<12}{'sigma_t':>9}{'|dmean/deps|/sigma':>20}{'|grad A logp|':>15}"
    print(f"\nours: 10 DDIM steps, linear schedule, {CHAINS} chains, compressibility advantages")
    print(f"{header}{'|log ratio|: all':>18}{'floored':>10}{'> 1e-4':>8}{'> 1e-3':>8}")
    timesteps = ddim_timesteps(STEPS)
    for step in range(STEPS):
        t = int(timesteps[step])
        ratio = floored[step]
        print(
            f"{f'{t} -> {max(t - 100, 0)}':<12}{ours_std[step]:>9.3f}{ours_sens[step]:>20.2f}"
            f"{gradient_norms[step]:>15.3f}{every_step[step].median().item():>18.1e}{ratio.median().item():>10.1e}"
            f"{(ratio > 1e-4).float().mean().item():>8.2f}{(ratio > 1e-3).float().mean().item():>8.2f}"
        )
    others = np.median([gradient_norms[s] for s in range(STEPS) if ours_std[s] >= 0.05])
    print(
        f"gradient norm of the two steps with sigma_t < 0.05 / median of the others: "
        f"{gradient_norms[-2] / others:.1f}x, {gradient_norms[-1] / others:.1f}x"
    )


if __name__ == "__main__":
    main()
