"""RemoteVerifierPool: sandbox pools in worker processes, behind the surface CodeReward uses."""

from __future__ import annotations

import os

import pytest
from sandbox_checks import FIRST_UID, SHORT, UID_COUNT

from resonance_os.distributed import LocalProcesses
from resonance_os.verify import CodeReward, Outcome, builtin_problems
from resonance_os.verify.remote_pool import RemoteVerifierPool
from resonance_os.verify.sandbox import processes_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox starts as root")


def test_two_actors_verify_a_batch_and_leave_nothing_behind():
    problems = builtin_problems()
    rollouts = [(p, p.solution) for p in problems] + [(p, "print('no')\n") for p in problems]
    placement = LocalProcesses()
    try:
        pool = RemoteVerifierPool(
            placement, actors=2, workers=2, limits=SHORT, first_uid=FIRST_UID, uid_count=UID_COUNT
        )
        verdicts = pool.verify(rollouts)
        assert [v.outcome for v in verdicts] == [Outcome.PASSED] * 8 + [Outcome.WRONG_ANSWER] * 8
        assert [v.reward for v in verdicts] == [1.0] * 8 + [-1.0] * 8
        assert pool.busy_seconds > 0 and pool.workers == 4
        reward = CodeReward(pool, problems)
        prompts = [problems[0].prompt, problems[1].prompt]
        assert reward(prompts, [f"```python\n{problems[0].solution}```", "print(1)"]) == [1.0, -1.0]
    finally:
        placement.close()
    assert processes_of(range(FIRST_UID, FIRST_UID + UID_COUNT)) == []
