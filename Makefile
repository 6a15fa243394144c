# The two commands of the README: `make run` starts the service, `make test` runs the tests.
# Both create and use the project's virtual environment (.venv) themselves.
VENV   := .venv
PY     := $(VENV)/bin/python
# What running needs (the package and its dependencies), and what testing adds (the dev extra:
# linters, peers, the CUDA compiler stack the kernel's tests run under): `make run` installs
# only the first, so a machine that just runs the service gets no CUDA toolkit wheels.
BASE   := $(VENV)/.installed-base
RUN    := $(VENV)/.installed-run
DEV    := $(VENV)/.installed-dev
# The CPU build of torch (a local file on these machines); GPU users install their CUDA build.
TORCH  ?= torch==2.13.0
ARGS   ?=
# Test processes: most slow tests wait on the processes and servers they start, so two share
# even a 2-core machine well (pytest-xdist); JOBS=0 runs them in this one process.
JOBS   ?= 2

.PHONY: install tools run test lint bench clean compose-up compose-down compose-test

$(BASE):
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	touch $(BASE)

$(RUN): pyproject.toml $(BASE)
	$(PY) -m pip install -q -e .
	touch $(RUN)

$(DEV): pyproject.toml $(BASE)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(DEV) $(RUN)

install: $(DEV)

run: $(RUN)
	$(VENV)/bin/streamlda up $(ARGS)

# Test-only system tools: headless Chromium (page test) and docker-compose (compose file check).
tools:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && apt-get install -y -qq chromium docker-compose >/dev/null; \
	  else echo "note: chromium missing and not installable here; its test will be skipped"; fi; }

test: $(DEV) tools
	$(PY) -m ruff check lda service tests benchmarks
	$(PY) -m ruff format --check lda service tests benchmarks
	$(PY) -m mypy
	$(PY) -m pytest -q -n $(JOBS) -m "not compose" $(ARGS)

# The stack of docker-compose.yml under the engine this host has (Docker, or Podman installed
# with apt), its images built from Debian's packages where no registry serves them; the API on
# 127.0.0.1:8000. `make compose-up STREAMLDA_SOURCE=jsonl:PATH` replays a file of this host.
compose-up:
	deploy/compose/compose.sh up

# Stops the stack; its volumes (checkpoints, Redis' data) are kept for the next compose-up.
compose-down:
	deploy/compose/compose.sh down

# The end-to-end test of that stack (CI's step after `make test`, which leaves it out).
compose-test: $(DEV)
	$(PY) -m pytest -q -m compose tests/service/test_compose_stack.py $(ARGS)

lint: $(DEV)
	$(PY) -m ruff check lda service tests benchmarks
	$(PY) -m ruff format --check lda service tests benchmarks
	$(PY) -m mypy

bench: $(DEV)
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) -m benchmarks.learner $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
