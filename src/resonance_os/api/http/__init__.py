"""The HTTP layer: request dependencies, middleware, the error shape, uvicorn's protocol, the
request and response schemas, Prometheus metrics and the Studio's page."""
