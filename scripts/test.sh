#!/usr/bin/env bash
# scripts/test.sh [PYTEST ARGS...]: the whole test suite as two pytest processes at once, the tests that
# drive the machine's dockerd (marked `docker`) beside all the others, each line of output prefixed with
# its half (a few slow host modules, marked `docker_half`, run in the docker half to even out their time).
# Most of either half's time is waiting on processes, containers and sockets, not computing, so on two
# cores the suite takes about two thirds of `python -m pytest` (which runs the same tests one at a time);
# CI must stay under 45 minutes. Exit status: 0 when both halves pass (a half that the given arguments
# leave without tests passes), else the first failing one's (5 when neither half has a test); 2 with a
# one-line error for a `-m` among the arguments (the halves' marks are the script's own: select with -k).
# The two halves share nothing a test leaves behind (each names its files, images, containers, cgroups
# and processes by its own key or pid, as they must on a machine where other work runs); no pytest cache
# is written (two processes would write it at once).
set -uo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
    case $arg in
        -m | -m*) echo "scripts/test.sh: -m is the halves' own (docker / not docker): select tests with -k or files" >&2
                  exit 2 ;;
    esac
done

half() {  # half NAME MARK-EXPRESSION [ARGS...]
    local name=$1 marks=$2
    shift 2
    trap : TERM HUP  # this shell waits for its pytest to end, cleanup and all (the signal is pytest's to take)
    # pytest takes SIGTERM as Ctrl-C and ends itself if this script is gone (scripts/pytest_half.py); the
    # prefixer ignores what is handed on: it stays to pass on what pytest writes as it ends
    python scripts/pytest_half.py "$$" -p no:cacheprovider -m "$marks" "$@" 2>&1 \
        | (trap '' INT TERM HUP; exec sed -u "s/^/[$name] /")
    return "${PIPESTATUS[0]}"
}

# what an interrupt, a termination or a hang-up is handed on as: SIGINT, unless this script started with SIGINT
# ignored (a `… &` job of a non-interactive shell, as CI harnesses start it: bash can neither trap it nor
# un-ignore it for the halves); then SIGTERM, which each half's pytest takes as Ctrl-C too. Either way each
# half ends as pytest does on Ctrl-C, its fixtures' cleanup run
if [ -z "$(trap -p INT)" ]; then stop=INT; else stop=TERM; fi
# each half in a process group of its own (job control), so a signal can be handed on: a script's background
# jobs otherwise ignore SIGINT. So a signal to this script's group (a CI runner's, a closed terminal's) reaches
# this script alone: it hands it on, and a half whose script is gone, even by SIGKILL, ends itself
set -m
# handed on from before the first half starts: a signal between the two starts ended this script and left
# the first half running; one that comes before a half has started keeps it from starting
docker_pid="" host_pid="" stopping=""
hand_on() {
    stopping=1
    for pid in $docker_pid $host_pid; do kill -"$stop" -- "-$pid" 2>/dev/null; done
}
trap hand_on INT TERM HUP
# the docker half takes the slow host modules marked docker_half too: in a full run (one process, junit
# times) the docker-marked modules took 1,259 s and the others 1,655 s, of which tests/test_conformance.py 202 s
first="docker or docker_half"
half docker "$first" "$@" &
docker_pid=$!
if [ -n "$stopping" ]; then hand_on; else
    half host "not ($first)" "$@" &
    host_pid=$!
    if [ -n "$stopping" ]; then hand_on; fi
fi

outcome() {  # outcome PID: its exit status, waiting on through interrupts until it has ended
    local rc
    while :; do
        wait "$1"; rc=$?
        kill -0 "$1" 2>/dev/null || return "$rc"
    done
}
outcome "$docker_pid"; docker_rc=$?
host_rc=130  # not started: stopped first
if [ -n "$host_pid" ]; then outcome "$host_pid"; host_rc=$?; fi
echo "scripts/test.sh: docker half exit $docker_rc, host half exit $host_rc"
# 5 is pytest's "no tests collected": a half the given files or -k leave empty (a file of the other half)
# is no failure, unless both halves are empty
if [ "$docker_rc" -eq 5 ] && [ "$host_rc" -eq 5 ]; then exit 5; fi
[ "$docker_rc" -eq 5 ] && docker_rc=0
[ "$host_rc" -eq 5 ] && host_rc=0
[ "$docker_rc" -ne 0 ] && exit "$docker_rc"
exit "$host_rc"
