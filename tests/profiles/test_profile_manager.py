import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timezone

import pytest

from resonance_os.core.errors import (
    AlreadyExistsError,
    InvalidHRVError,
    ProfileNotFoundError,
    StorageError,
    ValidationError,
)
from resonance_os.core.home import DB_FILENAME
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVProfile
from resonance_os.profiles import BUILTIN_TEMPLATES, DEFAULT_PROFILE
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

V1 = [0.5, 0.6, 0.5, 0.6, 0.2, 0.1, 0.5, 0.9]
V2 = [0.4, 0.7, 0.3, 0.7, 0.1, 0.2, 0.3, 0.95]


@pytest.fixture
def manager(tmp_path):
    with HRVProfileManager(tmp_path / "store") as m:
        yield m


def test_save_load_get_roundtrip(manager, tmp_path):
    saved = manager.save_profile("acme", "blog", V1, description="Blog voice")
    assert isinstance(saved, HRVProfile)
    assert saved.version == 1 and saved.key == "acme/blog"
    assert manager.load_profile("acme", "blog") == V1
    got = manager.get_profile("acme", "blog")
    assert got.description == "Blog voice" and got.version == 1
    assert got.created_at.tzinfo is timezone.utc and got.created_at == got.updated_at
    assert (tmp_path / "store" / DB_FILENAME).is_file()


def test_store_survives_reopening_and_uses_wal(tmp_path):
    with HRVProfileManager(tmp_path) as m:
        m.save_profile("acme", "blog", V1)
    with HRVProfileManager(str(tmp_path)) as m:
        assert m.load_profile("acme", "blog") == V1
    mode = sqlite3.connect(tmp_path / DB_FILENAME).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_update_bumps_version_and_keeps_history(manager):
    manager.save_profile("acme", "blog", V1, description="first")
    updated = manager.save_profile("acme", "blog", V2)
    assert updated.version == 2
    assert updated.description == "first"  # None keeps the description
    assert manager.load_profile("acme", "blog") == V2
    manager.save_profile("acme", "blog", V1, description="third")
    history = manager.profile_history("acme", "blog")
    assert [h.version for h in history] == [1, 2, 3]
    assert [h.vector.to_list() for h in history] == [V1, V2, V1]
    assert [h.description for h in history] == ["first", "first", "third"]
    assert history[0].updated_at <= history[1].updated_at <= history[2].updated_at
    current = manager.get_profile("acme", "blog")
    assert current.version == 3 and current.created_at == history[0].updated_at


def test_create_only_and_update_only_saves(manager):
    manager.save_profile("acme", "blog", V1, must_exist=False)
    with pytest.raises(AlreadyExistsError, match="acme/blog already exists"):
        manager.save_profile("acme", "blog", V2, must_exist=False)
    with pytest.raises(ProfileNotFoundError, match="existing profiles: blog"):
        manager.save_profile("acme", "newsletter", V2, must_exist=True)
    assert manager.save_profile("acme", "blog", V2, must_exist=True).version == 2
    assert manager.list_profiles("acme") == ["blog"]
    assert [p.version for p in manager.profile_history("acme", "blog")] == [1, 2]


def test_simultaneous_creates_of_one_name_let_exactly_one_through(tmp_path):
    store = tmp_path / "store"
    HRVProfileManager(store).close()
    start = threading.Barrier(8)

    def create(i: int) -> str:
        with HRVProfileManager(store) as m:
            start.wait()
            try:
                m.save_profile("acme", "launch", [i / 10] * 8, must_exist=False)
                return "created"
            except AlreadyExistsError:
                return "exists"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = sorted(pool.map(create, range(8)))
    assert outcomes == ["created"] + ["exists"] * 7
    with HRVProfileManager(store) as m:
        assert len(m.profile_history("acme", "launch")) == 1


def test_list_tenants_are_isolated_and_sorted(manager):
    manager.save_profile("acme", "zeta", V1)
    manager.save_profile("acme", "alpha", V2)
    manager.save_profile("globex", "alpha", V1)
    assert manager.list_profiles("acme") == ["alpha", "zeta"]
    assert manager.load_profile("globex", "alpha") == V1
    assert manager.load_profile("acme", "alpha") == V2
    assert manager.list_profiles("nobody") == []
    assert manager.list_tenants() == {"acme": 2, "globex": 1}


