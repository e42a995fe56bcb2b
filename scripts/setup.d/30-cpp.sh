# The C++ sample bot (sample_bots/cpp): tests/test_conformance.py runs the conformance suite on it
# and tests/test_cpp_bot.py plays it in a tournament; examples/demo.toml seats it. Debian's gRPC
# C++ toolchain (offline), then an incremental build (about 40 s the first time on 2 cores).
need_pkgs g++ cmake make pkg-config libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
bash sample_bots/cpp/build.sh >/dev/null
