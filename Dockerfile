# The referee, built from this repository. Storage: the Redis named by REDIS_URL (docker-compose.yml runs one).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

# dependencies first (a layer that changes only with pyproject.toml), then the code. The runtime only: no extra
# (no dev tools, no tournament chart or progress bar).
COPY pyproject.toml README.md ./
RUN mkdir engine server clients rummy_pb wire && pip install . && pip uninstall -y rummy-referee
COPY engine engine
COPY server server
COPY clients clients
COPY rummy_pb rummy_pb
COPY wire wire
RUN pip install --no-deps . && rm -rf build *.egg-info

USER nobody
EXPOSE 50051 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 CMD ["rummy-referee", "health"]
# SIGTERM: NOT_SERVING, watch streams end, calls in flight get --grace seconds (keep it under the stop timeout)
STOPSIGNAL SIGTERM
ENTRYPOINT ["rummy-referee", "serve", "--host", "0.0.0.0", "--port", "50051", "--http-port", "8080", "--grace", "10"]
