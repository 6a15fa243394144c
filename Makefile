# The two commands of the README: `make run` starts the service, `make test` runs the tests.
# Both create and use the project's virtual environment (.venv) themselves.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The CPU build of torch (a local file on these machines); GPU users install their CUDA build.
TORCH  ?= torch==2.13.0
ARGS   ?=

.PHONY: install tools run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlda up $(ARGS)

# Test-only system tools: headless Chromium (page test) and docker-compose (compose file check).
tools:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && apt-get install -y -qq chromium docker-compose >/dev/null; \
	  else echo "note: chromium missing and not installable here; its test will be skipped"; fi; }

test: $(STAMP) tools
	$(PY) -m ruff check lda service tests benchmarks
	$(PY) -m ruff format --check lda service tests benchmarks
	$(PY) -m mypy
	$(PY) -m pytest -q $(ARGS)

lint: $(STAMP)
	$(PY) -m ruff check lda service tests benchmarks
	$(PY) -m ruff format --check lda service tests benchmarks
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) benchmarks/learner.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
