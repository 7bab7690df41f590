# Every target builds .venv first when it is missing or stale (pyproject.toml / uv.lock changed), then runs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
BIN := $(VENV)/bin

# uv must not download an interpreter (no network here): it uses $(PYTHON).
export UV_PYTHON_DOWNLOADS := never
# Prefect stays offline: no telemetry, and a startup timeout a 2-core machine can meet.
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120

.PHONY: run demo test lint bench calibrate check-calibration clean browser

# --compile-bytecode: the libraries' .pyc are written once here. Where PYTHONDONTWRITEBYTECODE is set (CI, sandboxes)
# Python never writes them, and every process compiled what it imports again (~1.5 s of CPU for the CLI's imports).
$(STAMP): pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --locked --compile-bytecode --extra test --python $(PYTHON)
	@touch $@

run: $(STAMP)
	$(BIN)/gpuledger nightly

demo: $(STAMP)
	$(BIN)/python -m flows.replay.demo

# The report's browser tests drive Debian's chromium (Playwright never downloads a browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# Every test but the full calibration's checks, which take minutes by nature: check-calibration runs those.
# One worker per core, a test file to a worker (its module fixtures are built once): docs/development.md.
test: $(STAMP) browser
	$(BIN)/pytest -q -m "not calibration" -n auto --dist loadfile --no-loadscope-reorder

# The full re-fit equals the committed fit, and held-out estimates meet the acceptance (tests marked calibration).
check-calibration: $(STAMP)
	$(BIN)/pytest -q -m calibration

lint: $(STAMP)
	$(BIN)/ruff check flows scrapers transforms warehouse tests bench

# The bench extra (the peer gpuhunt) is added to .venv here only: it is never a runtime dependency.
bench: $(STAMP)
	$(UV) sync --locked --inexact --extra test --extra bench --python $(PYTHON)
	$(BIN)/python -m bench $(SECTIONS)

# Fit the measured method to the committed benchmarks; rewrites transforms/measured_fit.json and docs/calibration.md.
calibrate: $(STAMP)
	$(BIN)/python -m bench.calibrate

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
