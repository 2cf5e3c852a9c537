"""Verifiable rewards: run untrusted Python against test cases in a sandbox and score it.

``Sandbox`` (isolated, unprivileged, limited execution), ``Problem`` with stdin/stdout or assert
tests (``load_problems`` for TACO/LiveCodeBench-like JSONL, ``load_humaneval`` for HumanEval),
``verify_rollout`` (hardest tests first, stop at the first failure, reward +1/-1) and
``VerifierPool`` (many rollouts at once), ``RemoteVerifierPool`` (sandbox pools as actors: local
processes or Ray), ``CodeReward`` (a pool as a GRPO reward callable). Imports ``core`` and
``distributed`` only; see docs/verify.md.
"""

from __future__ import annotations

from resonance_os.verify.errors import ProblemFormatError, SandboxUnavailableError, VerifyError
from resonance_os.verify.humaneval import load_completions, load_humaneval
from resonance_os.verify.outcomes import Outcome
from resonance_os.verify.pool import VerifierPool
from resonance_os.verify.problems import (
    AssertTest,
    Problem,
    StdioTest,
    builtin_problems,
    load_problems,
    problem_from_test_file,
    split_problems,
)
from resonance_os.verify.remote_pool import RemoteVerifierPool
from resonance_os.verify.reward import CodeReward, extract_program
from resonance_os.verify.rollout import TestDifficulty, Verdict, verify_rollout
from resonance_os.verify.sandbox import CallTests, Execution, Sandbox, SandboxLimits

__all__ = [
    "AssertTest",
    "CallTests",
    "CodeReward",
    "Execution",
    "Outcome",
    "Problem",
    "RemoteVerifierPool",
    "ProblemFormatError",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailableError",
    "StdioTest",
    "TestDifficulty",
    "Verdict",
    "VerifierPool",
    "VerifyError",
    "builtin_problems",
    "extract_program",
    "load_completions",
    "load_humaneval",
    "load_problems",
    "problem_from_test_file",
    "split_problems",
    "verify_rollout",
]
