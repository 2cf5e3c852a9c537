"""The ResonanceOS REST service: a multi-tenant FastAPI app over the profiling, profiles, generation,
evolution and RL layers (``create_app`` in :mod:`resonance_os.api.hr_server`).

- ``hr_server``: the app's assembly and ``python -m resonance_os.api.hr_server``; ``service``: what
  the service does, without HTTP; ``settings``: its configuration.
- ``routes/``: our REST API; ``openai/``, ``tinker/``, ``agl/``: the OpenAI, Tinker and Agent
  Lightning APIs; ``studio/``: the web page's files.
- ``http/``: dependencies, middleware, the error shape, uvicorn's protocol, schemas, metrics, the
  Studio's routes.
- ``jobs/``: training jobs: the queue, the worker process, the trainers, trained policies, and how
  training yields to requests.
- ``persistence/``: the database, tenants and keys, storage quotas, feedback and reward models.
- ``text/``: CPU-bound text work: the engine, text worker processes, turns at the writer, steering.
- ``limits/``: per-key rate limits and per-address limits.
"""
