# The project's image: the referee (`referee serve`) and the arena (`arena run`), with the sample bots
# (Python and Node.js) for the demo. compose.yaml builds it; context: the repository's root.
# BASE: a Debian-like image with python3 >= 3.11 and its venv module (default: the official one, to
# which Debian's nodejs and npm are added; offline: `docker/base-image.sh node`, which has them).
# docker/build-ca.pem, if present, is the CA bundle pip and npm trust during the build (copy the
# host's there behind a TLS-intercepting proxy; it is git-ignored).
ARG BASE=python:3.11-slim
FROM ${BASE}
COPY docker/base-image.sh docker/build-ca.pe[m] /tmp/build/
RUN if ! command -v node >/dev/null; then \
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm \
      >/dev/null && rm -rf /var/lib/apt/lists/*; fi
COPY pyproject.toml README.md /src/
COPY allfours /src/allfours
COPY referee /src/referee
COPY sdk /src/sdk
COPY arena /src/arena
COPY sample_bots /src/sample_bots
COPY proto /src/proto
RUN set -e; if [ -f /tmp/build/build-ca.pem ]; then export PIP_CERT=/tmp/build/build-ca.pem \
      NPM_CONFIG_CAFILE=/tmp/build/build-ca.pem; fi; \
    python3 -m venv /opt/venv \
 && PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 /opt/venv/bin/pip install -q /src \
 && cd /src/sample_bots/js && rm -rf node_modules && npm ci --omit=dev --no-audit --no-fund --loglevel=error \
 && rm -rf /tmp/build /root/.npm /root/.cache
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /src
EXPOSE 50051 9100
CMD ["referee", "serve", "--host", "0.0.0.0", "--port", "50051"]