def test_delete_removes_profile_and_history(manager):
    manager.save_profile("acme", "blog", V1)
    manager.save_profile("acme", "blog", V2)
    manager.save_profile("acme", "news", V2)
    manager.delete_profile("acme", "blog")
    assert manager.list_profiles("acme") == ["news"]
    with pytest.raises(ProfileNotFoundError):
        manager.profile_history("acme", "blog")
    with pytest.raises(ProfileNotFoundError):
        manager.delete_profile("acme", "blog")
    recreated = manager.save_profile("acme", "blog", V1)
    assert recreated.version == 1
    assert len(manager.profile_history("acme", "blog")) == 1


def test_not_found_lists_what_exists(manager):
    manager.save_profile("acme", "blog", V1)
    manager.save_profile("acme", "docs", V1)
    with pytest.raises(ProfileNotFoundError, match=r"'blgo'.*'acme'.*existing profiles: blog, docs"):
        manager.load_profile("acme", "blgo")
    with pytest.raises(ProfileNotFoundError, match="has no profiles yet"):
        manager.get_profile("globex", "blog")


@pytest.mark.parametrize(
    "bad",
    [
        "../x",
        "a/b",
        "a\\b",
        "..",
        "",
        "x" * 65,
        "has space",
        "x'; DROP TABLE profiles;--",
        "name\x00",
        "ünïcode",
        "a..b",
    ],
)
def test_bad_names_are_rejected_with_the_rule(manager, bad):
    manager.save_profile("acme", "blog", V1)
    with pytest.raises(ValidationError, match="letters, digits") as info:
        manager.save_profile("acme", bad, V1)
    assert repr(bad) in str(info.value)
    with pytest.raises(ValidationError, match="tenant name"):
        manager.save_profile(bad, "blog", V1)
    with pytest.raises(ValidationError):
        manager.load_profile(bad, "blog")
    # the store is untouched
    assert manager.load_profile("acme", "blog") == V1
    assert manager.list_tenants() == {"acme": 1}


def test_names_at_the_limits_are_accepted(manager):
    for name in ["a", "x" * 64, "v1.2_final-draft", "9.hidden", "A9"]:
        manager.save_profile("t-1.x_y", name, V1)
    assert len(manager.list_profiles("t-1.x_y")) == 5


def test_bad_vectors_and_descriptions(manager):
    with pytest.raises(InvalidHRVError, match="curiosity_index"):
        manager.save_profile("acme", "blog", [0.5, 0.5, 0.5, 0.5, 1.2, 0.5, 0.5, 0.5])
    with pytest.raises(InvalidHRVError, match="8 values"):
        manager.save_profile("acme", "blog", [0.5] * 7)
    with pytest.raises(ValidationError, match="description"):
        manager.save_profile("acme", "blog", V1, description=42)
    assert manager.list_profiles("acme") == []  # nothing half-written


def test_mapping_vectors_are_accepted(manager):
    manager.save_profile("acme", "blog", dict(zip(HRV_DIMENSIONS, V2)))
    assert manager.load_profile("acme", "blog") == V2


def test_sqlalchemy_url_form(tmp_path):
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    with HRVProfileManager(url) as m:
        m.save_profile("acme", "blog", V1)
        assert m.location == url
    with HRVProfileManager(url) as m:
        assert m.load_profile("acme", "blog") == V1
    with HRVProfileManager("sqlite://") as m:  # in-memory
        m.save_profile("acme", "blog", V2)
        m.save_profile("acme", "blog", V1)
        assert [h.version for h in m.profile_history("acme", "blog")] == [1, 2]


@pytest.mark.parametrize(
    "location, message",
    [
        ("nosuchdialect://x", "dialect"),
        ("postgresql+psycopg://user:secret@127.0.0.1:1/db", "cannot open"),
        ("sqlite:////nonexistent-dir/sub/x.db", "cannot create the database file"),
        ("", "empty"),
    ],
)
def test_bad_locations_raise_storage_error(location, message):
    with pytest.raises(StorageError, match=message) as info:
        HRVProfileManager(location)
    assert "secret" not in str(info.value)  # passwords are never echoed


