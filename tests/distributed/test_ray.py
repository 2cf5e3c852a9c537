"""The RLVR pipeline on Ray actors: a local Ray instance started by the test, the same run as locally.

Ray is the optional ``ray`` extra; the test skips without it. Token authentication is on (a token
made for the test, nothing written to ~/.ray) and Ray's temporary files stay in the test's folder.
Ray reads its authentication settings when it is first imported, so it is imported only once the
test has set them.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from pathlib import Path

import pytest

pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.distributed import LocalProcesses, RayCluster  # noqa: E402
from resonance_os.llm.grpo import GRPOConfig  # noqa: E402
from resonance_os.llm.pipeline import AsyncGRPO  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.rlvr import RLVRConfig, run_rlvr  # noqa: E402
from resonance_os.verify import CodeReward, SandboxLimits, builtin_problems  # noqa: E402
from resonance_os.verify.remote_pool import RemoteVerifierPool  # noqa: E402
from resonance_os.verify.sandbox import processes_of  # noqa: E402

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason="Ray is the optional extra: pip install -e '.[ray]'"
    ),
    pytest.mark.slow,  # starting Ray and its workers takes 10-30 s here
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox starts as root"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]
UIDS = range(62_200, 62_216)
TIMING = ("time_", "tokens_per_second", "generator_busy_fraction")


def tiny_policy() -> LMPolicy:
    tokenizer = make_tokenizer()
    return LMPolicy(
        tokenizer, make_model(len(tokenizer), context=256), PolicyConfig(lora_rank=4, lora_alpha=8)
    )


def run_pipeline(placement) -> tuple[list[dict], list[str]]:
    """Three steps of AsyncGRPO (one batch in flight) with sandbox rewards, every worker an actor."""
    problems = builtin_problems()
    policy = tiny_policy()
    config = GRPOConfig(
        group_size=2, prompts_per_step=2, max_new_tokens=16, learning_rate=1e-3, chat_template=False, seed=0
    )
    pool = RemoteVerifierPool(
        placement,
        actors=1,
        workers=2,
        limits=SandboxLimits(wall_seconds=10.0),
        first_uid=UIDS[0],
        uid_count=16,
    )
    reward = CodeReward(pool, problems)
    with (
        pool,
        AsyncGRPO(policy, reward, [p.prompt for p in problems], config, placement=placement) as trainer,
    ):
        trainer.learn(3)
    rows = [{k: v for k, v in row.items() if not k.startswith(TIMING)} for row in trainer.history]
    return rows, [verdict.outcome.value for verdict in reward.last_verdicts]


def test_the_pipeline_runs_on_ray_actors_as_it_does_on_local_processes(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(16))
    temp = tmp_path_factory.mktemp("ray")  # short: Ray's socket paths live below it
    cluster = RayCluster("local", _temp_dir=str(temp), num_cpus=4, include_dashboard=False)
    try:
        import ray

        assert ray.is_initialized() and cluster.description == "Ray actors (local)"
        on_ray, outcomes = run_pipeline(cluster)
        rlvr = run_rlvr(
            tiny_policy(),
            GRPOConfig(group_size=2, prompts_per_step=2, max_new_tokens=16, chat_template=False, seed=0),
            RLVRConfig(source="builtin", heldout=2, eval_samples=1, eval_ks=[1], workers=2),
            steps=2,
            placement=cluster,
        )
    finally:
        cluster.close()
    assert not ray.is_initialized()

    local = LocalProcesses()
    try:
        on_local, _ = run_pipeline(local)
    finally:
        local.close()

    assert [row["policy_lag"] for row in on_ray] == [0.0, 1.0, 1.0]
    assert rlvr.pipeline == "AsyncGRPO, max_policy_lag 1, on Ray actors (local)"
    assert [row["policy_lag"] for row in rlvr.history] == [0.0, 1.0] and rlvr.after.samples == 1
    assert set(outcomes) <= {"wrong_answer", "runtime_error"}  # the tiny model's programs ran, and failed
    assert on_ray == on_local  # same seed, same run, wherever the workers ran
    assert processes_of(UIDS) == []
    assert any(temp.rglob("session_*")) and not Path.home().joinpath(".ray", "auth_token").exists()
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and str(temp) in _cmdline(pid)]
    assert leftovers == []  # Ray's own processes ended with the cluster


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""
