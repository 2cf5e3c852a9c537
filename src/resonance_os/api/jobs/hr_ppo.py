"""PPO training toward a tenant's target (run in a job worker) and generation steered by the result.

Both sit on ``resonance_os.evolution.hr_rl_trainer`` (``HRWritingEnv``, ``train_hr_ppo``) and
``resonance_os.evolution.hr_policy`` (run folders: ``save_run``); where those modules are missing, ``/v1/train`` and ``policy`` in ``/v1/generate`` answer 503 instead of pretending.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resonance_os.api.jobs import policies
from resonance_os.api.jobs.report import JobReport, TrainingResult
from resonance_os.api.jobs.serving_gate import request_yield_from_env
from resonance_os.api.persistence import feedback
from resonance_os.core.errors import ResonanceError
from resonance_os.rl import resume
from resonance_os.rl.resume import ResumeHooks
from resonance_os.rl.run import Run, is_run, open_run

if TYPE_CHECKING:
    import gymnasium as gym

    from resonance_os.generation.human_resonant_writer import Article
    from resonance_os.rl.algorithms.ppo import PPO

TRAINING_MODULE = "resonance_os.evolution.hr_rl_trainer"
POLICY_MODULE = "resonance_os.evolution.hr_policy"
PROFILE_POLICY_TRAINER = "hr_ppo"
"""The name of :func:`train_profile_policy` in ``api.jobs.trainers``."""
JOB_RUN = "run"
"""The job's run folder inside its work folder (``rl.run``)."""


class TrainingUnavailableError(ResonanceError):
    """This installation cannot train or run policies (a module it needs is missing)."""

    http_status = 503


PPO_UPDATE_STEPS = 2048
"""Timesteps per update of the writing-policy trainer (PPO's rollout, ``n_steps`` of
``rl.algorithms.ppo.PPOConfig``, which the writing policy's configuration keeps; tests check they
agree). It trains whole updates, one learning-curve point each, so ``/v1/train`` rounds a request up
to whole updates and the Train screen asks for multiples."""


def _hr_modules():
    """``(hr_rl_trainer, hr_policy)``, or ``TrainingUnavailableError`` when this installation lacks them."""
    try:
        import resonance_os.evolution.hr_policy as hr_policy
        import resonance_os.evolution.hr_rl_trainer as hr_rl_trainer
    except ModuleNotFoundError as exc:
        raise TrainingUnavailableError(f"training is not available in this installation: {exc}") from None
    return hr_rl_trainer, hr_policy


def train_profile_policy(params: dict, report: JobReport) -> TrainingResult:
    """Train PPO on ``HRWritingEnv`` toward ``params["target_hrv"]`` (runs in a job worker).

    params: ``target_hrv`` (8 floats), ``timesteps``, ``seed``, ``reward_model_version`` (the tenant's
    reward model blended into the env's reward, or ``None``), ``reward`` (the writing reward, ``"fast"``
    or ``"lm"``; absent in jobs queued before it: ``"fast"``). Checkpoints and resumes through
    :func:`learn_resumable`: an attempt that continues a checkpoint observes what the checkpoint's
    policy observed (the run's ``observation``, not today's default). Progress comes from the run's
    metrics log; the result carries the final metrics and the run folder (``hr_policy.save_run``: an
    ``rl.run`` run of kind ``hr_ppo``) as a zip.
    """
    hr, hr_policy = _hr_modules()
    reward_model = None
    if params.get("reward_model_version") is not None:
        reward_model = feedback.load_version(report.db, report.tenant_id, params["reward_model_version"])
    options: dict[str, Any] = {"reward": params.get("reward")}
    earlier = _earlier_run(report.work_dir)
    if earlier is not None and earlier.has_checkpoint:
        options["observation"] = hr_policy.run_observation(earlier)
    env = hr.HRWritingEnv(
        target_hrv=params["target_hrv"], reward_model=reward_model, seed=params["seed"], **options
    )
    config = hr.hr_ppo_config(None, params["seed"])
    model = learn_resumable(
        env, config, int(params["timesteps"]), report, kind=hr_policy.KIND, task=env.settings()
    )
    rows = job_run(report.work_dir, hr_policy.KIND, config={}).metrics()  # every attempt's rows
    run_dir = hr_policy.save_run(model, env, report.work_dir / JOB_RUN)
    final = rows[-1] if rows else {}
    return TrainingResult(metrics=final, artifact=policies.pack(run_dir))


