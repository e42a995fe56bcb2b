#!/usr/bin/env bash
# System packages and services the tests need, for a fresh Debian machine (run as root, or with sudo).
# Idempotent: installs only what is missing (one `apt-get update`, only if something is missing),
# then runs each piece in scripts/setup.d/ in name order. A piece may call `need_pkgs PKG...`
# (install missing Debian packages) and start a service it owns (e.g. dockerd); each piece says why
# it is needed. Used by the README's test command and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
_apt_updated=""

# need_pkgs PKG... : install the Debian packages of this list that are not installed yet.
need_pkgs() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -z "$_apt_updated" ]; then $SUDO apt-get update -qq; _apt_updated=1; fi
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# start_service LOG CMD... : start a long-lived daemon (dockerd) in its own session, outliving this
# shell, with stdin from /dev/null, output appended to LOG and every inherited descriptor above 2
# closed: a caller's lock (land.sh holds its landing lock on fd 9) must not live on in the daemon,
# held for as long as the daemon runs.
start_service() {
  local log=$1
  shift
  (
    for fd in /proc/self/fd/*; do
      n=${fd##*/}
      if [ "$n" -gt 2 ]; then eval "exec $n>&-" 2>/dev/null || true; fi
    done
    exec $SUDO setsid "$@" >>"$log" 2>&1 </dev/null
  ) &
}

for piece in scripts/setup.d/*.sh; do
  [ -e "$piece" ] || continue
  # shellcheck source=/dev/null
  . "$piece"
done
echo "setup: system ready"
