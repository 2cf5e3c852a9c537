"""The steered writing task: the batched sentence decoder, the vector env, and HR-PPO on it."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parents[1] / "generation"))

from test_llm_writing import tiny_chat_model  # noqa: E402, F401

from resonance_os.core.errors import ValidationError  # noqa: E402
from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, train_hr_ppo  # noqa: E402
from resonance_os.evolution.steered_writing import (  # noqa: E402
    SentenceDecoder,
    SteeredWritingEnv,
    SteeredWritingVectorEnv,
    evaluate_steering_policy,
    heldout_targets,
    proportional_controller,
    training_targets,
)
from resonance_os.generation.backends.local import LocalBackend  # noqa: E402
from resonance_os.generation.llm_writing import clean_reply  # noqa: E402
from resonance_os.generation.steering_directions import SteeringDirections, writing_messages  # noqa: E402
from resonance_os.quality.reward import quality_factor  # noqa: E402
from resonance_os.rl.env_check import check_env_api  # noqa: E402

STEERED = ("emotional_valence", "storytelling_index")
GREEDY = 1e-5  # a temperature at which sampling picks the likeliest token


@pytest.fixture
def chat(request):
    return request.getfixturevalue("tiny_chat_model")


def _directions(scale: float = 4.0) -> SteeringDirections:
    gen = torch.Generator().manual_seed(5)
    return SteeringDirections(
        "tiny", dict(zip(STEERED, (1, 0))), {d: scale * torch.randn(32, generator=gen) for d in STEERED}
    )


def _env(chat, num_envs=4, **kwargs) -> SteeredWritingVectorEnv:
    return SteeredWritingVectorEnv(num_envs, model=chat, directions=_directions(), seed=0, **kwargs)


def test_sentences_written_with_the_kept_cache_equal_greedy_generate(chat):
    """Rows of different prompt lengths, stopped at different sentence ends and resumed: the cache,
    masks and positions leave each row's text what the model writes alone, penalties included."""
    tokenizer, model = chat
    decoder = SentenceDecoder(
        LocalBackend(model=chat, temperature=GREEDY, repetition_penalty=1.15, presence_penalty=0.0),
        _directions(),
        max_sentence_tokens=6,
    )
    topics = ["tea", "the long history of lighthouses", "snow"]
    decoder.start(topics)
    for _ in range(4):
        decoder.write([{}] * len(topics), torch.Generator().manual_seed(0))
    for topic, reply in zip(topics, decoder.replies):
        prompt = tokenizer.apply_chat_template(
            writing_messages(topic), add_generation_prompt=True, tokenize=True
        )
        prompt = torch.tensor([list(prompt["input_ids"] if isinstance(prompt, Mapping) else prompt)])
        alone = model.generate(
            prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=len(reply), do_sample=False,
            repetition_penalty=1.15, no_repeat_ngram_size=4, pad_token_id=tokenizer.pad_token_id,
        )[0, prompt.shape[1] :].tolist()  # fmt: skip
        assert reply and reply == alone[: len(reply)]


def test_the_presence_penalty_keeps_a_reply_from_repeating_its_own_tokens(chat):
    def replies(presence: float) -> list[list[int]]:
        backend = LocalBackend(model=chat, temperature=GREEDY, presence_penalty=presence)
        decoder = SentenceDecoder(backend, _directions(), max_sentence_tokens=12)
        decoder.start(["tea", "snow", "the long history of lighthouses"])
        for _ in range(3):
            decoder.write([{}] * 3, torch.Generator().manual_seed(0))
        return decoder.replies

    assert any(len(set(reply)) < len(reply) for reply in replies(0.0))  # greedy repeats itself
    assert all(reply and len(set(reply)) == len(reply) for reply in replies(2.0))


def test_steering_one_row_changes_that_row_only(chat):
    replies = []
    for steer in ([{}, {}, {}], [{}, {"storytelling_index": 1.0}, {}]):
        decoder = SentenceDecoder(
            LocalBackend(model=chat, temperature=GREEDY), _directions(), max_sentence_tokens=8
        )
        decoder.start(["tea", "tea", "snow"])
        replies.append([decoder.write(steer, torch.Generator().manual_seed(0)) for _ in range(2)][-1])
    assert replies[0][0] == replies[1][0] and replies[0][2] == replies[1][2]
    assert replies[0][1] != replies[1][1]


