# syntax=docker/dockerfile:1
# The statewrightd server image.
#   docker build -t statewright/statewrightd:0.1.0 .
#   docker run -p 50051:50051 statewright/statewrightd:0.1.0      (SQLite in the container)
# Kubernetes manifests: k8s/ (the Deployment sets the database URL, probes and limits).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- build: the server and its client package, installed into a virtual environment ------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/statewright
WORKDIR /src
# The generated stubs ship in the client distribution; the server depends on it.
COPY clients/python/ clients/python/
COPY pyproject.toml README.md ./
COPY service/ service/
# Every dependency comes as a binary wheel: no compiler is needed, even here. pip
# compiles the bytecode now, so a read-only root filesystem costs nothing at run time.
RUN /opt/statewright/bin/pip install ./clients/python .

# -- runtime: the virtual environment on a slim Python, run by an unprivileged user ------
FROM ${PYTHON_IMAGE} AS runtime
# A numeric id, so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
RUN groupadd --system --gid 10001 statewright \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /var/lib/statewright --shell /usr/sbin/nologin statewright \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/statewright
COPY --from=build /opt/statewright /opt/statewright
COPY examples/definitions/ /etc/statewright/definitions/
ENV PATH=/opt/statewright/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    STATEWRIGHT_LISTEN=0.0.0.0:50051 \
    STATEWRIGHT_DEFINITIONS=/etc/statewright/definitions
# The default SQLite database (no STATEWRIGHT_DATABASE_URL) lives here.
WORKDIR /var/lib/statewright
USER 10001:10001
EXPOSE 50051 9464
ENTRYPOINT ["statewrightd", "serve"]
