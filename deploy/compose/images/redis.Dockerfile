# Redis where no registry serves redis:7-alpine: Debian's redis-server (7.0 on bookworm) on the
# debootstrapped base. As in the official image, the server runs as `redis` in /data (where the
# append-only file goes, the compose file's volume); redis-cli serves the healthcheck.
ARG BASE=localhost/streamlda-debian:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       redis-server >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
VOLUME ["/data"]
EXPOSE 6379
CMD ["redis-server"]
