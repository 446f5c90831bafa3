# Two commands on a fresh machine: `make demo` and `make test`. Everything else is installed here.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.socbench-installed
export SOCBENCH_HOME ?= $(CURDIR)/.socbench
export VLLM_CPU_KVCACHE_SPACE ?= 1
export VLLM_ENABLE_V1_MULTIPROCESSING ?= 0
export TORCH_COMPILE_DISABLE ?= 1

.PHONY: setup browser lint test test-fast demo ui bench clean

setup: $(STAMP) browser

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

# The lock is installed with --no-deps so the resolver cannot put back the CUDA torchvision;
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

# Every test (CI). Tests marked `slow` start a process, an engine, a model or a Prefect API.
test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The inner loop (minutes): only tests that start nothing; tests/support/guard.py fails an unmarked
# test that starts a subprocess, loads a model, runs a flow or imports torch/transformers/vLLM.
test-fast: setup
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

demo: setup
	$(PY) deployments/local_demo.py

# After `make demo`: serve its Prefect state (.prefect-demo/) on 127.0.0.1 until Ctrl-C; prints the URL.
ui: setup
	$(PY) deployments/ui.py

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .socbench .prefect-demo results
