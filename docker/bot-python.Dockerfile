# A Python bot's image (made by `arena bots build DIR`, which assembles the build context):
#   bot/                   the bot's folder (requirements.txt optional; the entry module:Class inside)
#   allfours/              the SDK's packages (sdk, referee, allfours stubs), put on PYTHONPATH
#   sdk-requirements.txt   the SDK's own dependencies (grpcio, protobuf), pinned like the project's
#   bot-requirements.txt   the bot's requirements.txt, or empty when it has none (a COPY of an optional
#                          file by wildcard fails on Docker 20.10: "no source files were specified")
#   build-ca.pem           the CA bundle pip trusts during the build (the host's; needed behind a
#                          TLS-intercepting proxy, harmless elsewhere)
# BASE: any Debian-like image with python3 >= 3.11 and its venv module (default: the official one; the
# tests pass a base made with debootstrap, docker/base-image.sh). BOT_ENTRY: module:Class.
# The container runs `python -m sdk.run BOT_ENTRY [ARGS]` as user 10001 (the arena's sandbox: a uid of its own
# in group 10001); the arena passes the ticket and the referee in ALLFOURS_TICKET and ALLFOURS_REFEREE.
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG BOT_ENTRY
COPY build-ca.pem sdk-requirements.txt bot-requirements.txt /tmp/build/
RUN test -n "${BOT_ENTRY}" || { echo "BOT_ENTRY (module:Class) is required" >&2; exit 1; } \
 && python3 -m venv /opt/venv \
 && PIP_CERT=/tmp/build/build-ca.pem PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    /opt/venv/bin/pip install -q -r /tmp/build/sdk-requirements.txt \
 && if grep -q '[^[:space:]]' /tmp/build/bot-requirements.txt; then \
      PIP_CERT=/tmp/build/build-ca.pem PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
      /opt/venv/bin/pip install -q -r /tmp/build/bot-requirements.txt; fi \
 && rm -rf /tmp/build
COPY allfours /opt/allfours
COPY bot /opt/bot
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONPATH=/opt/bot:/opt/allfours \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    ALLFOURS_BOT=${BOT_ENTRY}
WORKDIR /opt/bot
USER 10001:10001
ENTRYPOINT ["/bin/sh", "-c", "exec python -m sdk.run \"$ALLFOURS_BOT\" \"$@\"", "bot"]
