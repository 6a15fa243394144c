"""The CUDA Gibbs kernel's resource report without a GPU: registers, spills and shared memory.

Compiles both scans of ``lda/gibbs/dense_cuda.py`` to PTX for ``--cc`` (default sm_90, the H100)
with numba's CUDA target and assembles them with ``ptxas -v`` (the ``cuda`` extra's nvcc wheel
ships it; else ``ptxas`` on PATH or under CUDA_HOME), then again under each ``--caps``
register cap, printing registers per thread, spill bytes, the blocks per SM the registers allow
at ``--threads`` and the shared memory per block at ``--topics``. Costs no device time: what
BENCHMARKS.md's "Read from the compiler" reports.

    .venv/bin/python -m benchmarks.ptx_report
    .venv/bin/python -m benchmarks.ptx_report --cc 8.0 --caps 128,64 --topics 200 --threads 128
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REGISTERS_PER_SM = 65536  # sm_70 to sm_90
MAX_BLOCKS_PER_SM = 32  # sm_80 and sm_90 (sm_86/89: 16)


def find_ptxas() -> str:
    """ptxas from the nvcc wheel, PATH or CUDA_HOME; exits saying why when there is none."""
    try:
        import nvidia.cuda_nvcc  # type: ignore[import-not-found]

        for root in nvidia.cuda_nvcc.__path__:
            candidate = Path(root) / "bin" / "ptxas"
            if candidate.is_file():
                return str(candidate)
    except ImportError:
        pass
    found = shutil.which("ptxas")
    home = os.environ.get("CUDA_HOME")
    if found is None and home and (Path(home) / "bin" / "ptxas").is_file():
        found = str(Path(home) / "bin" / "ptxas")
    if found is None:
        raise SystemExit("error: no ptxas: install the cuda extra (pip install -e '.[cuda]')")
    return found


def compile_ptx(cc: tuple[int, int]) -> dict[str, str]:
    """PTX of the kernel with each scan, compiled for ``cc`` whatever GPU (if any) is here."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise SystemExit("error: NUMBA_ENABLE_CUDASIM=1: the simulator compiles nothing")
    from numba import cuda
    from numba.cuda import dispatcher

    from lda.gibbs import dense_cuda as gibbs_cuda

    # Device functions compile for the current device's compute capability: name ``cc``.
    device = type("Device", (), {"compute_capability": cc})
    dispatcher.get_current_device = lambda: device  # type: ignore[attr-defined]
    out = {}
    for name, scan in (("shared", gibbs_cuda._scan_shared), ("warp", gibbs_cuda._scan_warp)):
        kernel = gibbs_cuda._build(scan).py_func
        out[name], _ = cuda.compile_ptx(kernel, gibbs_cuda.kernel_signature(), cc=cc)
    return out


def assemble(ptxas: str, ptx: str, cc: tuple[int, int], cap: int | None) -> dict[str, int]:
    """Registers, spill stores and loads (bytes) that ``ptxas -v`` reports."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        command = [ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", str(source), "-o", os.devnull]
        if cap is not None:
            command.append(f"--maxrregcount={cap}")
        report = subprocess.run(command, capture_output=True, text=True, check=True).stderr
    numbers = {
        "registers": r"Used (\d+) registers",
        "spill_stores": r"(\d+) bytes spill stores",
        "spill_loads": r"(\d+) bytes spill loads",
    }
    return {
        key: int(m.group(1)) if (m := re.search(rx, report)) else 0 for key, rx in numbers.items()
    }


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--cc", default="9.0", help="compute capability (9.0: H100, H200)")
    p.add_argument("--caps", default="128,96,64", help="register caps to try, comma list")
    p.add_argument("--topics", type=int, default=50, help="K, for the shared memory")
    p.add_argument("--threads", type=int, default=None, help="per block (default: the kernel's)")
    args = p.parse_args(argv)
    major, minor = (int(x) for x in args.cc.split("."))
    cc = (major, minor)
    from lda.gibbs import dense_cuda as gibbs_cuda

    threads = args.threads or gibbs_cuda.default_threads(args.topics)
    ptxas = find_ptxas()
    print(
        f"sm_{major}{minor}, {threads} threads per block, K = {args.topics}: "
        f"{gibbs_cuda.shared_bytes(args.topics, threads)} B shared memory per block; {ptxas}"
    )
    print(
        f"{'scan':>6} {'cap':>5} {'registers':>9} {'spill st':>9} {'spill ld':>9} {'blocks/SM':>9}"
    )
    caps: list[int | None] = [None, *(int(c) for c in args.caps.split(",") if c.strip())]
    for name, ptx in compile_ptx(cc).items():
        for cap in caps:
            r = assemble(ptxas, ptx, cc, cap)
            # registers are allocated per warp in units of 256
            per_warp = -(-r["registers"] * 32 // 256) * 256
            warps = -(-threads // 32)
            blocks = min(MAX_BLOCKS_PER_SM, REGISTERS_PER_SM // (per_warp * warps))
            print(
                f"{name:>6} {cap or '-':>5} {r['registers']:>9} {r['spill_stores']:>9} "
                f"{r['spill_loads']:>9} {blocks:>9}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