def test_an_episode_writes_a_sentence_a_step_and_returns_the_paragraphs_score(chat):
    env = _env(chat, sentences=3)
    written, write = [], env.decoder.write
    env.decoder.write = lambda *args: written.append(write(*args)) or written[-1]  # what the model wrote
    obs, info = env.reset(seed=1)
    assert obs.shape == (4, 8) and env.observation_space.contains(obs)
    total = np.zeros(4)
    actions = np.zeros((4, 8))
    actions[:, HRV_DIMENSIONS.index("emotional_valence")] = 1.0
    actions[:, HRV_DIMENSIONS.index("curiosity_index")] = -1.0  # no direction: ignored
    for step in range(3):
        obs, rewards, terminated, truncated, infos = env.step(actions)
        total += rewards
        assert not truncated.any() and terminated.all() == (step == 2)
    final = infos["final_info"]
    assert infos["_final_obs"].all() and len(infos["final_obs"]) == 4
    np.testing.assert_allclose(total, final["score"])  # the return is the finished paragraph's score
    assert all(s == {"emotional_valence": 0.5} for s in final["steer"])  # scaled by max_strength 0.5
    # the finished paragraph is what the writer keeps: an unfinished last sentence dropped
    assert list(final["text"]) == [clean_reply(t) for t in written[-1]]
    for text, score, target, measured, o in zip(
        final["text"], final["score"], final["target_hrv"], final["measured_hrv"], infos["final_obs"]
    ):
        if not text:  # nothing a reader would keep is worth nothing
            assert score == 0.0
            continue
        np.testing.assert_allclose(
            np.asarray(o, dtype=float), np.clip(np.asarray(target) - measured, -1, 1), atol=1e-6
        )
    assert all(not t for t in infos["text"])  # the next paragraphs have started


def test_the_same_seed_writes_the_same_paragraphs_and_bad_actions_are_refused(chat):
    env = _env(chat)
    texts = []
    for _ in range(2):
        env.reset(seed=3)
        texts.append(list(env.step(np.full((4, 8), 0.3))[4]["text"]))
    assert texts[0] == texts[1]
    with pytest.raises(ValidationError, match="finite"):
        env.step(np.full((4, 8), np.nan))
    with pytest.raises(ValidationError, match="split"):
        _env(chat, split="test")


def test_targets_split_into_training_and_heldout():
    train = training_targets()
    assert len(train) == 64 and all(0 <= v <= 1 for t in train for v in t)
    heldout = heldout_targets()
    assert len(heldout) == 6 and not any(np.allclose(t, h) for t in train for h in heldout)


def test_spec_signature_gives_the_single_env_and_ppo_trains_on_a_batch(chat, tmp_path):
    env = HRWritingEnv(hrv_dim=8, control="steer", model=chat, directions=_directions(), sentences=2, seed=0)
    assert isinstance(env, SteeredWritingEnv)
    check_env_api(env)
    with pytest.raises(ValidationError, match="control must be one of edits, steer"):
        HRWritingEnv(control="knobs")
    model = train_hr_ppo(
        env, timesteps=64, config={"n_steps": 2, "batch_size": 32}, seed=0, progress_bar=False
    )
    assert model.env.num_envs == 32 and model.num_timesteps == 64
    heldout = env.vectorised(4, split="heldout", targets=None)
    for policy in (model, proportional_controller(4.0, heldout.steerable)):
        row = evaluate_steering_policy(heldout, policy, batches=1, seed=0)
        assert row["episodes"] == 4 and 0.0 <= row["mean"] <= 1.0


def test_a_residual_policy_at_zero_steers_as_the_controller_does(chat):
    controller = _env(chat)
    residual = controller.vectorised(4, controller_gain=2.0)
    act = proportional_controller(2.0, controller.steerable)
    written = []
    for env, policy in ((controller, act), (residual, np.zeros_like)):
        obs, _ = env.reset(seed=5)
        steps = []
        for _ in range(2):
            obs, _, _, _, infos = env.step(policy(obs))
            steps.append((list(infos["text"]), list(infos["steer"])))
        written.append(steps)
    assert written[0] == written[1] and any(written[0][0][1])  # the same strengths, the same text
    assert residual.settings()["controller_gain"] == 2.0
    with pytest.raises(ValidationError, match="controller_gain"):
        controller.vectorised(4, controller_gain=-1.0)


def test_the_resonance_objective_scores_resonance_with_fluency_topic_and_repetition_held(chat):
    env = _env(chat, sentences=2, objective="resonance")
    env.reset(seed=2)
    total = np.zeros(4)
    for _ in range(2):
        _, rewards, _, _, infos = env.step(np.zeros((4, 8)))
        total += rewards
    final = infos["final_info"]
    assert any(final["text"])
    for b in range(4):
        held = final["resonance"][b] * quality_factor(
            final["fluency"][b], 1.0, final["topic"][b], final["repetition"][b]
        )
        assert total[b] == pytest.approx(np.nan_to_num(held), abs=1e-9)
    assert env.settings()["objective"] == "resonance"
    style = env.vectorised(4, objective="style")
    style.reset(seed=2)
    style_total = sum(style.step(np.zeros((4, 8)))[1] for _ in range(2))
    np.testing.assert_allclose(style_total, np.nan_to_num(final["resonance"]), atol=1e-9)  # same paragraphs
    with pytest.raises(ValidationError, match="objective must be one of writing, resonance, style"):
        _env(chat, objective="beauty")
