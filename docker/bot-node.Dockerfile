# A Node.js bot's image (made by `arena bots build DIR`, which assembles the build context):
#   bot/           the bot's folder: package.json (+ package-lock.json: then `npm ci`) and its entry file
#   proto/         the protocol's .proto files (the bot finds them through ALLFOURS_PROTO_DIR)
#   build-ca.pem   the CA bundle npm trusts during the build (the host's; needed behind a
#                  TLS-intercepting proxy, harmless elsewhere)
# BASE: any Debian-like image with node >= 18 and npm (default: the official one; the tests pass a base
# made from Debian packages, docker/base-image.sh node). BOT_ENTRY: the entry file (package.json "main").
# The container runs `node BOT_ENTRY [ARGS]` as user 10001 (the arena's sandbox: a uid of its own in group
# 10001); the arena passes the ticket and the referee in ALLFOURS_TICKET and ALLFOURS_REFEREE.
ARG BASE=node:20-slim
FROM ${BASE}
ARG BOT_ENTRY=index.js
COPY build-ca.pem /tmp/build/
COPY proto /opt/allfours/proto
COPY bot /opt/bot
WORKDIR /opt/bot
RUN rm -rf node_modules \
 && if [ -f package-lock.json ]; then verb=ci; else verb=install; fi \
 && NPM_CONFIG_CAFILE=/tmp/build/build-ca.pem npm "$verb" --omit=dev --no-audit --no-fund --loglevel=error \
 && rm -rf /tmp/build /root/.npm
ENV ALLFOURS_PROTO_DIR=/opt/allfours/proto \
    NODE_ENV=production \
    HOME=/tmp \
    ALLFOURS_BOT=${BOT_ENTRY}
USER 10001:10001
ENTRYPOINT ["/bin/sh", "-c", "exec node \"$ALLFOURS_BOT\" \"$@\"", "bot"]
