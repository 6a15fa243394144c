# The Python base of the streamlda image where no registry serves python:3.11-slim: Debian's
# python3 (3.11 on bookworm) on the debootstrapped base, with `python` and venv as the slim
# image has them (the Dockerfile runs `python -m venv`, groupadd and useradd).
ARG BASE=localhost/streamlda-debian:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       python3 python3-venv python-is-python3 >/dev/null \
    && rm -rf /var/lib/apt/lists/*
CMD ["python"]
