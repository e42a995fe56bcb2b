#!/usr/bin/env bash
# Build the C++ sample bot offline: stubs from proto/allfours/v1/referee.proto with Debian's protoc
# and grpc_cpp_plugin, linked with Debian's libgrpc++ (scripts/setup.d/30-cpp.sh installs them).
# Incremental: a second run rebuilds only what changed. Prints the binary's path on success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for tool in cmake g++ pkg-config protoc grpc_cpp_plugin; do
  command -v "$tool" >/dev/null || { echo "sample_bots/cpp/build.sh: $tool not found; run scripts/setup.sh (Debian: g++ cmake pkg-config libgrpc++-dev protobuf-compiler-grpc)" >&2; exit 1; }
done
cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$here/build" -j "$(nproc)" >/dev/null
echo "$here/build/allfours-cpp-bot"
