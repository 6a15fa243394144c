# Prometheus where no registry serves prom/prometheus: Debian's package (2.42 on bookworm) on the
# debootstrapped base, run as the official image runs it: the binary as entrypoint, as a
# non-root user, its data in /prometheus (the compose file's volume).
ARG BASE=localhost/streamlda-debian:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       prometheus >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
USER prometheus
WORKDIR /prometheus
VOLUME ["/prometheus"]
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
