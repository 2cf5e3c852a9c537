"""Token buckets: per process, and shared through one file by every worker of a server."""

from __future__ import annotations

import httpx
from service_helpers import unique

from resonance_os.api.limits.per_key import PROBES, SLOTS, RateLimiter, SharedRateLimiter
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant


def test_a_bucket_allows_the_burst_then_refuses_with_the_wait():
    limiter = RateLimiter(rate=2.0, burst=3)
    assert [limiter.acquire(7) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert 0.0 < limiter.acquire(7) <= 0.5
    assert limiter.acquire(8) == 0.0  # another key has its own bucket


def test_limiters_sharing_a_file_share_each_keys_bucket(tmp_path):
    first = SharedRateLimiter(rate=0.01, burst=4, path=tmp_path / "buckets")
    second = SharedRateLimiter(rate=0.01, burst=4, path=tmp_path / "buckets")
    granted = [limiter.acquire(42) == 0.0 for limiter in (first, second, first, second, first, second)]
    assert granted == [True, True, True, True, False, False]
    assert second.acquire(43) == 0.0


def test_colliding_keys_keep_separate_buckets_and_a_full_probe_window_reuses_the_oldest(tmp_path):
    limiter = SharedRateLimiter(rate=0.01, burst=1, path=tmp_path / "buckets")
    colliding = [1 + i * SLOTS for i in range(PROBES)]  # all hash to slot 1
    assert [limiter.acquire(key) for key in colliding] == [0.0] * PROBES
    assert all(limiter.acquire(key) > 0 for key in colliding)  # each one's bucket is kept and empty
    newcomer = 1 + PROBES * SLOTS
    assert limiter.acquire(newcomer) == 0.0  # takes over the least recently used bucket


def test_two_server_workers_enforce_one_rate_per_key(db_url, live_server_factory):
    db = Database(db_url)
    db.migrate()
    key = create_tenant(db, unique("shared-rate"))
    db.dispose()
    server = live_server_factory(
        db_url,
        workers=2,
        # refusals answered at once, so the buckets cannot refill while these requests run
        env={"RESONANCE_RATE_LIMIT": "0.2", "RESONANCE_RATE_BURST": "6", "RESONANCE_THROTTLE_MAX_S": "0"},
    )
    statuses = []
    for _ in range(24):  # a fresh connection each time, so requests land on both workers
        with httpx.Client(base_url=server.url, timeout=30) as client:
            statuses.append(
                client.get("/v1/profiles", headers={"Authorization": f"Bearer {key}"}).status_code
            )
    assert statuses.count(200) in (6, 7)  # the burst, plus at most one token refilled meanwhile
    assert set(statuses) == {200, 429}
