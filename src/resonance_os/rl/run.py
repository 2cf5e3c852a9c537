"""Training runs on disk: one folder shape for every trainer, one loader for every caller.

A run folder::

    config.json    {"run_format": 1, "kind": "hr_ppo", ...}: which trainer, and its settings
    task.json      what it trains on, in the trainer's words (an env's settings, a target, a reward)
    checkpoint/    the trainer's latest ``save``: written under a temporary name, then renamed into
                   place, so a reader never sees a half-written one
    metrics.jsonl  one row per update (``rl.logger``; ``resonance plot RUN``)

:func:`open_run` is the one loader: ``resonance generate --policy``, the writing policies, the
OpenAI endpoint's adapters, API jobs and the Studio open runs through it. It reads this shape and
the four written before it (``Run.layout`` says which)::

    "hr_policy"    env.json + model/          resonance train (PPO); kind "hr_ppo", task = env.json
    "hr_grpo_run"  run.json + policy/         resonance train --method grpo; kind "hr_grpo"
    "checkpoint"   checkpoint/ + metrics.jsonl  resonance ddpo / llm / rlvr; kind from the checkpoint
    "job"          checkpoint/ + logs/        an API training job's work folder; kind from the checkpoint

Usage::

    run = Run.create("runs/a", kind="hr_ppo", config={"ppo": {...}}, task=env.settings())
    model = PPO("MlpPolicy", env, log_dir=run.path)
    model.learn(1000)
    run.save_checkpoint(model.save)
    run = open_run("runs/a")          # kind, config, task, checkpoint, metrics()
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resonance_os.rl.errors import CheckpointError
from resonance_os.rl.folders import replace_folder
from resonance_os.rl.logger import METRICS_FILE

RUN_FORMAT = 1
CONFIG_FILE, TASK_FILE, CHECKPOINT_DIR = "config.json", "task.json", "checkpoint"
CHECKPOINT_METADATA = "metadata.json"
LEGACY_ENV_FILE, LEGACY_MODEL_DIR = "env.json", "model"
LEGACY_RUN_FILE, LEGACY_POLICY_DIR = "run.json", "policy"
LEGACY_JOB_LOGS = "logs"
SHAPES = (
    f"{CONFIG_FILE} + {TASK_FILE} + {CHECKPOINT_DIR}/ (a run), {LEGACY_ENV_FILE} + {LEGACY_MODEL_DIR}/ "
    f"(an older resonance train run), {LEGACY_RUN_FILE} + {LEGACY_POLICY_DIR}/ (an older HR-GRPO run), "
    f"{CHECKPOINT_DIR}/ + {METRICS_FILE} or {LEGACY_JOB_LOGS}/ (a trainer's log folder)"
)


class RunError(CheckpointError):
    """A folder is not a training run, holds another kind of run, or has nothing to resume."""


@dataclass
class Run:
    """A training run folder, opened: what trained (``kind``, ``config``), on what (``task``), its
    checkpoint folder and its metrics log; ``layout`` names the folder shape it was read from."""

    path: Path
    kind: str
    config: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)
    checkpoint: Path | None = None
    metrics_path: Path | None = None
    layout: str = "run"

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        kind: str,
        *,
        config: dict[str, Any] | None = None,
        task: dict[str, Any] | None = None,
        exist_ok: bool = False,
        overwrite: bool = False,
    ) -> Run:
        """Start a run of ``kind`` in ``path``: ``config.json`` and ``task.json`` written atomically.

        A folder that already holds a run is refused (``RunError``: pass a new folder or resume it),
        unless ``exist_ok``, which returns that run when it is of the same ``kind``, or ``overwrite``,
        which writes the new settings over it (training again into the same folder)."""
        root = Path(path)
        if not overwrite and is_run(root):
            existing = open_run(root)
            if not exist_ok:
                raise RunError(f"{root} already holds a {existing.kind} run; pass a new folder or resume it")
            return existing.expect(kind)
        _write_json(root / CONFIG_FILE, {"run_format": RUN_FORMAT, "kind": kind, **(config or {})})
        _write_json(root / TASK_FILE, dict(task or {}))
        return open_run(root)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Run:
        """The run in ``path`` (:func:`open_run`)."""
        return open_run(path)

    @classmethod
    def resume(cls, path: str | os.PathLike[str], kind: str | None = None) -> Run:
        """The run in ``path``, which must hold a checkpoint to continue from (and be of ``kind``)."""
        run = open_run(path)
        if kind is not None:
            run.expect(kind)
        if not run.has_checkpoint:
            raise RunError(f"{run.path} has no {CHECKPOINT_DIR}/ to resume from; train into it first")
        return run

    @property
    def has_checkpoint(self) -> bool:
        return self.checkpoint is not None and self.checkpoint.is_dir()

    def expect(self, *kinds: str) -> Run:
        """This run, if its kind is one of ``kinds``; else a ``RunError`` naming both."""
        if self.kind not in kinds:
            raise RunError(
                f"{self.path} holds a {self.kind} run, not {' or '.join(kinds)}; pass a run of that kind"
            )
        return self

    def save_checkpoint(self, save: Callable[[Path], Any]) -> Path:
        """Replace the run's checkpoint with what ``save(folder)`` writes (``model.save``): into a
        temporary folder beside it, renamed into place only once ``save`` returned."""
        target = self.checkpoint or self.path / CHECKPOINT_DIR
        tmp = target.parent / f".{target.name}.new-{uuid.uuid4().hex[:8]}"
        try:
            save(tmp)
            if not tmp.is_dir():
                raise RunError(f"saving the checkpoint of {self.path} wrote no folder at {tmp}")
            replace_folder(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.checkpoint = target
        return target

    def checkpoint_metadata(self) -> dict[str, Any]:
        """The checkpoint's ``metadata.json`` (its algorithm, timesteps and spaces: ``rl/checkpoint.py``),
        or ``{}`` when the run has no checkpoint or the checkpoint no such file."""
        if not self.has_checkpoint or not (self.checkpoint / CHECKPOINT_METADATA).is_file():
            return {}
        return _read_json(self.checkpoint / CHECKPOINT_METADATA)

    def metrics(self) -> list[dict[str, Any]]:
        """Every metrics row logged so far, oldest first (a line being written right now is skipped)."""
        if self.metrics_path is None or not self.metrics_path.is_file():
            return []
        rows = []
        for line in self.metrics_path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
        return rows


def is_run(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a run of any shape :func:`open_run` reads."""
    return _layout(Path(path)) is not None


