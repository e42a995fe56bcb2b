"""The ``referee`` console script.

``referee serve --port N [--host 127.0.0.1] [--admin-token T] [--tls-cert F --tls-key F]
[--record-dir DIR] [--log-level info]``

- The admin token comes from ``--admin-token`` or the environment variable ``ALLFOURS_ADMIN_TOKEN``;
  with neither, a random token is generated and printed on stderr.
- Once bound, it prints ``PORT <n>`` (one line) on stdout and flushes, so a parent process that
  passed ``--port 0`` can read the port.
- Logs are structlog JSON lines on stderr (match id, seat and seq on every match line).
- SIGINT/SIGTERM: graceful shutdown (health NOT_SERVING, matches get ``--grace`` seconds to finish,
  the rest are aborted).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

import structlog

from referee.server import ADMIN_TOKEN_ENV, RefereeServer


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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="referee", description="The All Fours gRPC referee (protocol allfours.v1)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the referee server")
    s.add_argument("--port", type=int, default=50051, help="TCP port; 0 = any free port (printed)")
    s.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    s.add_argument("--admin-token", default=None, help=f"admin token (default: ${ADMIN_TOKEN_ENV})")
    s.add_argument("--tls-cert", type=Path, help="PEM certificate chain (with --tls-key: serve TLS)")
    s.add_argument("--tls-key", type=Path, help="PEM private key")
    s.add_argument("--record-dir", type=Path, help="write each match record to DIR/<match_id>.jsonl")
    s.add_argument("--grace", type=float, default=5.0, help="seconds matches get to finish on shutdown")
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


async def _serve(args: argparse.Namespace) -> int:
    token = args.admin_token or os.environ.get(ADMIN_TOKEN_ENV)
    if not token:
        print("referee: no --admin-token or $ALLFOURS_ADMIN_TOKEN; using a random one", file=sys.stderr)
    tls = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            print("referee: --tls-cert and --tls-key go together", file=sys.stderr)
            return 2
        tls = (args.tls_cert.read_bytes(), args.tls_key.read_bytes())
    server = RefereeServer(host=args.host, port=args.port, admin_token=token, record_dir=args.record_dir,
                           tls=tls)
    try:
        port = await server.start()
    except RuntimeError as e:
        print(f"referee: {e}", file=sys.stderr)
        return 1
    if not token:
        print(f"referee: admin token {server.admin_token}", file=sys.stderr)
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
