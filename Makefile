# evalsite: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export EVALSITE_PORT := $(PORT)

serve_processes := web worker beat $(if $(filter 1 true yes,$(OFFLINE_JUDGE)),judge)

.PHONY: run serve test install install-dev browser lint bench docs conformance clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -qq --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -qq -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -qq -e ".[dev]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/python manage.py preflight
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_demo
	@echo ""
	@echo "  evalsite is starting; its address follows once it answers"
	@echo ""
	$(BIN)/honcho -f Procfile.dev start

# What a server runs, without Docker: gunicorn (workers from the cores), the Celery
# worker and beat; no runserver, and no offline judge unless OFFLINE_JUDGE=1. DEBUG is
# off, so SECRET_KEY is needed: one is made once into var/secret_key when unset.
# Behind a TLS proxy set ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS; see
# docs/operations/serve.md.
serve: export DEBUG := false
serve: export ALLOWED_HOSTS ?= 127.0.0.1,localhost
serve: export SECURE_SSL_REDIRECT ?= false
serve: export OFFLINE_JUDGE_URL ?= http://127.0.0.1:$(or $(JUDGE_PORT),8011)/v1
serve: install
	@mkdir -p var && test -n "$$SECRET_KEY" || test -s var/secret_key \
	  || $(BIN)/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key
	@export SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}"; \
	  $(BIN)/python manage.py preflight \
	  && $(BIN)/python manage.py migrate --noinput \
	  && $(BIN)/python manage.py collectstatic --noinput -v 0 \
	  && echo "  evalsite serves on http://$${EVALSITE_HOST:-127.0.0.1}:$(PORT)/ ($(serve_processes))" \
	  && exec $(BIN)/honcho -f Procfile.serve start $(serve_processes)

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy  # evalsite, scoring and conformance, strict: [tool.mypy] in pyproject.toml

# The browser tests drive Debian's chromium: install it where we may (root with apt),
# otherwise say plainly that those tests will be skipped.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
	      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || echo "note: could not install chromium; the browser tests will be skipped"; \
	  else \
	    echo "note: /usr/bin/chromium is missing, so the browser tests will be skipped (sudo apt-get install chromium)"; \
	  fi; \
	fi

test: lint browser
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m pytest

bench: install-dev
	$(BIN)/python -m bench

# The documentation site (docs/, mkdocs-material) into site/. --strict: a broken link
# or a page left out of the nav fails the build. The benchmarks page takes its figures
# from bench/results.json when `make bench` has written it.
docs: install-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# The differential suite (docs/scoring/differences.md): the released
# @mastra/evals 1.10.2 and promptfoo 0.123.1, with Node 22 itself (the npm registry's
# `node` package), installed from conformance/node/package-lock.json by the system npm,
# against `scoring` on the same cases. CONFORMANCE_ARGS=--reuse-reference checks ours
# on another Python (VENV=... PYTHON=...) against the reference results already saved.
NODE_DIR := conformance/node
CONFORMANCE_ARGS ?=

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "make conformance needs npm (any Node version) to install Node 22 and the packages"; exit 1; }
	# `npm install`, not `npm ci`: the registry may lack other platforms' optional
	# binaries (@swc/core-darwin-*), which `npm ci` wants listed; the lock is respected.
	cd $(NODE_DIR) && npm install --no-audit --no-fund --loglevel=error
	touch $@

conformance: install-dev $(NODE_DIR)/node_modules/.installed
	$(BIN)/python -m conformance $(CONFORMANCE_ARGS)

clean:
	rm -rf $(VENV) var tests/artifacts
