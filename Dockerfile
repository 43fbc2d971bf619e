# minijs: a pure-Python NATS server for tests, as a drop-in for the nats-server image.
#   docker build -t minijs . && docker run -p 4222:4222 -p 8222:8222 -v minijs-data:/data minijs
# Extra nats-server flags replace CMD:  docker run minijs -js -a 0.0.0.0 -p 4222 -m 8222 -DV
# Test control for any language:        docker run -e MINIJS_CONTROL=1 -e MINIJS_CLOCK=virtual ...
# State created at start:               docker run -v $PWD/state.json:/state.json:ro \
#                                           -e MINIJS_PRELOAD=/state.json ...
#
# Settings from the environment: MINIJS_CONTROL=1 (serve the $MINIJS control plane),
# MINIJS_CLOCK=wall|virtual|auto (server time), MINIJS_PRELOAD=FILE (streams, KV buckets,
# consumers and messages created before "Server is ready"; a refused entry stops the start),
# MINIJS_PORTS_DIR (where the healthcheck finds the ports file; the entrypoint writes it to
# /tmp/minijs).
#
# The base image is pinned by version; pin it by digest too where you build
# (FROM python:3.11.7-slim-bookworm@sha256:...), as the registry that serves it is not reachable
# from minijs's own build machines.
FROM python:3.11.7-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MINIJS_PORTS_DIR=/tmp/minijs

# Build from a throwaway copy of the sources; only the installed package stays in the image.
# Runtime dependencies come pinned from docker/constraints.txt.
COPY pyproject.toml README.md /tmp/src/
COPY docker/constraints.txt /tmp/src/docker/
COPY minijs /tmp/src/minijs
RUN pip install -c /tmp/src/docker/constraints.txt /tmp/src && rm -rf /tmp/src

# An unprivileged user owning the store; /data is a volume so streams outlive the container.
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin minijs \
    && mkdir -p /data /tmp/minijs && chown minijs:minijs /data /tmp/minijs
USER minijs
WORKDIR /data
VOLUME /data

# 4222: clients, 8222: HTTP monitoring (/varz, /healthz)
EXPOSE 4222 8222

# The healthcheck reads the ports file the server writes, so it follows whatever -p and -m say:
# /healthz when monitoring is on, else the client port's INFO.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-m", "minijs.healthcheck"]

# Exec form: minijs is PID 1 and gets SIGTERM from `docker stop` for a graceful shutdown.
ENTRYPOINT ["minijs", "--ports_file_dir", "/tmp/minijs"]
CMD ["-js", "-a", "0.0.0.0", "-sd", "/data", "-m", "8222"]
