#!/usr/bin/env bash
# `make compose-up` / `make compose-down`: the stack of docker-compose.yml under the container
# engine this host has, built from the distribution's packages where no registry serves images.
#
#   deploy/compose/compose.sh up      build what is missing or changed, start detached, wait for
#                                     the API on 127.0.0.1:${STREAMLDA_API_PORT:-8000}
#   deploy/compose/compose.sh down    stop and remove the containers; volumes are kept
#                                     (--volumes: remove them too)
#   deploy/compose/compose.sh ps      the project's running containers
#   deploy/compose/compose.sh logs [SERVICE]
#
# Engine: Docker when its daemon answers; else Podman (installed with apt where neither is there)
# through its Docker-compatible socket, served by `podman system service` only while this script
# runs, for docker-compose (or podman-compose where docker-compose is missing). Podman reads the
# project's deploy/compose/containers.conf (CONTAINERS_CONF) unless CONTAINERS_CONF is set.
#
# Images: python:3.11-slim and redis:7-alpine (and prom/prometheus with STREAMLDA_MONITORING=1)
# when the engine has or can pull them; else images built from Debian's packages: a debootstrap
# base, then Python, Redis and Prometheus on it (deploy/compose/images/). STREAMLDA_PYTHON_IMAGE,
# STREAMLDA_REDIS_IMAGE and STREAMLDA_PROMETHEUS_IMAGE choose others. Built images are kept, and
# the engine's layer cache rebuilds only what changed.
#
# Other settings: STREAMLDA_SOURCE (jsonl:HOST_PATH: the file's folder is mounted read-only and
# replayed), STREAMLDA_SCRAPERS (2), STREAMLDA_MONITORING=1 (Prometheus; Grafana where its image
# is available), COMPOSE_PROJECT_NAME (streamlda), STREAMLDA_UP_TIMEOUT (seconds to wait for
# the API, 300). Exit status 3: no container engine here and none installable.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/deploy/compose
STATE=$ROOT/.compose
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-streamlda}
API_PORT=${STREAMLDA_API_PORT:-8000}
SUITE=${STREAMLDA_DEBIAN_SUITE:-bookworm}
MIRROR=${STREAMLDA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
LOCAL_BASE=localhost/streamlda-debian:$SUITE
LOCAL_PYTHON=localhost/streamlda-python:$SUITE
LOCAL_REDIS=localhost/streamlda-redis:$SUITE
LOCAL_PROMETHEUS=localhost/streamlda-prometheus:$SUITE
UNAVAILABLE=3
STARTED=$(date +%s.%N)

ENGINE=""          # docker | podman
COMPOSE=()         # the compose command
SERVICE_PID=""     # podman system service, while this script runs
HEALTH_PID=""      # the healthcheck runner, while `up` waits

say() { printf 'compose: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
since() { awk -v a="$STARTED" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

cleanup() {
  if [ -n "$HEALTH_PID" ]; then kill "$HEALTH_PID" 2>/dev/null || true; wait "$HEALTH_PID" 2>/dev/null || true; fi
  if [ -n "$SERVICE_PID" ]; then kill "$SERVICE_PID" 2>/dev/null || true; wait "$SERVICE_PID" 2>/dev/null || true; fi
  if [ -n "${SOCKET:-}" ]; then rm -f "$SOCKET"; fi
}
trap cleanup EXIT

can_apt() { command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; }

apt_install() {
  say "installing $* (apt)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# ENGINE and COMPOSE: Docker if its daemon answers, else Podman (installed if $1 = install;
# $1 = engine: the engine alone, without compose and Podman's socket).
find_engine() {
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    ENGINE=docker
    [ "$1" = engine ] && return
    if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose)
    elif command -v docker-compose >/dev/null 2>&1; then COMPOSE=(docker-compose)
    elif [ "$1" = install ] && can_apt; then apt_install docker-compose; COMPOSE=(docker-compose)
    else die "Docker answers but has no compose (install docker-compose or the compose plugin)"; fi
    return
  fi
  if ! command -v podman >/dev/null 2>&1 || ! command -v docker-compose >/dev/null 2>&1; then
    if [ "$1" = install ] && can_apt; then
      # runc: crun refuses hybrid cgroups; netavark, aardvark-dns and iptables: the stack's
      # network, where services reach each other by name and the API's port is published
      apt_install podman runc netavark aardvark-dns iptables slirp4netns uidmap fuse-overlayfs \
        docker-compose debootstrap
    fi
  fi
  if ! command -v podman >/dev/null 2>&1; then
    say "no container engine: neither a Docker daemon nor Podman here, and apt cannot install Podman"
    exit "$UNAVAILABLE"
  fi
  ENGINE=podman
  export CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/containers.conf}
  CONTAINERS_CONF=$(realpath "$CONTAINERS_CONF")
  [ "$1" = engine ] && return
  if command -v docker-compose >/dev/null 2>&1; then
    serve_podman
    COMPOSE=(docker-compose)
  elif command -v podman-compose >/dev/null 2>&1; then
    say "docker-compose missing: podman-compose (it neither waits for health nor scales)"
    COMPOSE=(podman-compose)
  else
    die "Podman is here but neither docker-compose nor podman-compose"
  fi
}

# Podman's Docker-compatible API on a socket of this run, for docker-compose; it ends with the
# script (the containers run on under conmon).
serve_podman() {
  mkdir -p "$STATE"
  SOCKET=$STATE/podman-$$.sock
  podman system service --time=0 "unix://$SOCKET" >"$STATE/podman-service.log" 2>&1 &
  SERVICE_PID=$!
  export DOCKER_HOST=unix://$SOCKET
  for _ in $(seq 100); do
    [ -S "$SOCKET" ] && return
    kill -0 "$SERVICE_PID" 2>/dev/null || die "podman system service failed: $(tail -3 "$STATE/podman-service.log")"
    sleep 0.1
  done
  die "podman system service did not open $SOCKET"
}

have_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# True when the image is here or the engine can pull it.
obtain() {
  have_image "$1" && return 0
  say "pulling $1"
  "$ENGINE" pull "$1" >/dev/null 2>&1
}

# The debootstrapped base: Debian's minimal system with CA certificates, the host's own added
# ones included (a TLS-inspecting proxy's), so pip and apt in builds trust what the host trusts.
build_base() {
  have_image "$LOCAL_BASE" && return
  command -v debootstrap >/dev/null 2>&1 || { can_apt && apt_install debootstrap; } \
    || die "debootstrap is needed to build $LOCAL_BASE"
  local rootfs
  rootfs=$(mktemp -d "${TMPDIR:-/tmp}/streamlda-rootfs.XXXXXX")
  say "building $LOCAL_BASE with debootstrap ($SUITE from $MIRROR)"
  if ! debootstrap --variant=minbase --include=ca-certificates,passwd "$SUITE" "$rootfs" "$MIRROR" \
      >"$STATE/debootstrap.log" 2>&1; then
    rm -rf "$rootfs"; die "debootstrap failed: $(tail -3 "$STATE/debootstrap.log")"
  fi
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
    chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  if ! tar -C "$rootfs" -c . | "$ENGINE" import \
      --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
      --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
      --change 'CMD ["bash"]' - "$LOCAL_BASE" >/dev/null 2>"$STATE/import.log"; then
    rm -rf "$rootfs"; die "importing $LOCAL_BASE failed: $(tail -3 "$STATE/import.log")"
  fi
  rm -rf "$rootfs"
}

# A local image from deploy/compose/images/NAME.Dockerfile on the debootstrapped base.
build_local() {
  local name=$1 tag=$2
  build_base
  say "building $tag"
  "$ENGINE" build -q -t "$tag" --build-arg "BASE=$LOCAL_BASE" -f "$HERE/images/$name.Dockerfile" \
    "$HERE/images" >/dev/null
}

# STREAMLDA_<VAR>_IMAGE: the user's, else the registry's (here or pulled), else a local build.
choose_image() {
  local var=$1 registry=$2 name=$3 local_tag=$4
  if [ -n "${!var:-}" ]; then return; fi
  if have_image "$local_tag" && ! have_image "$registry"; then
    export "$var=$local_tag"
  elif obtain "$registry"; then
    export "$var=$registry"
  else
    say "$registry cannot be pulled: using $local_tag, built from Debian's packages"
    have_image "$local_tag" || build_local "$name" "$local_tag"
    export "$var=$local_tag"
  fi
}

# The host's torch wheel for TORCH_SPEC, from pip's find-links, linked into the build context.
local_torch_wheel() {
  [ -n "${STREAMLDA_TORCH_WHEEL:-}" ] && return
  local spec=${STREAMLDA_TORCH_SPEC:-torch==2.13.0} dirs wheel=""
  local version=${spec#torch==}
  dirs="${PIP_FIND_LINKS:-} $(python3 -m pip config get global.find-links 2>/dev/null || true)"
  for dir in $dirs; do
    dir=${dir#file://}
    for candidate in "$dir"/torch-"$version"+cpu-cp311-*.whl; do
      [ -f "$candidate" ] && wheel=$candidate && break 2
    done
  done
  [ -n "$wheel" ] || return 0
  local target
  target=$ROOT/deploy/wheels/$(basename "$wheel")
  if ! cmp -s "$wheel" "$target" 2>/dev/null; then
    ln -f "$wheel" "$target" 2>/dev/null || cp "$wheel" "$target"
  fi
  export STREAMLDA_TORCH_WHEEL
  STREAMLDA_TORCH_WHEEL=$(basename "$wheel")
  say "torch from the local wheel $STREAMLDA_TORCH_WHEEL"
}

# The image of docker-compose.yml's services, with its build arguments, by the engine itself: its
# layer cache rebuilds only what changed, and Podman reads the context in place (docker-compose
# would send all of it through the socket at every run).
build_streamlda() {
  # docker.io/library/: the name compose asks Podman's Docker API for (Docker: streamlda:latest)
  local image=docker.io/library/streamlda:latest args inputs
  args=(--build-arg "PYTHON_IMAGE=$STREAMLDA_PYTHON_IMAGE"
        --build-arg "TORCH_SPEC=${STREAMLDA_TORCH_SPEC:-torch==2.13.0}"
        --build-arg "TORCH_INDEX=${STREAMLDA_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
        --build-arg "TORCH_WHEEL=${STREAMLDA_TORCH_WHEEL:-}")
  # Even a build whose every step is cached takes a minute on two busy cores: skip it when the
  # image was built from these very files, arguments and base (a label on the image says).
  inputs=$( { cd "$ROOT" && find Dockerfile .dockerignore pyproject.toml README.md lda service \
                deploy/warm_kernels.py -type f ! -path '*/__pycache__/*' ! -name '*.pt' -print0 \
                | sort -z | xargs -0 sha256sum
              printf '%s\n' "${args[@]}"; "$ENGINE" image inspect --format '{{.Id}}' "$STREAMLDA_PYTHON_IMAGE"
            } | sha256sum | cut -c1-16)
  if [ "$("$ENGINE" image inspect --format '{{index .Config.Labels "streamlda.inputs"}}' "$image" 2>/dev/null)" = "$inputs" ]; then
    say "streamlda:latest is up to date (inputs $inputs)"
    return
  fi
  say "building streamlda:latest on $STREAMLDA_PYTHON_IMAGE"
  if ! "$ENGINE" build -t "$image" --label "streamlda.inputs=$inputs" "${args[@]}" "$ROOT" \
      >"$STATE/build.log" 2>&1; then
    die "build failed (see $STATE/build.log): $(tail -5 "$STATE/build.log")"
  fi
  say "built after $(since) s"
}

compose_files() {
  FILES=(-f "$ROOT/docker-compose.yml")
  local source=${STREAMLDA_SOURCE:-}
  if [[ $source == jsonl:* ]]; then
    local path=${source#jsonl:}
    [[ $path == /replay/* ]] && return  # already the container's path
    [ -f "$path" ] || die "STREAMLDA_SOURCE: no file $path"
    path=$(cd "$(dirname "$path")" && pwd)/$(basename "$path")
    export STREAMLDA_REPLAY_DIR STREAMLDA_SOURCE
    STREAMLDA_REPLAY_DIR=$(dirname "$path")
    STREAMLDA_SOURCE=jsonl:/replay/$(basename "$path")
    FILES+=(-f "$HERE/replay.yml")
    say "replaying $path (read-only, as $STREAMLDA_SOURCE)"
  fi
}

# Podman schedules healthchecks with systemd timers; without systemd nothing runs them, and
# compose would wait forever for Redis to be healthy. This runs them while `up` waits.
run_healthchecks() {
  [ "$ENGINE" = podman ] && [ ! -d /run/systemd/system ] || return 0
  (
    while :; do
      for id in $(podman ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME"); do
        podman healthcheck run "$id" >/dev/null 2>&1 || true
      done
      sleep 2
    done
  ) &
  HEALTH_PID=$!
}

api_answers() {
  python3 - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=3).read()
EOF
}

up() {
  find_engine install
  mkdir -p "$STATE"
  say "engine: $ENGINE, compose: ${COMPOSE[*]}, project: $COMPOSE_PROJECT_NAME"
  choose_image STREAMLDA_PYTHON_IMAGE python:3.11-slim python "$LOCAL_PYTHON"
  choose_image STREAMLDA_REDIS_IMAGE redis:7-alpine redis "$LOCAL_REDIS"
  local services=(redis scraper worker api) profile=()
  if [ "${STREAMLDA_MONITORING:-0}" = 1 ]; then
    profile=(--profile monitoring)
    choose_image STREAMLDA_PROMETHEUS_IMAGE prom/prometheus:v3.5.0 prometheus "$LOCAL_PROMETHEUS"
    services+=(prometheus)
    if obtain "${STREAMLDA_GRAFANA_IMAGE:-grafana/grafana:12.2.0}"; then
      services+=(grafana)
    else
      say "skipping grafana: its image cannot be pulled here and Debian has no package to build it from"
    fi
  fi
  say "images ready after $(since) s"
  local_torch_wheel
  compose_files
  build_streamlda
  run_healthchecks
  local scale=()
  [ "${COMPOSE[0]}" = podman-compose ] || scale=(--scale "scraper=${STREAMLDA_SCRAPERS:-2}")
  "${COMPOSE[@]}" "${FILES[@]}" "${profile[@]}" up -d --no-build "${scale[@]}" "${services[@]}"
  local url=http://127.0.0.1:$API_PORT/healthz deadline=$(( $(date +%s) + ${STREAMLDA_UP_TIMEOUT:-300} ))
  until api_answers "$url"; do
    [ "$(date +%s)" -lt "$deadline" ] || die "the API did not answer on $url"
    sleep 1
  done
  say "API answering on http://127.0.0.1:$API_PORT after $(since) s"
}

down() {
  if ! command -v podman >/dev/null 2>&1 && ! { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }; then
    say "no container engine here: nothing to stop"
    return
  fi
  find_engine no-install
  local volumes=()
  [ "${1:-}" = --volumes ] && volumes=(--volumes)
  # The anonymous volumes of the image's VOLUME /data (api, scrapers): nothing is kept there,
  # and compose leaves them behind at every `down` unless it removes the named ones too.
  local anonymous=() id
  for id in $("$ENGINE" ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME"); do
    while read -r name; do
      [[ $name =~ ^[0-9a-f]{64}$ ]] && anonymous+=("$name")
    done < <("$ENGINE" inspect "$id" --format '{{range .Mounts}}{{println .Name}}{{end}}')
  done
  # Every profile's services, so that `down` stops Prometheus and Grafana too.
  "${COMPOSE[@]}" -f "$ROOT/docker-compose.yml" --profile monitoring down --remove-orphans "${volumes[@]}"
  if [ "${#anonymous[@]}" -gt 0 ]; then "$ENGINE" volume rm "${anonymous[@]}" >/dev/null 2>&1 || true; fi
  say "stopped after $(since) s"
}

ps_() {
  command -v podman >/dev/null 2>&1 || docker info >/dev/null 2>&1 || return 0
  find_engine engine
  "$ENGINE" ps --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
    --format '{{.Names}} {{.Status}}'
}

logs() {
  find_engine no-install
  "${COMPOSE[@]}" -f "$ROOT/docker-compose.yml" logs --no-color "$@"
}

case "${1:-}" in
  up) up ;;
  down) shift; down "$@" ;;
  ps) ps_ ;;
  logs) shift; logs "$@" ;;
  *) echo "usage: $0 up | down [--volumes] | ps | logs [SERVICE]" >&2; exit 2 ;;
esac
