"""The ``referee`` console script.

``referee serve --port N [--host 127.0.0.1] [--admin-token T] [--tls-cert F --tls-key F]
[--record-dir DIR] [--keep-finished 1000] [--keep-finished-s 600] [--grace 5] [--log-level info]``

``referee create-match --referee HOST:PORT NAME NAME [NAME NAME] [--games 1] [--target 14]
[--seed HEX] [--tls-ca F] [--json]``: one ``AdminService.CreateMatch`` with the admin token of
``$ALLFOURS_ADMIN_TOKEN`` or the file ``$ALLFOURS_ADMIN_TOKEN_FILE`` names (never an option: a command
line is visible to every local user), printing
the match id, the seed commitment and each seat's ticket, so a bot author can seat their own bots by
hand (``sdk.run ... --ticket=T``; docs/sdk.md). An unreachable referee exits 1, a refused token or
request 2, each with one line.

- The admin token comes from ``--admin-token``, the environment variable ``ALLFOURS_ADMIN_TOKEN`` or the
  file ``$ALLFOURS_ADMIN_TOKEN_FILE`` names (a Docker secret: :mod:`referee.credentials`); with none, a
  random token is generated and printed on stderr. Both variables set, or an unreadable file, exits 2.
- Once bound, it prints ``PORT <n>`` (one line) on stdout and flushes, so a parent process that
  passed ``--port 0`` can read the port.
- ``--record-dir``: created 0700 if missing; each record file is 0600 (docs/record.md).
- A finished match stays in memory (GetRecord, WatchMatch, ListMatches) for ``--keep-finished-s``
  seconds, and only the newest ``--keep-finished`` of them; then only its record file remains.
- Logs are structlog JSON lines on stderr (match id, seat and seq on every match line).
- SIGINT/SIGTERM: graceful shutdown (health NOT_SERVING, matches get ``--grace`` seconds to finish,
  the rest are aborted).
- Bad settings (``--port`` outside 0..65535, a negative ``--grace``, unreadable or non-PEM TLS files,
  a ``--record-dir`` that cannot be created or written) print one line on stderr and exit 2; a port
  that cannot be bound exits 1. Nothing is started in either case.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import grpc
import structlog

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee import metrics
from referee.credentials import (
    PEM_CERTIFICATE,
    PEM_PRIVATE_KEY,
    PemError,
    SecretError,
    env_secret,
    file_variable,
    read_pem,
)
from referee.server import (
    ADMIN_TOKEN_ENV,
    KEEP_FINISHED,
    KEEP_FINISHED_S,
    RefereeServer,
    prepare_record_dir,
    tune_gc,
)
from referee.tls import tls_hint


def configure_logging(level: str = "info") -> None:
    """structlog JSON lines on stderr at ``level`` (debug logs every action)."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def port_number(text: str) -> int:
    """A TCP port given on a command line, 0..65535 (0: any free one; ``arena`` takes it too).

    :raises argparse.ArgumentTypeError: for anything else (argparse's one-line usage error).
    """
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a whole number 0..65535, not {text!r}")
    return port


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, not {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="referee", description="The All Fours gRPC referee (protocol allfours.v1)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the referee server")
    s.add_argument("--port", type=port_number, default=50051, help="TCP port 0..65535; 0 = any free port (printed)")
    s.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    s.add_argument("--admin-token", default=None,
                   help=f"admin token (default: ${ADMIN_TOKEN_ENV}, or the file ${ADMIN_TOKEN_ENV}_FILE names)")
    s.add_argument("--tls-cert", type=Path, help="PEM certificate chain (with --tls-key: serve TLS)")
    s.add_argument("--tls-key", type=Path, help="PEM private key")
    s.add_argument("--record-dir", type=Path, help="write each match record to DIR/<match_id>.jsonl")
    s.add_argument("--keep-finished", type=_count, default=KEEP_FINISHED,
                   help=f"finished matches held in memory for GetRecord/WatchMatch (default {KEEP_FINISHED})")
    s.add_argument("--keep-finished-s", type=_seconds, default=KEEP_FINISHED_S,
                   help=f"seconds a finished match stays in memory (default {KEEP_FINISHED_S:g}); "
                        "record files stay on disk")
    s.add_argument("--grace", type=_seconds, default=5.0, help="seconds (>= 0) matches get to finish on shutdown")
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    s.add_argument("--metrics-port", type=port_number, default=None,
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (default: off; behind a bearer "
                        "token when $ALLFOURS_METRICS_TOKEN or its _FILE is set; docs/deploy.md)")
    _create_match_parser(sub)
    return p


def _create_match_parser(sub: Any) -> None:
    c = sub.add_parser("create-match", help="create a match on a running referee and print its seats' tickets")
    c.add_argument("seats", nargs="+", metavar="NAME", help="one name per seat, in seat order (2 or 4)")
    c.add_argument("--referee", default="127.0.0.1:50051", help="the referee's HOST:PORT (default 127.0.0.1:50051)")
    c.add_argument("--games", type=_count, default=1, help="games in the match (default 1)")
    c.add_argument("--target", type=_count, default=None, help="points that win a game (default 14)")
    c.add_argument("--seed", default="", help="the match seed, 64 hex digits (default: a fresh one)")
    c.add_argument("--tls-ca", type=Path, help="PEM certificate the referee serves (or its CA): dial over TLS")
    c.add_argument("--json", action="store_true", help="print one JSON object instead of lines")


class _ConfigError(Exception):
    """A bad setting: one line on stderr, exit 2."""


def _read_pem(option: str, path: Path, marker: bytes, what: str) -> bytes:
    """The bytes of a PEM file (:func:`referee.credentials.read_pem`). :raises _ConfigError: if it cannot
    be read or holds no ``marker``."""
    try:
        return read_pem(option, path, marker, what)
    except PemError as e:
        raise _ConfigError(str(e)) from None


def _tls(args: argparse.Namespace) -> tuple[bytes, bytes] | None:
    """The TLS (certificate chain, key) pair from the options, or ``None``. :raises _ConfigError:"""
    if not (args.tls_cert or args.tls_key):
        return None
    if not (args.tls_cert and args.tls_key):
        raise _ConfigError("--tls-cert and --tls-key go together")
    return (_read_pem("--tls-cert", args.tls_cert, PEM_CERTIFICATE, "certificate"),
            _read_pem("--tls-key", args.tls_key, PEM_PRIVATE_KEY, "private key"))


async def _serve(args: argparse.Namespace) -> int:
    try:
        token = args.admin_token or env_secret(ADMIN_TOKEN_ENV)
        scrape_token = metrics.metrics_token() if args.metrics_port is not None else None
        tls = _tls(args)
        if args.record_dir is not None:
            prepare_record_dir(args.record_dir)
    except (_ConfigError, SecretError) as e:
        print(f"referee: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"referee: --record-dir {e}", file=sys.stderr)
        return 2
    if not token:
        print("referee: no --admin-token or $ALLFOURS_ADMIN_TOKEN; using a random one", file=sys.stderr)
    server = RefereeServer(host=args.host, port=args.port, admin_token=token, record_dir=args.record_dir,
                           tls=tls, keep_finished=args.keep_finished, keep_finished_s=args.keep_finished_s)
    try:
        port = await server.start()
    except RuntimeError as e:
        print(f"referee: {e}", file=sys.stderr)
        return 1
    if not token:
        print(f"referee: admin token {server.admin_token}", file=sys.stderr)
    if args.metrics_port is not None:
        try:
            print(f"METRICS {metrics.serve(args.metrics_port, args.host, token=scrape_token)}", flush=True)
        except OSError as e:
            print(f"referee: --metrics-port {args.metrics_port}: {e.strerror or e}", file=sys.stderr)
            await server.stop(0)
            return 1
    tune_gc()  # after start: the server's own objects are frozen too
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(args.grace)
    return 0


def _create_request(args: argparse.Namespace) -> pb.CreateMatchRequest:
    """The CreateMatch request of ``referee create-match``'s options. :raises _ConfigError: bad options."""
    if len(args.seats) not in (2, 4):
        raise _ConfigError(f"give 2 or 4 seat names, not {len(args.seats)}")
    try:
        seed = bytes.fromhex(args.seed)
    except ValueError:
        seed = b"?"
    if args.seed and len(seed) != 32:
        raise _ConfigError("--seed must be 64 hex digits (32 bytes)")
    rules = pb.RuleSet(players=len(args.seats))
    if args.target is not None:
        rules.target = args.target
    return pb.CreateMatchRequest(rules=rules, seat_names=args.seats, games=args.games, seed=seed)


def _create_match(args: argparse.Namespace) -> int:
    """``referee create-match`` (module docstring); returns the exit status."""
    try:
        token = env_secret(ADMIN_TOKEN_ENV)
        if not token:
            raise _ConfigError(f"set the referee's admin token in ${ADMIN_TOKEN_ENV} (or a file in "
                               f"${file_variable(ADMIN_TOKEN_ENV)})")
        request = _create_request(args)
        ca = _read_pem("--tls-ca", args.tls_ca, PEM_CERTIFICATE, "certificate") if args.tls_ca else None
    except (_ConfigError, SecretError) as e:
        print(f"referee create-match: {e}", file=sys.stderr)
        return 2
    creds = grpc.ssl_channel_credentials(root_certificates=ca) if ca else None
    with grpc.secure_channel(args.referee, creds) if creds else grpc.insecure_channel(args.referee) as channel:
        try:
            made = pb_grpc.AdminServiceStub(channel).CreateMatch(
                request, metadata=(("authorization", f"Bearer {token}"),), timeout=15)
        except grpc.RpcError as e:
            code = e.code() if isinstance(e, grpc.Call) else grpc.StatusCode.UNKNOWN
            detail = e.details() if isinstance(e, grpc.Call) else str(e)
            reach = code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            hint = tls_hint(detail or "", args.referee, f"--tls-ca {args.tls_ca}" if ca else None) if reach else ""
            print(f"referee create-match: {args.referee}: {code.name}: {detail}{hint}", file=sys.stderr)
            return 1 if reach else 2
    if args.json:
        print(json.dumps({"match_id": made.match_id, "seed_commitment": made.seed_commitment,
                          "seats": args.seats, "tickets": list(made.tickets)}))
    else:
        print(f"match {made.match_id} (seed sha256 {made.seed_commitment})")
        for seat, (name, ticket) in enumerate(zip(args.seats, made.tickets, strict=True)):
            print(f"seat {seat} {name}: --ticket={ticket}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``referee`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "create-match":
        return _create_match(args)
    configure_logging(args.log_level)
    if args.command == "serve":
        return asyncio.run(_serve(args))
    return 2


if __name__ == "__main__":
    sys.exit(main())
