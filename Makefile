# One command per chore; .ci/run calls the same targets developers run.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.DEFAULT_GOAL := help
.PHONY: help install run test lint typecheck unit e2e-deps e2e bench extension dist clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the package with its dev tools

run: $(STAMP) ## replay the bundled real session (MIT, recorded usage) under every strategy
	$(VENV)/bin/ectx replay --demo

lint: $(STAMP) ## ruff
	$(VENV)/bin/ruff check server tests
	$(VENV)/bin/ruff format --check server tests

typecheck: $(STAMP) ## mypy (strict) over the package and its tests
	$(VENV)/bin/mypy

# pytest-xdist: one worker per core; the end-to-end tests run one at a time on one of them.
PYTEST := $(VENV)/bin/pytest -q -n auto --dist loadgroup

unit: $(STAMP) ## the suite without the real-editor end-to-end tests
	$(PYTEST) -m 'not e2e'

e2e-deps: ## install what the real-client tests need (Neovim, Chromium, code-server, Claude Code)
	bash tests/e2e/install-deps.sh

e2e: $(STAMP) e2e-deps ## only the real-editor end-to-end tests
	$(VENV)/bin/pytest -m e2e -q

test: $(STAMP) lint typecheck e2e-deps ## ruff, mypy and the whole suite, real clients included
	cd extension && npm ci --no-audit --no-fund && npm test
	$(PYTEST)

bench: $(STAMP) ## benchmarks; figures go to docs/benchmarks.md
	$(PY) tests/bench/run.py

extension: ## build the VS Code extension .vsix (offline)
	cd extension && npm ci --no-audit --no-fund && npm run package

dist: $(STAMP) ## build the sdist and wheel into dist/ and check them with twine (uploads nothing)
	rm -rf dist
	$(PY) -m build --outdir dist
	$(VENV)/bin/twine check --strict dist/*

clean: ## remove the venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
