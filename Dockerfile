# minijs: a pure-Python NATS server for tests, as a drop-in for the nats-server image.
#   docker build -t minijs . && docker run -p 4222:4222 -p 8222:8222 -v minijs-data:/data minijs
# Extra nats-server flags replace CMD:  docker run minijs -js -a 0.0.0.0 -p 4222 -m 8222 -DV
# Test control for any language:        docker run -e MINIJS_CONTROL=1 -e MINIJS_CLOCK=virtual ...
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Build from a throwaway copy of the sources; only the installed package stays in the image.
COPY pyproject.toml README.md /tmp/src/
COPY minijs /tmp/src/minijs
RUN pip install /tmp/src && rm -rf /tmp/src

# An unprivileged user owning the store; /data is a volume so streams outlive the container.
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin minijs \
    && mkdir -p /data && chown minijs:minijs /data
USER minijs
WORKDIR /data
VOLUME /data

# 4222: clients, 8222: HTTP monitoring (/varz, /healthz)
EXPOSE 4222 8222

# The slim image has no curl: ask /healthz with the Python that is already there.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8222/healthz', timeout=2)"]

# Exec form: minijs is PID 1 and gets SIGTERM from `docker stop` for a graceful shutdown.
ENTRYPOINT ["minijs"]
CMD ["-js", "-a", "0.0.0.0", "-sd", "/data", "-m", "8222"]
