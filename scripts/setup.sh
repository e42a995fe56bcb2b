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

for piece in scripts/setup.d/*.sh; do
  [ -e "$piece" ] || continue
  # shellcheck source=/dev/null
  . "$piece"
done
echo "setup: system ready"
