# evalsite: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export EVALSITE_PORT := $(PORT)

.PHONY: run test install install-dev lint bench clean

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
	@echo "  evalsite is starting on http://127.0.0.1:$(PORT)/"
	@echo "  demo login: user 'demo', password 'demo'"
	@echo "  (Ctrl-C stops web, worker and the offline judge)"
	@echo ""
	$(BIN)/honcho -f Procfile.dev start

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy --strict scoring

test: lint
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m pytest

bench: install-dev
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var tests/artifacts
