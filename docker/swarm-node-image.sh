#!/usr/bin/env bash
# A Swarm node as a container: several machines on one (tests/test_docker_compose.py; docs/deploy.md,
# "Several machines"). The Debian base of docker/base-image.sh (python) with Debian's docker.io and
# iptables; run it privileged (or, where the daemon cannot give every capability, with the ones it
# can, seccomp/apparmor/systempaths unconfined and /sys/fs/cgroup mounted: tests/test_docker_compose.py),
# with a volume on /var/lib/docker, and it starts its own dockerd (--no-new-privileges, as
# scripts/setup.d/10-docker.sh starts the host's). Prints the image's tag,
# a hash of this file and of the base: built once, then reused. Needs root and Debian's /usr/bin/docker.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER="${DOCKER:-/usr/bin/docker}"
base=$(bash docker/base-image.sh python)
tag="allfours-swarm-node:$( { cat docker/swarm-node-image.sh; echo "$base"; } | sha256sum | cut -c1-12)"
if ! timeout 30 "$DOCKER" image inspect "$tag" >/dev/null 2>&1; then
  echo "swarm-node-image: $tag (apt-get install docker.io iptables)" >&2
  printf '%s\n' \
    "FROM $base" \
    "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io iptables procps >/dev/null && rm -rf /var/lib/apt/lists/*" \
    "VOLUME /var/lib/docker" \
    'CMD ["dockerd", "--no-new-privileges", "--host", "unix:///var/run/docker.sock"]' \
    | timeout 900 "$DOCKER" build -q -t "$tag" - >/dev/null
fi
echo "$tag"
