#!/usr/bin/env bash
# scripts/test.sh [PYTEST ARGS...]: the whole test suite as two pytest processes at once, the tests that
# drive the machine's dockerd (marked `docker`) beside all the others, each line of output prefixed with
# its half. Most of either half's time is waiting on processes, containers and sockets, not computing, so
# on two cores the suite takes about two thirds of `python -m pytest` (which runs the same tests one at a
# time); CI must stay under 45 minutes. Exit status: 0 when both halves pass, else the first failing one's.
# The two halves share nothing a test leaves behind (each names its files, images, containers, cgroups
# and processes by its own key or pid, as they must on a machine where other work runs); no pytest cache
# is written (two processes would write it at once).
set -uo pipefail
cd "$(dirname "$0")/.."

half() {  # half NAME MARK-EXPRESSION [ARGS...]
    local name=$1 marks=$2
    shift 2
    python -m pytest -p no:cacheprovider -m "$marks" "$@" 2>&1 | sed -u "s/^/[$name] /"
    return "${PIPESTATUS[0]}"
}

half docker "docker" "$@" &
docker_pid=$!
half host "not docker" "$@" &
host_pid=$!
wait "$docker_pid"; docker_rc=$?
wait "$host_pid"; host_rc=$?
echo "scripts/test.sh: docker half exit $docker_rc, host half exit $host_rc"
[ "$docker_rc" -ne 0 ] && exit "$docker_rc"
exit "$host_rc"
