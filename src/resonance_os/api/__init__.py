"""The ResonanceOS REST service: a multi-tenant FastAPI app over the profiling, profiles, generation,
evolution and RL layers (``create_app`` in :mod:`resonance_os.api.hr_server`)."""
