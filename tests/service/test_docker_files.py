"""The Dockerfile and the compose files: structure, and commands that exist in the CLI.

No Docker engine runs here; `docker-compose config -q` (when installed) checks what Compose
itself accepts.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.cli import build_parser
from service.settings import GROUP_OF
from tests.support.compose import compose_config

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_GPU = ROOT / "docker-compose.gpu.yml"
COMPOSE_MULTI_GPU = ROOT / "docker-compose.multigpu.yml"
STREAMLDA_SERVICES = ("scraper", "worker", "api")
# Commands still being written in parallel; remove each once it is registered.
PENDING_COMMANDS: set[str] = set()


def subcommands() -> set[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return set(action.choices)  # type: ignore[arg-type]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            pairs.append((word.upper(), rest.strip()))
    return pairs


def compose(file: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(file.read_text())
    return data


def test_dockerfile_is_multi_stage_with_a_non_root_runtime() -> None:
    instructions = dockerfile_instructions()
    stages = [i for i, (word, _) in enumerate(instructions) if word == "FROM"]
    assert len(stages) >= 2, "a build stage and a runtime stage"
    runtime = instructions[stages[-1] :]
    users = [arg for word, arg in runtime if word == "USER"]
    assert users and users[-1] not in {"root", "0"}, "the runtime stage runs as a non-root user"
    assert any(w == "COPY" and a.startswith("--from=") for w, a in runtime)


def test_dockerfile_builds_cpu_torch_by_default_with_a_cuda_switch() -> None:
    args = dict(
        a.partition("=")[::2] for w, a in dockerfile_instructions() if w == "ARG" and "=" in a
    )
    assert args["TORCH_SPEC"].startswith("torch==")
    assert args["TORCH_INDEX"].endswith("/cpu")
    assert COMPOSE_GPU.is_file() and "cu" in COMPOSE_GPU.read_text()


def test_cuda_image_brings_the_gibbs_kernels_compiler() -> None:
    """The GPU build installs the ``cuda`` extra (numba's CUDA target with NVVM from PyPI):
    torch's CUDA wheels carry no NVVM, and without it the Gibbs sweeps fall back to the CPU."""
    args = dict(
        a.partition("=")[::2] for w, a in dockerfile_instructions() if w == "ARG" and "=" in a
    )
    assert args["EXTRAS"] == "", "the CPU image installs no extra"
    installs = [a for w, a in dockerfile_instructions() if w == "RUN" and 'pip install ".' in a]
    assert installs and "${EXTRAS:+[$EXTRAS]}" in installs[0]
    gpu_args = compose(COMPOSE_GPU)["services"]["worker"]["build"]["args"]
    assert "cuda" in gpu_args["EXTRAS"].split(",")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(r.startswith("numba-cuda[cu12]") for r in extras["optional-dependencies"]["cuda"])


def test_image_entrypoint_and_default_command_are_streamlda_subcommands() -> None:
    instructions = dict(dockerfile_instructions())
    assert json.loads(instructions["ENTRYPOINT"]) == ["streamlda"]
    assert json.loads(instructions["CMD"])[0] in subcommands()


@pytest.mark.parametrize("name", STREAMLDA_SERVICES)
def test_compose_services_run_existing_subcommands(name: str) -> None:
    service = compose(COMPOSE)["services"][name]
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    command = service["command"][0]
    if command in PENDING_COMMANDS and command not in subcommands():
        pytest.xfail(f"`streamlda {command}` is not registered yet")
    assert command in subcommands(), f"{name}: `streamlda {command}` is not a command"


def test_compose_environment_names_real_settings() -> None:
    services = compose(COMPOSE)["services"]
    for name in STREAMLDA_SERVICES:
        for variable in services[name]["environment"]:
            assert variable.startswith("STREAMLDA_")
            field = variable.removeprefix("STREAMLDA_").lower()
            assert field in GROUP_OF, f"{name}: {variable} is no setting"


def test_redis_persists_and_reports_health() -> None:
    spec = compose(COMPOSE)
    redis = spec["services"]["redis"]
    assert "--appendonly" in redis["command"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert "redis-cli" in redis["healthcheck"]["test"] and "ping" in redis["healthcheck"]["test"]
    volume = redis["volumes"][0].split(":")[0]
    assert volume in spec["volumes"]


def test_scraper_can_be_scaled() -> None:
    scraper = compose(COMPOSE)["services"]["scraper"]
    assert "container_name" not in scraper and "ports" not in scraper


def test_worker_keeps_checkpoints_in_a_named_volume() -> None:
    spec = compose(COMPOSE)
    worker = spec["services"]["worker"]
    data_dir = worker["environment"]["STREAMLDA_DATA_DIR"]
    volume, target = worker["volumes"][0].split(":")[:2]
    assert target == data_dir and volume in spec["volumes"]


def test_worker_gpu_reservation_is_an_override() -> None:
    assert "deploy" not in compose(COMPOSE)["services"]["worker"], "plain `up` must run on CPU"
    worker = compose(COMPOSE_GPU)["services"]["worker"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert worker["environment"]["STREAMLDA_DEVICE"] == "cuda"


def test_api_publishes_port_8000_with_a_python_healthcheck() -> None:
    api = compose(COMPOSE)["services"]["api"]
    assert any(str(p).endswith(":8000") for p in api["ports"])
    test = api["healthcheck"]["test"]
    assert "python" in test and any("/healthz" in part for part in test)


def test_multi_gpu_override_runs_the_worker_command_under_torchrun() -> None:
    worker = compose(COMPOSE_MULTI_GPU)["services"]["worker"]
    entrypoint = worker["entrypoint"]
    assert entrypoint[:3] == ["python", "-m", "torch.distributed.run"]
    assert entrypoint[-2:] == ["-m", "service"] and worker["command"] == ["worker"]
    assert any(part.startswith("--nproc-per-node=") for part in entrypoint)


@pytest.mark.slow
@pytest.mark.parametrize(
    "files",
    [[COMPOSE], [COMPOSE, COMPOSE_GPU], [COMPOSE, COMPOSE_GPU, COMPOSE_MULTI_GPU]],
    ids=["cpu", "gpu", "multi-gpu"],
)
def test_compose_config_is_accepted(files: list[Path]) -> None:
    result = compose_config(files)
    assert result.returncode == 0, result.stderr


def test_api_runs_several_processes() -> None:
    """The API is stateless over Redis: compose runs it as several processes on its port."""
    environment = compose(COMPOSE)["services"]["api"]["environment"]
    assert int(str(environment["STREAMLDA_API_WORKERS"]).split(":-")[-1].rstrip("}")) >= 2