def test_unwritable_folder_raises_storage_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match="a-file"):
        HRVProfileManager(blocker / "store")


def test_templates_are_valid_and_copyable(manager):
    assert set(BUILTIN_TEMPLATES) == {"professional", "creative", "technical"}
    for template in BUILTIN_TEMPLATES.values():
        assert template.description and len(template.vector) == 8
    assert DEFAULT_PROFILE is BUILTIN_TEMPLATES["professional"]
    made = manager.create_from_template("acme", "house", "creative")
    assert made.vector == BUILTIN_TEMPLATES["creative"].vector
    assert made.description == BUILTIN_TEMPLATES["creative"].description
    custom = manager.create_from_template("acme", "docs", "technical", description="ours")
    assert custom.description == "ours"
    with pytest.raises(ValidationError, match="professional, creative, technical"):
        manager.create_from_template("acme", "x", "poetic")


def test_templates_differ_where_their_descriptions_say():
    pro, creative, tech = (BUILTIN_TEMPLATES[n].vector for n in ("professional", "creative", "technical"))
    assert creative["metaphor_density"] > pro["metaphor_density"] > tech["metaphor_density"]
    assert creative["storytelling_index"] > pro["storytelling_index"] > tech["storytelling_index"]
    assert tech["active_voice_ratio"] < pro["active_voice_ratio"]


try:
    from resonance_os.profiling.hrv_extractor import HRVExtractor

    EXTRACTOR_MISSING = ""
except ImportError as exc:  # built by another change; this test runs once it lands
    EXTRACTOR_MISSING = f"resonance_os.profiling.hrv_extractor is not importable yet: {exc}"


@pytest.mark.skipif(bool(EXTRACTOR_MISSING), reason=EXTRACTOR_MISSING)
def test_profile_from_text_measures_the_sample(manager):
    text = (
        "We shipped the new release on Monday. The team fixed every reported bug, and the "
        "documentation was rewritten from scratch. Did it work? Customers say it feels faster."
    )
    made = manager.profile_from_text("acme", "release-notes", text)
    assert made.vector.to_list() == pytest.approx(HRVExtractor().extract(text))
    assert "word sample" in made.description
    assert manager.load_profile("acme", "release-notes") == made.vector.to_list()


STYLE_SAMPLES = {
    "professional": (
        "Our team delivered the new onboarding flow on schedule. Customers now finish sign-up in half "
        "the time, and support tickets dropped by a third. We will extend the same approach to billing "
        "next quarter. The results are clear: simpler screens win. I am proud of how quickly everyone "
        "adapted, and I expect even stronger numbers in March."
    ),
    "creative": (
        "The summer I turned nine, my grandmother taught me to swim in a lake as cold as a secret. She "
        'laughed when I shrieked. "Kick, child!" she shouted, and I did, thrashing like a startled '
        "fish. Why did I trust her so completely? Years later, I still remember the light on the "
        "water, soft as memory, and the way her hands let go."
    ),
    "technical": (
        "The function returns a list of tuples. Each tuple is sorted by key before it is returned. If "
        "the input is empty, an empty list is returned. The cache is invalidated when the "
        "configuration file is modified. Timeouts are specified in seconds and may be overridden per "
        "request. Errors are logged and the operation is retried up to three times."
    ),
}


@pytest.mark.skipif(bool(EXTRACTOR_MISSING), reason=EXTRACTOR_MISSING)
def test_each_template_is_nearest_to_writing_in_its_style():
    from resonance_os.similarity.metrics import SimilarityCalculator

    calc = SimilarityCalculator("euclidean")
    templates = {name: t.vector for name, t in BUILTIN_TEMPLATES.items()}
    for style, text in STYLE_SAMPLES.items():
        best, _ = calc.find_most_similar(HRVExtractor().extract(text), templates, top_k=1)[0]
        assert best == style