def open_run(path: str | os.PathLike[str]) -> Run:
    """The run in ``path``, in any shape written now or before (module docstring); a ``RunError``
    naming the shapes when it is none of them, or when its files are unreadable."""
    root = Path(path)
    layout = _layout(root)
    if layout is None:
        reason = "no such folder" if not root.is_dir() else "it is not a training run"
        raise RunError(f"{root}: {reason}; a run folder holds {SHAPES}")
    return _READERS[layout](root)


def list_runs(root: str | os.PathLike[str]) -> list[Run]:
    """The runs in the folders directly under ``root``, by folder name (other folders are skipped)."""
    base = Path(root)
    if not base.is_dir():
        return []
    return [open_run(child) for child in sorted(base.iterdir()) if child.is_dir() and is_run(child)]


def _layout(root: Path) -> str | None:
    if (root / CONFIG_FILE).is_file() and (root / TASK_FILE).is_file():
        return "run"
    if (root / LEGACY_ENV_FILE).is_file() and (root / LEGACY_MODEL_DIR).is_dir():
        return "hr_policy"
    if (root / LEGACY_RUN_FILE).is_file() and (root / LEGACY_POLICY_DIR).is_dir():
        return "hr_grpo_run"
    if (root / CHECKPOINT_DIR).is_dir():
        if (root / METRICS_FILE).is_file():
            return "checkpoint"
        if (root / LEGACY_JOB_LOGS).is_dir():
            return "job"
    return None


def _read_run(root: Path) -> Run:
    config = _read_json(root / CONFIG_FILE)
    kind = config.get("kind")
    if config.get("run_format") is None or not isinstance(kind, str):
        raise RunError(f"{root / CONFIG_FILE} does not name the run's kind; it is not a run's config")
    if not isinstance(config["run_format"], int) or config["run_format"] > RUN_FORMAT:
        raise RunError(
            f"{root} has run format {config['run_format']!r}; this library reads <= {RUN_FORMAT}: "
            "upgrade resonance-os"
        )
    config = {k: v for k, v in config.items() if k not in ("run_format", "kind")}
    return Run(root, kind, config, _read_json(root / TASK_FILE), root / CHECKPOINT_DIR, root / METRICS_FILE)


def _read_hr_policy(root: Path) -> Run:
    task = _read_json(root / LEGACY_ENV_FILE)
    metrics = root / METRICS_FILE
    return Run(root, "hr_ppo", {"algorithm": "PPO"}, task, root / LEGACY_MODEL_DIR, metrics, "hr_policy")


def _read_hr_grpo_run(root: Path) -> Run:
    settings = _read_json(root / LEGACY_RUN_FILE)
    task_keys = ("target_hrv", "target_source")
    config = {k: v for k, v in settings.items() if k not in task_keys}
    task = {k: settings[k] for k in task_keys if k in settings}
    policy, metrics = root / LEGACY_POLICY_DIR, root / METRICS_FILE
    return Run(root, "hr_grpo", config, task, policy, metrics, "hr_grpo_run")


def _read_trainer_log(root: Path, layout: str) -> Run:
    """A trainer's log folder (DDPO, resonance llm/rlvr) or an API job's work folder: the kind and
    config come from the checkpoint's own files."""
    checkpoint = root / CHECKPOINT_DIR
    metadata = _read_json(checkpoint / CHECKPOINT_METADATA)
    kind = str(metadata.get("trainer") or metadata.get("algorithm") or "unknown").lower()
    metrics = root / METRICS_FILE if layout == "checkpoint" else root / LEGACY_JOB_LOGS / METRICS_FILE
    return Run(root, kind, _read_json(checkpoint / "config.json"), {}, checkpoint, metrics, layout)


_READERS: dict[str, Callable[[Path], Run]] = {
    "run": _read_run,
    "hr_policy": _read_hr_policy,
    "hr_grpo_run": _read_hr_grpo_run,
    "checkpoint": lambda root: _read_trainer_log(root, "checkpoint"),
    "job": lambda root: _read_trainer_log(root, "job"),
}


def _read_json(file: Path) -> dict[str, Any]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{file} is missing; the run is incomplete: train it again") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunError(f"{file} is unreadable ({exc}); train the run again") from exc
    if not isinstance(data, dict):
        raise RunError(f"{file} must hold a JSON object; train the run again")
    return data


def _write_json(file: Path, data: dict[str, Any]) -> None:
    """``data`` into ``file`` atomically (a temporary file renamed over it)."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.parent / f".{file.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=float), encoding="utf-8")
        tmp.replace(file)
    except OSError as exc:
        raise RunError(f"cannot write {file}: {exc}; choose a writable run folder") from exc
