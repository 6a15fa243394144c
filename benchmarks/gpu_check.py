"""The GPU check in one call: the device, the CUDA kernels' tests on it, the kernels and the
learner timed against the CPU's, and ``streamlda up`` on the GPU (how to run it:
benchmarks/GPU_CHECK.md; why it is shaped so: docs/gpu.md).

``run`` (the default) starts each part in its own process under its own time limit, so a part
that fails or hangs is reported with the end of its output and the rest still run; it writes
JSON lines and a short summary to ``$OUT`` (or ``--out``), or to stdout when neither is set,
and exits 0 once it reaches the end. ``--dry-run`` runs the same parts on the CPU at tiny sizes,
the kernels under numba's CUDA simulator, to catch a broken script before a GPU is at hand.
``bundle`` (run before a sitting, where PyPI is reachable) fills ``.gpu/`` with the wheels the
GPU machine lacks and the DEV data the parts read. The orchestrator itself needs only the
standard library: the install part brings the rest. The parts are ``gpu_setup`` (install,
device, tests), ``gpu_timing`` (kernels, learner) and ``gpu_up``, each handed a
``gpu_context.Context``; ``gpu_summary`` writes the summary, ``gpu_bundle`` the bundle.

    bash benchmarks/gpu_bundle.sh             # here: .gpu/wheels and .gpu/data
    bash benchmarks/gpu_check.sh              # on the GPU machine
    bash benchmarks/gpu_check.sh --dry-run    # here, under the simulator
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, SHARED
from benchmarks.gpu_bundle import bundle
from benchmarks.gpu_context import DRY, GRACE_S, REAL, TAIL_CHARS, Context, PartFailed
from benchmarks.gpu_setup import part_device, part_install, part_tests
from benchmarks.gpu_summary import summary
from benchmarks.gpu_timing import part_kernels, part_learner
from benchmarks.gpu_up import part_up

BUNDLE = REPO / ".gpu"
RESULTS = "gpu_check.jsonl"
SUMMARY = "summary.txt"


# ---- the parts and their limits ---------------------------------------------------------------


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
    """One part as ``python -m benchmarks.gpu_check part NAME`` in its own session (a timeout
    ends its whole process group: up's Redis and children too); its status line."""
    results = folder / "parts" / f"{part.name}.jsonl"
    results.parent.mkdir(exist_ok=True)
    results.write_text("")
    log = folder / "logs" / f"{part.name}.log"
    command = [
        args.python, "-m", "benchmarks.gpu_check", "part", part.name,
        "--results", str(results), "--bundle", str(bundle), "--data", str(data),
        "--logs", str(folder / "logs"), "--budget", str(max(1.0, limit - GRACE_S)),
    ]  # fmt: skip
    if args.dry_run:
        command.append("--dry-run")
    start = time.monotonic()
    timed_out = False
    with log.open("wb") as out:
        child = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
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
    paths = [str(REPO), str(bundle / "site"), env.get("PYTHONPATH", "")]
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


# ---- one part, in its own process -------------------------------------------------------------


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
