#!/usr/bin/env bash
# The GPU check in one call (benchmarks/gpu_check.py; how to run it: benchmarks/GPU_CHECK.md;
# why it is shaped so: docs/gpu.md). On a bare GPU machine with
# Python 3.12, torch's CUDA build, numba and numba-cuda, and nothing else the project needs:
#
#   1. here, before the sitting:  bash benchmarks/gpu_bundle.sh   (wheels and DEV data in .gpu/)
#   2. the device tool:           command "bash benchmarks/gpu_check.sh", carry [".gpu"],
#                                 timeout_s 540 (the parts' limits add up to 460 s)
#
# Its first part installs .gpu/wheels offline into .gpu/site, which every part has on its
# PYTHONPATH with this checkout (no pip install into the machine's Python):
#
#   python3 -m pip install --no-index --find-links .gpu/wheels --target .gpu/site \
#       -r .gpu/requirements.txt
#
# Then: device and versions, the CUDA kernels' tests on the device, the kernels against the
# CPU's, the learner on cuda against the CPU, streamlda up on the GPU for a minute. Results go
# to $OUT (gpu_check.jsonl, summary.txt, logs/) or, without $OUT, to stdout. It exits 0 when it
# reaches the end; the summary names the parts that failed.
#
#   bash benchmarks/gpu_check.sh --dry-run   # here: tiny sizes on the CPU, numba's simulator
#
# PYTHON picks the interpreter; by default .venv/bin/python for a dry run, and on a GPU the
# first of python3.12, python3, python that has torch (the wheels are for CPython 3.12).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  for arg in "$@"; do
    if [ "$arg" = --dry-run ] && [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; fi
  done
fi
if [ -z "${PYTHON:-}" ]; then
  for candidate in python3.12 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c \
        'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)'; then
      PYTHON=$candidate
      break
    fi
  done
fi
exec "${PYTHON:-python3}" -m benchmarks.gpu_check run "$@"
