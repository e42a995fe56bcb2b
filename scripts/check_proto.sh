#!/usr/bin/env bash
# CI check: the committed stubs in allfours/v1/ match what scripts/gen_proto.sh generates now.
# Exits 1 with a diff if they are stale (run scripts/gen_proto.sh and commit).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$root/scripts/gen_proto.sh" "$tmp"
status=0
for f in "$tmp"/allfours/v1/*_pb2*.py "$tmp"/allfours/v1/*_pb2.pyi; do
  rel="allfours/v1/$(basename "$f")"
  if ! diff -u "$root/$rel" "$f"; then
    echo "STALE: $rel differs from the generated stub; run scripts/gen_proto.sh and commit" >&2
    status=1
  fi
done
if [ -d "$root/allfours/v1" ]; then
  for f in "$root"/allfours/v1/*_pb2*.py; do
    [ -f "$tmp/allfours/v1/$(basename "$f")" ] || { echo "EXTRA: $f has no .proto source" >&2; status=1; }
  done
fi
if command -v buf >/dev/null 2>&1; then
  (cd "$root/proto" && buf lint) || { echo "buf lint failed" >&2; status=1; }
else
  echo "note: buf not installed (pip install buf-bin); skipped buf lint" >&2
fi
[ $status -eq 0 ] && echo "OK: generated stubs are current"
exit $status
