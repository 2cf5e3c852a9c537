"""The trainer's and runners' client of ``resonance serve``: the rollout store (``/v1/agl``), the span
search, and the adapter routes that publish a new policy (``/v1/adapters``), over HTTP with the tenant's
Bearer key (or a store URL, which carries it)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from resonance_os.rl.errors import RLError
from resonance_os.traces.spans import Span

SPAN_PAGE = 500


class StoreError(RLError):
    """The server refused a call; the message names the route, the status and the server's reason."""


class StoreClient:
    def __init__(self, url: str, api_key: str | None = None, timeout: float = 120.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.api_key = api_key
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise StoreError(
                f"{method} {self.url}{path}: {exc}; is `resonance serve` running there?"
            ) from exc
        if response.status_code >= 400:
            raise StoreError(f"{method} {path} answered {response.status_code}: {response.text[:500]}")
        return response.json()

    # ------------------------------------------------------------------ store
    def add_resources(self, resources: dict[str, Any]) -> str:
        return self._call("POST", "/v1/agl/resources", json=resources)["resources_id"]

    def get_resources(self, resources_id: str) -> dict[str, Any]:
        found = self._call("GET", f"/v1/agl/resources/{resources_id}")
        if not found:
            raise StoreError(f"no resources {resources_id!r} in the store")
        return found["resources"]

    def enqueue(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._call("POST", "/v1/agl/queues/rollouts/enqueue", json={"rollouts": requests})

    def dequeue(self, worker_id: str) -> dict[str, Any] | None:
        claimed = self._call(
            "POST", "/v1/agl/queues/rollouts/dequeue", json={"limit": 1, "worker_id": worker_id}
        )
        return claimed[0] if claimed else None

    def update_attempt(self, rollout_id: str, attempt_id: str, **fields: Any) -> None:
        self._call("POST", f"/v1/agl/rollouts/{rollout_id}/attempts/{attempt_id}", json=fields)

    def add_span(self, span: dict[str, Any]) -> None:
        """Store one span; a ``sequence_id`` of ``None`` is issued by the store first (as its client does)."""
        if span.get("sequence_id") is None:
            ids = {"rollout_id": span["rollout_id"], "attempt_id": span["attempt_id"]}
            span = {**span, "sequence_id": self._call("POST", "/v1/agl/spans/next", json=ids)["sequence_id"]}
        self._call("POST", "/v1/agl/spans", json=span)

    def wait(self, rollout_ids: list[str], timeout: float) -> list[dict[str, Any]]:
        """The rollouts of ``rollout_ids`` that finished within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        finished: dict[str, dict[str, Any]] = {}
        while True:
            left = [r for r in rollout_ids if r not in finished]
            remaining = deadline - time.monotonic()
            if not left or remaining <= 0:
                return [finished[r] for r in rollout_ids if r in finished]
            done = self._call(
                "POST", "/v1/agl/waits/rollouts", json={"rollout_ids": left, "timeout": min(remaining, 10.0)}
            )
            finished.update({r["rollout_id"]: r for r in done})

    def spans(self, rollout_id: str, attempt_id: str) -> list[Span]:
        """Every stored span of one attempt, in sequence order."""
        out: list[Span] = []
        while True:
            page = self._call(
                "POST",
                "/v1/agl/spans/search",
                json={
                    "rollout_id": rollout_id,
                    "attempt_id": attempt_id,
                    "limit": SPAN_PAGE,
                    "offset": len(out),
                },
            )
            out += [Span.from_dict(item) for item in page["items"]]
            if not page["items"] or len(out) >= page["total"]:
                return out

    # ------------------------------------------------------------------ serving
    def runs_folder(self) -> str:
        """The folder this tenant's adapters are registered from (the server's, on a shared disk)."""
        return self._call("GET", "/v1/adapters")["runs_folder"]

    def publish(self, name: str, path: str) -> int:
        """Serve the adapter in run folder ``path`` as model ``name`` (replacing it); its new version."""
        record = self._call("POST", "/v1/adapters", json={"name": name, "path": path, "replace": True})
        return int(record["version"])
