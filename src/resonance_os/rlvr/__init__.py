"""RLVR runs: GRPO-family training on programming problems with sandbox rewards, pass@k held out.

Joins ``llm`` (policy, GRPO, pass@k) and ``verify`` (problems, sandbox, ``CodeReward``); see docs/verify.md.
"""

from __future__ import annotations

from resonance_os.rlvr.run import (
    RLVRConfig,
    RLVRResult,
    RLVRTask,
    load_problem_set,
    problem_prompts,
    run_rlvr,
)

__all__ = ["RLVRConfig", "RLVRResult", "RLVRTask", "load_problem_set", "problem_prompts", "run_rlvr"]
