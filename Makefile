# knowledge_crawler: `make demo` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help

help: ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-8s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the project (editable) with its dev tools

lint: $(STAMP) ## ruff (lint + format check) and mypy on the package
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint ## Lint, type-check and run the whole test suite
	$(PY) -m pytest

test-fast: $(STAMP) ## Unit tests only (seconds)
	$(PY) -m pytest tests/unit -q

demo: $(STAMP) ## Crawl the loopback test site twice into data/demo/knowledge.db and print stats
	$(PY) -m knowledge_crawler.demo

bench: $(STAMP) ## Benchmarks (see docs/benchmarks.md)
	$(PY) bench/run_all.py --write

clean: ## Remove the virtualenv, caches and data/
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache *.egg-info

.PHONY: help install lint test test-fast demo bench clean
