# Two commands on a fresh machine: `make demo` and `make test`. Everything else is installed here.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.socbench-installed
export SOCBENCH_HOME ?= $(CURDIR)/.socbench
# vLLM's CPU settings (KV cache, in-process engine, no torch.compile) are defaulted in one place:
# socbench/processes.py (CPU_ENV), by every script and test that starts an engine.

.PHONY: setup browser postgres haven lint test test-fast test-timed demo ui bench clean

setup: $(STAMP) browser postgres haven

# The browser tests drive Debian's chromium (headless) through chromium-driver (selenium); CI runs as
# root on a fresh machine, so install both there; elsewhere say how (those tests are skipped without).
browser:
	@{ command -v chromium && command -v chromedriver; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "setup: installing Debian's chromium and chromium-driver (the browser tests drive them)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "setup: chromium or chromedriver not found and not root: run 'sudo apt-get install -y chromium" \
	         "chromium-driver' (the browser tests of the report and the Prefect UI are skipped without them)" >&2; \
	  fi; }

# The multi-worker tests (the sweep) and bench/scale_out.py run Prefect's server on a throwaway
# PostgreSQL cluster (initdb/pg_ctl, socbench/processes.py), as docs/scale-out.md asks of several
# workers; `make demo` keeps one in .prefect-demo/postgres (SQLite without it: "database is locked"
# under load). As root (CI) install Debian's postgresql.
INITDB := /usr/lib/postgresql/*/bin/initdb
postgres:
	@ls $(INITDB) >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || { echo "setup: installing Debian's postgresql"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
	@ls $(INITDB) >/dev/null 2>&1 || echo "setup: no PostgreSQL: run 'sudo apt-get install -y postgresql'" \
	  "(the sweep's multi-worker tests are skipped without it)" >&2

# `socbench export` writes .sav/.dta for SPSS, Stata and R; its round-trip test reads them back with R's
# haven, the reader R users use (Debian's r-cran-haven). The real-data battery (tests/test_real_battery.py)
# has R write public survey files from Debian's r-cran-cardata (CES11, GSSvocab, WVS, BEPS, Chile); the
# numeric round trip (tests/test_numeric_e2e.py) reads socbench's JSON in R with r-cran-jsonlite.
# As root (CI) install them; elsewhere say how.
haven:
	@Rscript -e 'library(haven); library(carData); library(jsonlite)' >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "setup: installing Debian's r-cran-haven, r-cran-cardata and r-cran-jsonlite (the export tests and the real-data battery use them)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      r-cran-haven r-cran-cardata r-cran-jsonlite >/dev/null; \
	  else \
	    echo "setup: R's haven, carData or jsonlite not found and not root: run 'sudo apt-get install -y" \
	         "r-cran-haven r-cran-cardata r-cran-jsonlite' (the R part of the export tests and the real-data" \
	         "battery are skipped without them)" >&2; \
	  fi; }

# The lock is installed with --no-deps so the resolver cannot put back the CUDA torchvision
# pip finds torch==2.13.0+cpu via the machine's pip config.
$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "setup: $(PYTHON) not found (set PYTHON=...)" >&2; exit 2; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setup: installing requirements.lock into $(VENV) (about 2 minutes on a cold cache)"
	@set -o pipefail; $(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements.lock 2>&1 | { grep -v "is ignored: it is neither" || true; }
	@set -o pipefail; $(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . 2>&1 | { grep -v "is ignored: it is neither" || true; }
	@touch $@

lint: setup
	$(PY) -m ruff check .

# The tests keep their bytecode (__pycache__, ignored by git) even where PYTHONDONTWRITEBYTECODE is set: a
# rerun then skips compiling every module and pytest's rewriting of the tests' asserts (collection 13 -> 5 CPU s).
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

# Every test (CI). Tests marked `slow` start a process, an engine, a model or a Prefect API; most of their
# time is waiting (a server's start, Prefect's heartbeat), so TEST_WORKERS pytest-xdist workers share the
# 2 cores, a module per worker and the longest first (tests/support/workers.py). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 3
FAST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(1)),,-n $(1) --dist loadscope --no-loadscope-reorder)
test: setup
	$(PYTEST) -q $(call XDIST,$(TEST_WORKERS)) $(PYTEST_ARGS)

# The inner loop (about a minute; FAST_WORKERS=2 workers, as these tests only compute): only tests that start
# nothing; tests/support/guard.py fails an unmarked test that starts a subprocess, loads a model, runs a flow
# or imports torch/transformers/vLLM.
test-fast: setup
	$(PYTEST) -q -m "not slow" $(call XDIST,$(FAST_WORKERS)) $(PYTEST_ARGS)

# Where the suite's time goes (docs/performance.md): every test in one process under `time` (wall, and user
# and sys CPU seconds of the whole run), CPU seconds per test file (tests/support/cputime.py), the 50
# slowest tests. On a shared machine compare CPU seconds: the load stretches wall time. `time make test`
# gives the suite's wall time on its workers.
test-timed: setup
	time $(PYTEST) -q -p tests.support.cputime --durations=50 $(PYTEST_ARGS)

demo: setup
	$(PY) deployments/local_demo.py

# After `make demo`: serve its Prefect state (.prefect-demo/) on 127.0.0.1 until Ctrl-C; prints the URL.
ui: setup
	$(PY) deployments/ui.py

bench: setup
	$(PY) -m bench.run_all

clean:
	rm -rf $(VENV) .socbench .prefect-demo results
