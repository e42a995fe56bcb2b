"""``python -m sdk.run module:Class --referee HOST:PORT --ticket T``: play one match against a referee.

The ticket may come from the environment variable ``ALLFOURS_TICKET`` and the referee address from
``ALLFOURS_REFEREE`` (the arena sets both when it launches a bot). Exit status: 0 once the match is
over (whatever the result), 1 if the bot could not play (refused ticket, referee unreachable),
2 on a usage error. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from sdk.bot import load_bot
from sdk.client import ClientError, run_bot

#: Environment variable holding the join ticket.
TICKET_ENV = "ALLFOURS_TICKET"
#: Environment variable holding the referee's ``host:port``.
REFEREE_ENV = "ALLFOURS_REFEREE"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, load the bot and play its match. :returns: the exit status."""
    p = argparse.ArgumentParser(prog="python -m sdk.run", description=__doc__.split("\n\n")[0])
    p.add_argument("bot", metavar="module:Class", help="the bot class, e.g. sample_bots.heuristic:HeuristicBot")
    p.add_argument("--referee", default=os.environ.get(REFEREE_ENV),
                   help=f"referee host:port (default: ${REFEREE_ENV})")
    p.add_argument("--ticket", default=os.environ.get(TICKET_ENV),
                   help=f"join ticket (default: ${TICKET_ENV})")
    p.add_argument("--name", default=None, help="bot name sent in Hello (default: the bot's name or class)")
    p.add_argument("--version", default=None, help="bot version sent in Hello (default: the bot's version)")
    p.add_argument("--connect-timeout", type=float, default=15.0,
                   help="seconds to keep trying to reach the referee before the match starts (default 15)")
    p.add_argument("--tls-ca", default=os.environ.get("ALLFOURS_TLS_CA"), metavar="PEM",
                   help="trust this CA/certificate and connect with TLS (default: $ALLFOURS_TLS_CA; "
                        "unset = plaintext)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = p.parse_args(argv)
    tls_ca = None
    if args.tls_ca:
        try:
            with open(args.tls_ca, "rb") as f:
                tls_ca = f.read()
        except OSError as e:
            p.error(f"--tls-ca {args.tls_ca}: {e.strerror}")
    if not args.referee:
        p.error(f"no referee address: pass --referee HOST:PORT or set {REFEREE_ENV}")
    if not args.ticket:
        p.error(f"no ticket: pass --ticket T or set {TICKET_ENV}")
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        bot = load_bot(args.bot)
    except ValueError as e:
        p.error(str(e))
    try:
        end = run_bot(bot, args.referee, args.ticket, name=args.name, version=args.version,
                      connect_timeout_s=args.connect_timeout, tls_ca=tls_ca)
    except ClientError as e:
        logging.getLogger("sdk.run").error("%s", e)
        return 1
    print(f"match {end.status}: games won {end.wins[0]}-{end.wins[1]}, winner side {end.winner}, "
          f"this seat {end.termination}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
