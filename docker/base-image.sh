#!/usr/bin/env bash
# Build (once) the Debian base images the project's Dockerfiles take as `ARG BASE` where no image
# registry is reachable (tests, CI, an offline host). Prints the image's tag on stdout.
#
#   docker/base-image.sh python   -> allfours-base:<hash>       Debian bookworm minbase + python3, venv
#   docker/base-image.sh node     -> allfours-base-node:<hash>  the above + Debian's nodejs and npm
#
# The python base is made with debootstrap and `docker import`; the node base is built from it with
# apt-get. Each tag is a hash of this file, so a changed package list makes a new image and an
# unchanged one is reused (cached by content). Both have the user 10001 (`bot`) and its group, in which the
# arena's sandbox runs each bot container (as a uid of its own). Needs root, debootstrap, and Debian's
# /usr/bin/docker. Set DEBIAN_MIRROR to use another mirror.
set -euo pipefail
kind="${1:-python}"
DOCKER="${DOCKER:-/usr/bin/docker}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
PACKAGES="python3,python3-venv,ca-certificates"
NODE_PACKAGES="nodejs npm"
hash=$(sha256sum "$0" | cut -c1-12)
base="allfours-base:$hash"
node="allfours-base-node:$hash"
have() { timeout 30 "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

if ! have "$base"; then
  root=$(mktemp -d /tmp/allfours-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "base-image: debootstrap $SUITE ($PACKAGES) from $MIRROR" >&2
  timeout 900 debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; exit 1; }
  rm -f "$root.log"
  chroot "$root" groupadd -g 10001 bot
  chroot "$root" useradd -u 10001 -g 10001 -M -d /tmp -s /usr/sbin/nologin bot
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/debootstrap
  echo "deb $MIRROR $SUITE main" > "$root/etc/apt/sources.list"
  tar -C "$root" --numeric-owner -c . | timeout 300 "$DOCKER" import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    -c 'CMD ["/bin/bash"]' - "$base" >/dev/null
fi
if [ "$kind" = python ]; then echo "$base"; exit 0; fi
[ "$kind" = node ] || { echo "base-image: unknown kind $kind (python or node)" >&2; exit 2; }

if ! have "$node"; then
  echo "base-image: $node (apt-get install $NODE_PACKAGES)" >&2
  printf 'FROM %s\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends %s >/dev/null && rm -rf /var/lib/apt/lists/*\n' \
    "$base" "$NODE_PACKAGES" | timeout 900 "$DOCKER" build -q -t "$node" - >/dev/null
fi
echo "$node"
