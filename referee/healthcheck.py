"""``python -m referee.healthcheck [--tls-ca PEM [--tls-name NAME]] [HOST:PORT]``: exit 0 if the referee
answers the gRPC health check with SERVING within 3 s, else 1 (with one line on stderr); 2 for a usage
error or a certificate file that cannot be read. The container images' HEALTHCHECK and compose.yaml's
``healthcheck`` use it (default address ``127.0.0.1:50051``). A referee that serves TLS (``referee serve
--tls-cert``) is checked over TLS with ``--tls-ca`` (its certificate, or its CA); ``--tls-name`` is the
name its certificate is made out to when the check dials another (a container checks 127.0.0.1)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.credentials import PemError, read_pem
from referee.tls import tls_hint

#: Seconds the check waits for the answer.
TIMEOUT_S = 3.0

USAGE = "usage: python -m referee.healthcheck [--tls-ca PEM [--tls-name NAME]] [HOST:PORT]  (default 127.0.0.1:50051)"


@dataclass(frozen=True)
class Check:
    """What to check: ``address`` (``host:port``), over TLS trusting the file ``tls_ca`` when set, with
    ``tls_name`` the name the certificate must be made out to (None: the address's host)."""

    address: str = "127.0.0.1:50051"
    tls_ca: str | None = None
    tls_name: str | None = None


def parse(args: list[str]) -> Check | None:
    """The :class:`Check` of the command line ``args``, or None for a usage error."""
    options: dict[str, str] = {}
    rest: list[str] = []
    while args:
        a = args.pop(0)
        key, eq, value = a.partition("=")
        if key in ("--tls-ca", "--tls-name"):
            if not eq:
                if not args:
                    return None
                value = args.pop(0)
            options[key] = value
        elif a.startswith("-"):
            return None
        else:
            rest.append(a)
    if len(rest) > 1 or ("--tls-name" in options and "--tls-ca" not in options):
        return None
    return Check(rest[0] if rest else Check.address, options.get("--tls-ca"), options.get("--tls-name"))


def _channel(check: Check, ca: bytes | None) -> grpc.Channel:
    """A channel to the checked referee: plaintext, or TLS trusting ``ca`` (as ``tls_name``)."""
    if ca is None:
        return grpc.insecure_channel(check.address)
    options = [("grpc.ssl_target_name_override", check.tls_name)] if check.tls_name else []
    return grpc.secure_channel(check.address, grpc.ssl_channel_credentials(root_certificates=ca), options=options)


def main(argv: Sequence[str] | None = None) -> int:
    """Check the referee the arguments name (module docstring); returns the exit status (2: usage)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    check = parse(args)
    if check is None:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        ca = read_pem("--tls-ca", check.tls_ca) if check.tls_ca else None
    except PemError as e:
        print(f"referee.healthcheck: {e}", file=sys.stderr)
        return 2
    with _channel(check, ca) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S)
        except grpc.RpcError as e:
            code = e.code() if isinstance(e, grpc.Call) else grpc.StatusCode.UNKNOWN
            details = (e.details() if isinstance(e, grpc.Call) else str(e)) or ""
            trusted = f"--tls-ca {check.tls_ca}" if check.tls_ca else None
            print(f"referee {check.address}: {code.name}{tls_hint(details, check.address, trusted)}", file=sys.stderr)
            return 1
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        print(f"referee {check.address}: {name}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
