#!/usr/bin/env bash
# The compose demo as a Swarm stack, from a fresh clone, with no image registry (docs/deploy.md,
# "Docker Swarm"): tokens, base image, build, the results folder, deploy, follow, tear down.
# Exits with the arena's exit status (1 when a task is rejected or the arena never finishes).
#
#   docker/swarm-demo.sh              # on a swarm manager; on a node in no swarm: swarm init first
#
# Environment (all optional):
#   ALLFOURS_STACK        the stack's name (default allfours)
#   ALLFOURS_RESULTS      the results folder on the arena's node (default ./arena-out/compose); made here
#   ALLFOURS_BASE         the base image (default: docker/base-image.sh node, no registry)
#   ALLFOURS_SWARM_ADDR   --advertise-addr of `docker swarm init` when this node is in no swarm
#                         (default 127.0.0.1: a one-node swarm); the script then leaves it at the end
#   ALLFOURS_SKIP_BUILD=1 use the images already on the nodes (several machines: docs/deploy.md)
#   ALLFOURS_WAIT_S       the longest wait for the arena's task to finish (default 1800)
#   ALLFOURS_COMPOSE_FILES extra compose files merged onto compose.yaml (`-c` each; e.g. placement)
#   ALLFOURS_ADMIN_TOKEN, ALLFOURS_TOKEN_{RANDOM,HEURISTIC,NODEJS}  the tokens (default: drawn here)
#   ALLFOURS_SECRETS      the folder of the token files (default: a private one made and removed here)
#
# `docker stack deploy` reports success even when the swarm rejects a task (a bind-mount source that
# does not exist on the node, an image missing there): this script watches the stack's tasks and
# reports every rejected task, with the swarm's error, as a failure. Teardown (`docker stack rm`,
# waiting for its containers and network to go) runs on success, on failure and on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER="${DOCKER:-/usr/bin/docker}"
STACK="${ALLFOURS_STACK:-allfours}"
WAIT_S="${ALLFOURS_WAIT_S:-1800}"
say() { echo "swarm-demo: $*" >&2; }

# the tokens as files for the stack's secrets (the swarm keeps them encrypted and mounts them only in
# the tasks that name them; nothing in any service's environment): docker/secrets.sh
. docker/secrets.sh
. docker/compose-build.sh
trap secrets_cleanup EXIT  # until the teardown trap below takes over
results="${ALLFOURS_RESULTS:-$PWD/arena-out/compose}"
mkdir -p "$results"  # the bind mount's source must exist on the arena's node, or its task is rejected
ALLFOURS_RESULTS="$(cd "$results" && pwd)"
export ALLFOURS_RESULTS
results_sed=$(printf '%s' "$ALLFOURS_RESULTS" | sed 's/[\\|&]/\\&/g')
if [ "${ALLFOURS_SKIP_BUILD:-}" != 1 ]; then
  ALLFOURS_BASE="${ALLFOURS_BASE:-$(bash docker/base-image.sh node)}"
  export ALLFOURS_BASE
  [ -e docker/build-ca.pem ] || cp /etc/ssl/certs/ca-certificates.crt docker/build-ca.pem
  compose_build  # docker/compose-build.sh: the image it replaces removed
fi

inited=""
gwbridge=""  # swarm init makes the bridge docker_gwbridge, which swarm leave keeps: removed if made here
if [ "$("$DOCKER" info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
  "$DOCKER" network inspect docker_gwbridge >/dev/null 2>&1 || gwbridge=1
  addr="${ALLFOURS_SWARM_ADDR:-127.0.0.1}"
  say "this node is in no swarm: docker swarm init --advertise-addr $addr"
  "$DOCKER" swarm init --advertise-addr "$addr" --listen-addr "$addr:2377" >/dev/null
  inited=1
fi

follow=""
teardown() {
  status=$?
  trap - EXIT INT TERM
  if [ -n "$follow" ]; then kill "$follow" 2>/dev/null || true; fi
  say "docker stack rm $STACK"
  "$DOCKER" stack rm "$STACK" >/dev/null 2>&1 || true
  for _ in $(seq 1 120); do
    [ -z "$("$DOCKER" ps -aq --filter "label=com.docker.stack.namespace=$STACK")" ] \
      && [ -z "$("$DOCKER" network ls -q --filter "label=com.docker.stack.namespace=$STACK")" ] && break
    sleep 1
  done
  if [ -n "$inited" ]; then
    say "docker swarm leave --force"
    "$DOCKER" swarm leave --force >/dev/null || true
    if [ -n "$gwbridge" ]; then "$DOCKER" network rm docker_gwbridge >/dev/null 2>&1 || true; fi
  fi
  secrets_cleanup
  exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

files=(-c compose.yaml)
for f in ${ALLFOURS_COMPOSE_FILES:-}; do files+=(-c "$f"); done
"$DOCKER" stack deploy "${files[@]}" --resolve-image never "$STACK"

# rejected: every rejected task of the stack, one line each (name, node, the swarm's error)
rejected() {
  "$DOCKER" stack ps "$STACK" --no-trunc --format '{{.Name}} on {{.Node}}: {{.CurrentState}}: {{.Error}}' \
    2>/dev/null | grep '^[^ ]* on [^ ]*: Rejected' || true
}
# arena_tasks: "STATE EXITCODE" of each of the arena's tasks, newest first (the arena may be restarted
# up to 3 times: restart_policy on-failure, max_attempts 3)
arena_tasks() {
  local id
  for id in $("$DOCKER" service ps -q "${STACK}_arena" 2>/dev/null); do
    "$DOCKER" inspect --format '{{.Status.State}} {{.Status.ContainerStatus.ExitCode}}' "$id" 2>/dev/null || true
  done
}

say "following ${STACK}_arena (docker service logs -f)"
# the arena's `output: /results` is shown as the folder on the arena's node; $! is docker's (sed ends with it).
# Its stderr is the arena's own (its error lines: why it failed), less the CLI's `error from daemon in
# stream` (a node gone, some lines lost: the swarm's business, watched below).
"$DOCKER" service logs -f --raw "${STACK}_arena" \
  2> >(grep --line-buffered -v '^error from daemon in stream' >&2 || true) \
  > >(sed -u "s|^output: /results\\b|output: $results_sed|") &
follow=$!
deadline=$((SECONDS + WAIT_S))
while :; do
  bad=$(rejected)
  if [ -n "$bad" ]; then
    say "the swarm rejected tasks of the stack:"
    echo "$bad" >&2
    exit 1
  fi
  tasks=$(arena_tasks)
  if grep -q '^complete' <<<"$tasks"; then sleep 2; say "the arena finished (exit status 0)"; exit 0; fi
  if [ "$(grep -c '^failed' <<<"$tasks")" -ge 4 ]; then
    code=$(grep '^failed' <<<"$tasks" | head -1 | cut -d' ' -f2)
    say "the arena failed 4 times (last exit status $code)"
    exit "${code:-1}"
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then say "the arena did not finish within $WAIT_S s"; exit 1; fi
  sleep 1
done
