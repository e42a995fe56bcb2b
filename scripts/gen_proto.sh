#!/usr/bin/env bash
# Regenerate the Python stubs of proto/allfours/v1/*.proto into allfours/v1/ (committed).
# Usage: scripts/gen_proto.sh [OUT_DIR]   (default: the repository root)
# Needs grpcio-tools (pinned in pyproject.toml, extra "test").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root}"
cd "$root"
mkdir -p "$out/allfours/v1"
python -m grpc_tools.protoc -Iproto --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" proto/allfours/v1/*.proto
for d in "$out/allfours" "$out/allfours/v1"; do
  [ -f "$d/__init__.py" ] || printf '"""Generated protocol stubs (allfours.v1); see proto/ and scripts/gen_proto.sh."""\n' > "$d/__init__.py"
done
