# Sourced by docker/compose-demo.sh and docker/swarm-demo.sh (docs/deploy.md, "Compose").
#
# compose_build: `docker-compose build`, then remove the image that the stack's tag
# (allfours:${ALLFOURS_VERSION:-dev}) named before, when the build gave the tag to a new one: docker keeps the
# old one, dangling, and each demo run after a code change left about 770 MB on the host's disk. Not forced:
# docker refuses while a container (running or stopped) or another tag uses the old image, and then it stays,
# said in one line with the command that removes it (an upgrade of a running stack: docs/deploy.md,
# "Upgrading"). Needs DOCKER (the docker command). Returns docker-compose build's status.
compose_build() {
  local tag="allfours:${ALLFOURS_VERSION:-dev}" before after
  before=$("$DOCKER" image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  docker-compose build || return
  after=$("$DOCKER" image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    if "$DOCKER" image rm "$before" >/dev/null 2>&1; then
      echo "compose-build: removed the image $tag named before (${before#sha256:})" >&2
    else
      echo "compose-build: kept the image $tag named before (${before#sha256:}): a container or another tag uses it;" \
        "once none does (the stack recreated on the new one): docker image rm ${before#sha256:}" >&2
    fi
  fi
}
