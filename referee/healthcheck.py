"""``python -m referee.healthcheck [HOST:PORT]``: exit 0 if the referee answers the gRPC health check
with SERVING within 3 s, else 1 (with one line on stderr); 2 for a usage error. The container images'
HEALTHCHECK and compose.yaml's ``healthcheck`` use it (default address ``127.0.0.1:50051``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

#: Seconds the check waits for the answer.
TIMEOUT_S = 3.0


def main(argv: Sequence[str] | None = None) -> int:
    """Check the referee at ``argv[0]`` (default ``127.0.0.1:50051``); returns the exit status (2: usage)."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m referee.healthcheck [HOST:PORT]  (default 127.0.0.1:50051)"
    if args in (["-h"], ["--help"]):
        print(usage)
        return 0
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(usage, file=sys.stderr)
        return 2
    address = args[0] if args else "127.0.0.1:50051"
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S)
        except grpc.RpcError as e:
            print(f"referee {address}: {e.code().name}", file=sys.stderr)
            return 1
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"referee {address}: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
