# syntax=docker/dockerfile:1
# The statewrightd server image.
#   docker build -t statewright/statewrightd:0.1.0 .
#   docker run -p 50051:50051 statewright/statewrightd:0.1.0      (SQLite in the container)
# `make image` builds this same file with podman, on a base made from Debian's packages
# when the registry's cannot be pulled, with no network (scripts/build-image).
# Kubernetes manifests: k8s/ (the Deployment sets the database URL, probes and limits).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- build: the server and its client package, installed into a virtual environment ------
FROM ${PYTHON_IMAGE} AS build
# A directory of wheels mounted into the build (make image mounts one, for a build with no
# network). Empty: the wheels come from the package index. Either way the lock's hashes
# decide which files are accepted.
ARG WHEELHOUSE=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
# python3, not python: a base of Debian's own packages has no `python` command.
RUN python3 -m venv /opt/statewright
WORKDIR /src
# The dependencies first, in a layer of their own: a change of the server's code reuses it.
# Every dependency comes as a binary wheel, so no compiler is needed, even here.
# cel-expr-python's optional CEL extensions (ext/: strings, math, encoders and more, 37 of
# its 50 MB) are never loaded: the server's CEL environment declares none, and a unit test
# keeps it so.
COPY requirements.lock ./
RUN /opt/statewright/bin/pip install --require-hashes --no-deps --only-binary=:all: \
        ${WHEELHOUSE:+--no-index --find-links "$WHEELHOUSE"} -r requirements.lock \
    && rm -r /opt/statewright/lib/python3.*/site-packages/cel_expr_python/ext
# The generated stubs ship in the client distribution; the server depends on it.
COPY clients/python/ clients/python/
COPY pyproject.toml README.md LICENSE NOTICE ./
COPY service/ service/
# Both distributions are built with the locked setuptools and need nothing else (no
# index, no dependencies); `pip check` fails the build if the lock misses one. pip
# compiles the bytecode now, so a read-only root filesystem costs nothing at run time.
# The installers are then removed: the server never runs them.
RUN /opt/statewright/bin/pip install --no-index --no-deps --no-build-isolation \
        ./clients/python . \
    && /opt/statewright/bin/pip check \
    && /opt/statewright/bin/pip uninstall --yes --quiet setuptools wheel pip

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
# The default SQLite database (no STATEWRIGHT_DATABASE_URL) lives here: the only path the
# server writes to, so the root filesystem can be read-only.
WORKDIR /var/lib/statewright
VOLUME ["/var/lib/statewright"]
USER 10001:10001
EXPOSE 50051 8081 9464
ENTRYPOINT ["statewrightd", "serve"]
