"""The ``referee`` console script.

``referee serve --port N [--host 127.0.0.1] [--admin-token T] [--tls-cert F --tls-key F]
[--record-dir DIR] [--keep-finished 1000] [--keep-finished-s 600] [--grace 5] [--log-level info]``

- The admin token comes from ``--admin-token`` or the environment variable ``ALLFOURS_ADMIN_TOKEN``;
  with neither, a random token is generated and printed on stderr.
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
import logging
import math
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

import structlog

from referee import metrics
from referee.server import (
    ADMIN_TOKEN_ENV,
    KEEP_FINISHED,
    KEEP_FINISHED_S,
    RefereeServer,
    prepare_record_dir,
    tune_gc,
)


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


def _port(text: str) -> int:
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
    s.add_argument("--port", type=_port, default=50051, help="TCP port 0..65535; 0 = any free port (printed)")
    s.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    s.add_argument("--admin-token", default=None, help=f"admin token (default: ${ADMIN_TOKEN_ENV})")
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
    s.add_argument("--metrics-port", type=_port, default=None,
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (default: off; docs/deploy.md)")
    return p


class _ConfigError(Exception):
    """A bad setting: one line on stderr, exit 2."""


def _read_pem(option: str, path: Path, marker: bytes, what: str) -> bytes:
    """The bytes of a PEM file. :raises _ConfigError: if it cannot be read or holds no ``marker``."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _ConfigError(f"cannot read {option} {path}: {e.strerror or e}") from None
    if marker not in data:
        raise _ConfigError(f"{option} {path} is not a PEM {what} (no line with {marker.decode()!r})")
    return data


def _tls(args: argparse.Namespace) -> tuple[bytes, bytes] | None:
    """The TLS (certificate chain, key) pair from the options, or ``None``. :raises _ConfigError:"""
    if not (args.tls_cert or args.tls_key):
        return None
    if not (args.tls_cert and args.tls_key):
        raise _ConfigError("--tls-cert and --tls-key go together")
    return (_read_pem("--tls-cert", args.tls_cert, b"-----BEGIN CERTIFICATE-----", "certificate"),
            _read_pem("--tls-key", args.tls_key, b"PRIVATE KEY-----", "private key"))


async def _serve(args: argparse.Namespace) -> int:
    token = args.admin_token or os.environ.get(ADMIN_TOKEN_ENV)
    try:
        tls = _tls(args)
        if args.record_dir is not None:
            prepare_record_dir(args.record_dir)
    except _ConfigError as e:
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
            print(f"METRICS {metrics.serve(args.metrics_port, args.host)}", flush=True)
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``referee`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    configure_logging(args.log_level)
    if args.command == "serve":
        return asyncio.run(_serve(args))
    return 2


if __name__ == "__main__":
    sys.exit(main())