def learn_resumable(
    env: gym.Env,
    config: dict[str, Any],
    total: int,
    report: JobReport,
    pause: Callable[..., None] | None = None,
    kind: str = "ppo",
    task: dict[str, Any] | None = None,
) -> PPO:
    """PPO trained on ``env`` until ``total`` timesteps in the job's run folder, surviving a killed
    worker (``rl.resume.learn_resumable``).

    The run is ``report.work_dir/run`` (``rl.run``, of ``kind``, with ``task`` as its task; a work
    folder an older build left, ``checkpoint/`` + ``logs/``, is continued in place). It starts from
    the run's checkpoint when an earlier attempt left one (``report.resumed``), else from a new
    ``PPO("MlpPolicy", env, **config)``, and saves the checkpoint every ``report.checkpoint_every``
    updates (``report.checkpointed``). The run's metrics become the job's progress and learning curve.
    ``pause`` is called before every env step and every optimiser step (default: the launching server's
    :class:`~resonance_os.api.jobs.serving_gate.RequestYield`, when it named one).
    """
    from resonance_os.rl.algorithms.ppo import PPO

    pause = pause or request_yield_from_env()
    if pause is not None:
        env = _yielding(env, pause)
    run = job_run(report.work_dir, kind, config={"algorithm": "PPO", "ppo": config}, task=task)
    log_dir = run.metrics_path.parent

    def ready(model: PPO) -> PPO:
        if pause is not None:
            model.optimizer.register_step_pre_hook(pause)
        return model

    def progress(fraction: float, rows: list[dict], final: bool) -> None:
        report.progress(fraction, rows[-1], curve=rows, force=final)

    hooks = ResumeHooks(report.checkpoint_every, report.resumed, report.checkpointed, progress)
    return resume.learn_resumable(
        run,
        total,
        build=lambda: ready(PPO("MlpPolicy", env, log_dir=log_dir, **config)),
        load=lambda path: ready(PPO.load(path, env=env, log_dir=log_dir)),
        hooks=hooks,
    )


def job_run(work_dir: Path, kind: str, config: dict[str, Any], task: dict[str, Any] | None = None) -> Run:
    """The training run of a job's work folder: ``work_dir/run``, created on the first attempt; a
    work folder an older build checkpointed into (``checkpoint/`` + ``logs/``) is that run itself."""
    if is_run(work_dir):
        return open_run(work_dir)
    return Run.create(work_dir / JOB_RUN, kind, config=config, task=task, exist_ok=True)


def _earlier_run(work_dir: Path) -> Run | None:
    """The run an earlier attempt of the job left in ``work_dir`` (either shape), or None."""
    for folder in (work_dir, work_dir / JOB_RUN):
        if is_run(folder):
            return open_run(folder)
    return None


train_profile_policy.requires = (TRAINING_MODULE, POLICY_MODULE)
train_profile_policy.update_steps = PPO_UPDATE_STEPS


def _yielding(env: gym.Env, pause: Callable[..., None]) -> gym.Env:
    """``env`` whose every step first waits for the server's requests in flight (``serving_gate``)."""
    import gymnasium

    class YieldToRequests(gymnasium.Wrapper):
        def step(self, action):
            pause()
            return self.env.step(action)

    return YieldToRequests(env)


_runs: dict[str, tuple[object, object, threading.Lock]] = {}
_runs_lock = threading.Lock()


def _load_run(folder: Path, reward_model: Callable[[], object]):
    """(model, env, lock) for an unpacked run folder, built once per process with the job's reward model
    (``reward_model()``, called only then) in the env, so drafts are judged as in training; callers hold
    the lock while the env writes."""
    with _runs_lock:
        run = _runs.get(str(folder))
        if run is None:
            model, env = _hr_modules()[1].load_run(folder, reward_model=reward_model())
            run = _runs[str(folder)] = (model, env, threading.Lock())
        return run


def generate_with_policy(
    service,
    folder: Path,
    prompt: str,
    target: list[float],
    paragraphs: int,
    seed: int | None,
    reward_model=None,
    between_paragraphs: Callable[[], None] | None = None,
) -> Article:
    """Write ``paragraphs`` paragraphs about ``prompt`` toward ``target`` as ``resonance generate
    --policy`` does (``hr_policy.write_with_policy``): the service's writer drafts each paragraph and
    the run's policy revises it in the run's env, keeping the revision the env scores highest (the
    writing reward, blended with the job's reward model when it had one). ``between_paragraphs`` is
    the writer's hook, called before every paragraph after the first."""
    model, env, lock = _load_run(folder, reward_model)
    write_with_policy = _hr_modules()[1].write_with_policy
    with lock, service.writer_lock:
        return write_with_policy(
            (model, env),
            prompt,
            target_hrv=target,
            num_paragraphs=paragraphs,
            seed=seed,
            writer=service.writer,
            between_paragraphs=between_paragraphs,
        )


generate_with_policy.requires = (TRAINING_MODULE, POLICY_MODULE)
