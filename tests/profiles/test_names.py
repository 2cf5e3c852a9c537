"""One rule for tenant and profile names: the profile store and the service's tenants refuse the same
names with the same message."""

from __future__ import annotations

import pytest

from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant, list_tenants
from resonance_os.core.errors import ValidationError
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
from resonance_os.profiles.names import validate_name

V = [0.5] * 8
BAD = [".", ".hidden", "-x", "a..b", "a/b", "", "x" * 65, "has space", "ünïcode", 7]


@pytest.mark.parametrize("good", ["acme", "a", "Blog_2.v1", "x" * 64, "9-lives"])
def test_good_names_pass_unchanged(good):
    assert validate_name(good, "tenant") == good


@pytest.mark.parametrize("bad", BAD)
def test_the_store_and_the_service_refuse_the_same_names(tmp_path, bad):
    with pytest.raises(ValidationError) as rule:
        validate_name(bad, "tenant")
    assert "starting with a letter or digit" in str(rule.value)
    with HRVProfileManager(tmp_path / "store") as manager:
        with pytest.raises(ValidationError) as store:
            manager.save_profile(bad, "blog", V)
        with pytest.raises(ValidationError, match="invalid profile name|profile name must be"):
            manager.save_profile("acme", bad, V)
    database = Database(f"sqlite:///{tmp_path / 'service.db'}")
    database.migrate()
    with pytest.raises(ValidationError) as service:
        create_tenant(database, bad)
    assert str(store.value) == str(service.value) == str(rule.value)
    assert list_tenants(database) == []
    database.dispose()
