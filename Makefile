# One entry point for people and CI. Everything installs into .venv from the package registries.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup compiled dev test test-slow lint fmt bench audit clean

# Byte-code caches are written as Python does by default, even where the environment sets
# PYTHONDONTWRITEBYTECODE (the 2-core VMs of this project do): without them each `verdictflow`
# child process of the tests compiled the package's ~240 modules again (~1.3 s a time there).
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP) compiled

# The lexical scorers compiled to C with mypyc (verdictflow/compiled_scorers.py): ~30 s on a
# 2-core VM when their sources changed, a tenth of a second when not. Without a C compiler or
# Python's headers it says so and the scorers run as pure Python, with the same verdicts.
# COMPILED=0 skips the build (and VERDICTFLOW_COMPILED=0 the use of one already built).
COMPILED ?= 1
compiled: $(STAMP)
	if [ "$(COMPILED)" = "1" ]; then $(BIN)/python scripts/build_compiled_scorers.py; fi

# The neural embedder's extra [st] is installed too (its tests run for real); PyTorch's CPU
# build first, so that nothing pulls a CUDA build. NEURAL=0 skips both (its tests then skip).
NEURAL ?= 1
TORCH ?= torch==2.13.0

# --no-compile: pip byte-compiles every module it installs (~22,600 files with PyTorch), one
# core, 1 min 38 s of a 3 min setup on a 2-core VM; the modules a command imports (~5,300) are
# compiled on their first import instead, ~20 s once, and cached (2026-11-29: setup 2 min 59 s
# -> 1 min 22 s; docs/development.md#tests).
PIP := $(BIN)/python -m pip install --quiet --no-compile

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	if [ "$(NEURAL)" = "1" ]; then \
	  $(PIP) '$(TORCH)' && \
	  $(PIP) -e '.[dev,st]'; \
	else \
	  $(PIP) -e '.[dev]'; \
	fi
	touch $(STAMP)

## Start the embedded broker, a worker, replay the bundled sample traffic and show verdicts live.
dev: setup
	$(BIN)/verdictflow dev

## Lint, type-check, then the test suite (unit, agent, integration through the embedded broker)
## without the tests marked slow; `make test-slow` runs those.
# Two pytest workers (pytest-xdist), each with its own embedded broker: the integration tests
# spend most of their time waiting on broker round trips and worker start-up, so on a 2-core
# machine the suite took 26 min in one process and 15 min in two (docs/development.md#tests).
TEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal --durations=15
# The compiled scorers' build (~25 s) and the lint (~40 s of mypy on a fresh clone) run side by
# side: two single-threaded jobs on two cores (output grouped per job).
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target compiled lint
	$(PYTEST) -m "not slow"

## The slow end-to-end tests only (dev, rebalance, review loop, MiniLM stream, judge budget).
test-slow: setup
	$(PYTEST) -m slow

lint: $(STAMP)
	$(BIN)/ruff check verdictflow tests bench scripts
	$(BIN)/ruff format --check verdictflow tests bench scripts
	$(BIN)/mypy

fmt: setup
	$(BIN)/ruff format verdictflow tests bench scripts
	$(BIN)/ruff check --fix verdictflow tests bench scripts

## Known vulnerabilities in the installed dependencies (pip-audit); fails when it cannot audit.
audit: setup
	$(BIN)/python .ci/audit.py

## The headline throughput ratios in one table (~10 min; docs/benchmarks.md).
bench: setup
	$(BIN)/python bench/headline.py

clean:
	rm -rf $(VENV) .verdictflow .pytest_cache .mypy_cache .ruff_cache build verdictflow/_compiled verdictflow/_compiled.new verdictflow/_compiled.old
