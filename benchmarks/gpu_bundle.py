"""The GPU check's bundle, filled before a sitting where PyPI is reachable: wheels of what the
GPU machine lacks for CPython 3.12 on manylinux x86-64, two DEV shards and both vocabularies
(benchmarks/GPU_CHECK.md)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.common import REPO, stream_vocabulary
from benchmarks.gpu_context import BIG_VOCAB, BIG_VOCAB_DOCS, SHARDS

# What the GPU machine already has (torch's CUDA build, numba, scipy): never bundled, so the
# wheels cannot shadow the builds that torch and numba were made for.
PROVIDED = {"torch", "numpy", "numba", "scipy"}


WHEEL_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64")


def requirements() -> list[str]:
    """The project's dependencies the GPU machine lacks (pyproject.toml less PROVIDED), and
    pytest for the kernels' tests."""
    import re
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
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
        stream_vocabulary(corpora, BIG_VOCAB, BIG_VOCAB_DOCS).save(big)
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
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    names = [n for n in listing.stdout.decode().split("\0") if n]
    return sum((REPO / n).stat().st_size for n in names if (REPO / n).is_file())
