"""Training jobs and their scheduling: the queue and its runner, the worker process, the trainers
(by name) and what they report, trained policies, and how training yields to requests."""
