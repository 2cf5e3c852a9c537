"""Agent Lightning's rollout store (``/v1/agl/...``) and OTLP trace ingestion (``/v1/traces``), tenant by
tenant in the service's database. See docs/agents.md."""
