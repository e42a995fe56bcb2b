#!/usr/bin/env bash
# The compose demo (README, "Run the demo in containers"; docs/deploy.md, compose.yaml): two referees,
# the arena and the sample bots' worker services on Debian's docker-compose 1.29, the results in
# ${ALLFOURS_RESULTS:-arena-out/compose}. Exits with the arena's own exit status.
#
# Why not `docker-compose up --exit-code-from arena`: it implies --abort-on-container-exit, so a
# referee that dies mid-run stops the whole stack, though the arena retires that referee and plays
# its game again on the other. Here the stack runs detached, the arena's log is followed, and the
# script waits for the arena's container alone; a dead referee is the arena's business.
# The stack is always taken down: on success, on failure, on Ctrl-C (the EXIT trap).
#
# Tokens: each ALLFOURS_* token already in the environment is kept, the others are drawn here; the
# stack gets them as secrets (files), never in its environment (docker/secrets.sh).
# ALLFOURS_BASE: the base image (default: made here with docker/base-image.sh node, no registry).
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER="${DOCKER:-/usr/bin/docker}"
. docker/secrets.sh
. docker/compose-build.sh
trap secrets_cleanup EXIT  # until the stack's own trap below takes over
ALLFOURS_BASE="${ALLFOURS_BASE:-$(bash docker/base-image.sh node)}"
export ALLFOURS_BASE
[ -e docker/build-ca.pem ] || cp /etc/ssl/certs/ca-certificates.crt docker/build-ca.pem
mkdir -p "${ALLFOURS_RESULTS:-arena-out/compose}"
# the results folder on this host (compose.yaml mounts it at /results, the path the arena prints),
# handed to docker-compose absolute: it reads a bind-mount source that starts with neither `/` nor `.`
# (ALLFOURS_RESULTS=arena-out/x) as a named volume and refuses the file
results=$(realpath "${ALLFOURS_RESULTS:-arena-out/compose}")
export ALLFOURS_RESULTS="$results"
results_sed=$(printf '%s' "$results" | sed 's/[\\|&]/\\&/g')

follow=""
job=""
code_file=$(mktemp)
down() {
  status=$?
  trap - EXIT INT TERM
  if [ -n "$follow" ]; then kill "$follow" 2>/dev/null || true; fi
  # a build or `up -d` under way finishes first (it ignores Ctrl-C, see in_background): taking the stack
  # down while containers are still being created left some behind
  if [ -n "$job" ]; then wait "$job" 2>/dev/null || true; fi
  rm -f "$code_file"
  echo "compose-demo: taking the stack down" >&2
  docker-compose down --remove-orphans -t 5 >/dev/null 2>&1 \
    || echo "compose-demo: docker-compose down failed; run it by hand" >&2
  secrets_cleanup
  exit "$status"
}
trap down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# in_background CMD...: run CMD as a background job and wait for it with `wait`, so a Ctrl-C runs the INT
# trap at once (and the EXIT trap takes the stack down). In the foreground, a Ctrl-C during `up -d` was
# lost in full test runs and the demo played to its end (exit 0); a background job of this script
# ignores SIGINT, so docker-compose itself is never cut off halfway.
in_background() {
  local status=0
  "$@" &
  job=$!
  wait "$job" || status=$?
  job=""
  return "$status"
}

in_background compose_build  # the image it replaces removed
in_background docker-compose up -d --scale referee=2 --scale nodejs=2
arena=$(docker-compose ps -q arena)
[ -n "$arena" ] || { echo "compose-demo: the arena's container did not start" >&2; exit 1; }
# the arena's `output: /results` is shown as the host's folder; $! is docker-compose's (sed ends with it)
docker-compose logs -f --no-color --no-log-prefix arena > >(sed -u "s|^output: /results\\b|output: $results_sed|") &
follow=$!
# `wait` on a background job lets the INT/TERM traps run at once (a foreground command would delay them).
# An arena that crashes is started again by docker (compose.yaml's restart policy: on-failure, 3 times)
# and resumes from its store; `docker wait` returns at each exit, so it is asked again while the
# container is restarting (before, the demo took the stack down under the resumed arena, status 137),
# and its log is followed again from that exit on (docker-compose's follow ends with the first run)
while :; do
  "$DOCKER" wait "$arena" >"$code_file" &
  wait $!
  state="" finished=""
  read -r state finished < <("$DOCKER" inspect --format '{{.State.Status}} {{.State.FinishedAt}}' "$arena" 2>/dev/null) || true
  case "${state:-}" in
    restarting|running) echo "compose-demo: the arena exited with status $(cat "$code_file"); docker starts it again" >&2 ;;
    *) break ;;
  esac
  kill "$follow" 2>/dev/null || true
  "$DOCKER" logs -f --since "$finished" "$arena" > >(sed -u "s|^output: /results\\b|output: $results_sed|") &
  follow=$!
done
code=$(cat "$code_file")
[ -n "$code" ] || { echo "compose-demo: lost the arena's container" >&2; exit 1; }
sleep 1  # the last lines of the arena's log
echo "compose-demo: the arena exited with status $code; the results are in $results" >&2
exit "$code"
