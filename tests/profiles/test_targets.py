"""Target resolution (profiles.targets): explicit HRVs, stored and built-in profiles, tenant scope."""

import pytest

from resonance_os.core.errors import InvalidHRVError, ProfileNotFoundError, ValidationError
from resonance_os.core.hrv_constants import DEFAULT_TARGET_HRV, DEFAULT_TARGET_KEY
from resonance_os.core.hrv_types import HRVProfile, HRVVector
from resonance_os.profiles import BUILTIN_TEMPLATES, DEFAULT_PROFILE
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
from resonance_os.profiles.targets import default_target, resolve_target, resolve_target_item

ACME = [0.5, 0.6, 0.5, 0.6, 0.2, 0.1, 0.5, 0.9]
OTHER = [0.3, 0.4, 0.3, 0.4, 0.1, 0.1, 0.2, 0.8]
CREATIVE = BUILTIN_TEMPLATES["creative"].vector.to_list()


@pytest.fixture
def manager(tmp_path):
    with HRVProfileManager(tmp_path / "store") as m:
        m.save_profile("acme", "newsletter", ACME)
        m.save_profile("acme", "creative", ACME)  # the tenant's own profile shadows the template
        m.save_profile("rival", "secret", OTHER)
        yield m


def test_explicit_default_and_builtin_targets():
    assert resolve_target() == (default_target(), "default profile builtin/professional")
    assert default_target() == DEFAULT_PROFILE.vector.to_list()
    assert resolve_target(ACME) == (ACME, "target_hrv")
    assert resolve_target(HRVVector(ACME)) == (pytest.approx(ACME), "target_hrv")
    assert resolve_target(profile="builtin/creative") == (CREATIVE, "profile builtin/creative")
    assert resolve_target(profile="creative") == (CREATIVE, "profile builtin/creative")
    profile = HRVProfile(name="x", vector=ACME, tenant="t")
    assert resolve_target(profile=profile) == (pytest.approx(ACME), "profile t/x")


def test_the_default_profile_is_cores_default_target():
    """core holds the default vector (generation falls back on it); the template is built from it."""
    assert DEFAULT_PROFILE.key == DEFAULT_TARGET_KEY == "builtin/professional"
    assert DEFAULT_PROFILE.vector.to_dict() == DEFAULT_TARGET_HRV
    assert BUILTIN_TEMPLATES["professional"] is DEFAULT_PROFILE
    first = default_target()
    first[0] = 1.0  # a fresh list each call: callers cannot change the default
    assert default_target() == DEFAULT_PROFILE.vector.to_list() != first


def test_stored_profiles_by_location_env_or_open_manager(manager, tmp_path, monkeypatch):
    store = tmp_path / "store"
    assert resolve_target(profile="acme/newsletter", store=store) == (ACME, "profile acme/newsletter")
    assert resolve_target(profile="acme/newsletter", store=manager)[0] == ACME
    manager.list_tenants()  # an open manager is left open
    monkeypatch.setenv("RESONANCE_STORE", str(store))
    assert resolve_target(profile="rival/secret")[0] == OTHER


def test_items_of_a_target_list():
    assert resolve_target_item("builtin/creative") == (CREATIVE, "profile builtin/creative")
    assert resolve_target_item(ACME) == (ACME, "target_hrv")
    assert resolve_target_item(HRVVector(ACME).to_dict()) == (ACME, "target_hrv")


def test_within_a_tenant_own_profiles_win_and_others_are_refused(manager):
    assert resolve_target(profile="newsletter", store=manager, tenant="acme") == (
        ACME,
        "profile acme/newsletter",
    )
    assert resolve_target(profile="creative", store=manager, tenant="acme")[0] == ACME
    assert resolve_target(profile="creative", store=manager, tenant="rival") == (
        CREATIVE,
        "profile builtin/creative",
    )
    assert resolve_target(ACME, store=manager, tenant="rival") == (ACME, "target_hrv")
    assert resolve_target(store=manager, tenant="rival")[1].startswith("default profile")
    with pytest.raises(ProfileNotFoundError, match="'secret' for tenant 'acme'"):
        resolve_target(profile="secret", store=manager, tenant="acme")
    with pytest.raises(ValidationError, match="named within your tenant"):
        resolve_target(profile="rival/secret", store=manager, tenant="acme")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"target_hrv": ACME, "profile": "builtin/creative"}, ValidationError, "not both"),
        ({"target_hrv": [0.5] * 7}, InvalidHRVError, "must have 8 values"),
        ({"profile": "poetic"}, ValidationError, "not 'tenant/name'"),
        ({"profile": "builtin/poetic"}, ProfileNotFoundError, "creative, professional, technical"),
        ({"profile": "  "}, ValidationError, "profile must be 'tenant/name'"),
        ({"profile": 3}, ValidationError, "profile must be 'tenant/name'"),
        ({"profile": "acme/blog"}, ProfileNotFoundError, "existing profiles: creative, newsletter"),
    ],
)
def test_bad_input_gives_clear_errors(manager, kwargs, error, match):
    with pytest.raises(error, match=match):
        resolve_target(store=manager, **kwargs)
