# streamlda: one image for every role (scrape, worker, api, up); the role is the command.
#
#   docker build -t streamlda .                                   # CPU torch (default)
#   docker build -t streamlda:cuda --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 \
#       --build-arg EXTRAS=cuda .
#
# CUDA wheels of torch bundle their CUDA runtime, and the `cuda` extra brings numba's CUDA target
# with NVVM from PyPI (the Gibbs kernel's compiler), so the same slim base serves both builds; the
# host needs only the NVIDIA driver and container toolkit (see docker-compose.gpu.yml).
#
# Without a registry (`make compose-up` on such a host), PYTHON_IMAGE names a local Debian image
# and TORCH_WHEEL a torch wheel file the build finds in deploy/wheels/ (deploy/compose/compose.sh).

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_SPEC=torch==2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# A wheel file in deploy/wheels/ installed instead of TORCH_SPEC from TORCH_INDEX (empty: none),
# so a host that has torch's CPU wheel at hand neither downloads it nor needs its index.
ARG TORCH_WHEEL=
# Optional extras of the project, comma-separated (cuda: the CUDA Gibbs kernel's compiler).
ARG EXTRAS=
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# torch first, from its own index (or the wheel given), so the project's install keeps this build.
COPY deploy/wheels/ /wheels/
RUN if [ -n "${TORCH_WHEEL}" ]; then pip install "/wheels/${TORCH_WHEEL}"; \
    else pip install "${TORCH_SPEC}" --index-url "${TORCH_INDEX}"; fi
WORKDIR /src
COPY pyproject.toml README.md ./
COPY lda ./lda
COPY service ./service
# swagger-ui-py ships Swagger UI's files, so /docs works without internet.
RUN pip install ".${EXTRAS:+[$EXTRAS]}" swagger-ui-py

FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    STREAMLDA_DATA_DIR=/data \
    STREAMLDA_HOST=0.0.0.0 \
    STREAMLDA_PORT=8000
RUN groupadd --system --gid 10001 streamlda \
    && useradd --system --uid 10001 --gid streamlda --home-dir /home/streamlda --create-home streamlda \
    && mkdir -p /data && chown streamlda:streamlda /data
COPY --from=build /opt/venv /opt/venv
USER streamlda
WORKDIR /home/streamlda
# numba compiles its kernels on first use (a minute on two cores, at every container start, as a
# container's cache goes with it): compile them once here, into the image's cache.
ENV NUMBA_CACHE_DIR=/home/streamlda/.cache/numba
COPY deploy/warm_kernels.py /tmp/warm_kernels.py
RUN python /tmp/warm_kernels.py
VOLUME ["/data"]
EXPOSE 8000
ENTRYPOINT ["streamlda"]
CMD ["api"]
