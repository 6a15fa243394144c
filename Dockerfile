# streamlda: one image for every role (scrape, worker, api, up); the role is the command.
#
#   docker build -t streamlda .                                   # CPU torch (default)
#   docker build -t streamlda:cuda --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 \
#       --build-arg EXTRAS=cuda .
#
# CUDA wheels of torch bundle their CUDA runtime, and the `cuda` extra brings numba's CUDA target
# with NVVM from PyPI (the Gibbs kernel's compiler), so the same slim base serves both builds; the
# host needs only the NVIDIA driver and container toolkit (see docker-compose.gpu.yml).

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_SPEC=torch==2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# Optional extras of the project, comma-separated (cuda: the CUDA Gibbs kernel's compiler).
ARG EXTRAS=
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# torch first, from its own index, so the project's install below keeps this build.
RUN pip install "${TORCH_SPEC}" --index-url "${TORCH_INDEX}"
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
VOLUME ["/data"]
EXPOSE 8000
ENTRYPOINT ["streamlda"]
CMD ["api"]
