"""``python -m sdk.run module:Class``: play one match against a referee, or serve an arena's lobby.

Per-game mode: ``python -m sdk.run module:Class --referee HOST:PORT --ticket T``. The ticket may come
from the environment variable ``ALLFOURS_TICKET`` and the referee address from ``ALLFOURS_REFEREE``
(the arena sets both when it launches a per-game bot). Exit status: 0 once the match is over
(whatever the result), 1 if the bot could not play (refused ticket, referee unreachable).

Worker mode (docs/protocol.md, "Workers and the lobby"): ``python -m sdk.run module:Class --arena
HOST:PORT --token TOKEN [--workers N] [--games N]``. ``--arena`` defaults to ``ALLFOURS_LOBBY`` and
``--token`` to ``ALLFOURS_BOT_TOKEN``, or the file ``ALLFOURS_BOT_TOKEN_FILE`` names (a Docker secret:
:mod:`referee.credentials`; the arena sets both for its local workers; a remote bot's owner
gets the token from ``arena token CONFIG NAME``). Each of the N workers (threads of this process: a
remote bot's partners may share it) plays one seat at a time, a fresh bot object per match, and
leaves after ``--games`` matches (default: never). Exit status: 0 when every worker left normally,
1 when the lobby refused the token (one line on stderr) or stayed unreachable.

Exit status 2 on a usage error. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from referee.credentials import PemError, SecretError, env_secret, read_pem
from sdk.bot import BotLike, MatchEnd, bot_name, load_bot
from sdk.client import BotClient, ClientError
from sdk.worker import (
    LOBBY_ENV,
    NAME_ENV,
    TOKEN_ENV,
    LobbyWorker,
    referee_tls_ca,
    run_workers,
    sdk_player,
    warn_secret_in_argv,
)

#: Environment variable holding the join ticket.
TICKET_ENV = "ALLFOURS_TICKET"
#: Environment variable holding the referee's ``host:port``.
REFEREE_ENV = "ALLFOURS_REFEREE"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sdk.run", description=__doc__.split("\n\n")[0])
    p.add_argument("bot", metavar="module:Class", help="the bot class, e.g. sample_bots.heuristic:HeuristicBot")
    p.add_argument("--referee", default=os.environ.get(REFEREE_ENV),
                   help=f"referee host:port (default: ${REFEREE_ENV})")
    p.add_argument("--ticket", default=os.environ.get(TICKET_ENV),
                   help=f"join ticket (default: ${TICKET_ENV})")
    p.add_argument("--arena", default=None, metavar="HOST:PORT",
                   help=f"worker mode: the arena's lobby (default: ${LOBBY_ENV})")
    p.add_argument("--token", default=None,
                   help=f"worker mode: the bot token (default: ${TOKEN_ENV}, or the file ${TOKEN_ENV}_FILE names)")
    p.add_argument("--workers", type=int, default=1, help="worker mode: workers in this process (default 1)")
    p.add_argument("--games", type=int, default=None, help="worker mode: each worker leaves after N matches")
    p.add_argument("--reconnect", type=float, default=None, metavar="SECONDS",
                   help="worker mode: give up after dialling a lobby that is down for SECONDS (default: dial on "
                        "until stopped, through an arena upgrade of any length)")
    p.add_argument("--name", default=None,
                   help=f"bot name sent in Hello/Register (default: ${NAME_ENV}, else the bot's name or class)")
    p.add_argument("--version", default=None, help="bot version sent in Hello (default: the bot's version)")
    p.add_argument("--connect-timeout", type=float, default=15.0,
                   help="seconds to keep trying to reach the referee before the match starts (default 15)")
    p.add_argument("--tls-ca", default=os.environ.get("ALLFOURS_TLS_CA"), metavar="PEM",
                   help="trust this CA/certificate and connect with TLS (default: $ALLFOURS_TLS_CA; "
                        "unset = plaintext)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def _env_token(p: argparse.ArgumentParser) -> str:
    """The bot token of ``$ALLFOURS_BOT_TOKEN`` or of the file ``$ALLFOURS_BOT_TOKEN_FILE`` names; exits
    with status 2 when there is none (``p.error``), or with one line and nothing else when the variables
    are set twice or the file cannot be read (not a usage error: the usage would only bury the line)."""
    try:
        token = env_secret(TOKEN_ENV)
    except SecretError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    if not token:
        p.error(f"worker mode needs the bot token: pass --token TOKEN or set {TOKEN_ENV} (or {TOKEN_ENV}_FILE)")
    return token


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, load the bot and play (see the module docstring). :returns: the exit status."""
    p = _parser()
    warn_secret_in_argv("sdk.run", sys.argv[1:] if argv is None else argv, "--token", TOKEN_ENV)
    args = p.parse_args(argv)
    tls_ca = None
    if args.tls_ca:
        try:
            tls_ca = read_pem("--tls-ca", args.tls_ca)
        except PemError as e:
            p.error(str(e))
    # --arena wins; else a referee and ticket mean one match; else $ALLFOURS_LOBBY means worker mode
    worker_mode = args.arena is not None or (not (args.referee and args.ticket) and bool(os.environ.get(LOBBY_ENV)))
    args.arena = args.arena or os.environ.get(LOBBY_ENV)
    if not worker_mode:
        if not args.referee:
            p.error(f"no referee address: pass --referee HOST:PORT (or --arena HOST:PORT) or set {REFEREE_ENV}")
        if not args.ticket:
            p.error(f"no ticket: pass --ticket T or set {TICKET_ENV}")
    else:
        args.token = args.token or _env_token(p)
    if worker_mode and (args.workers < 1 or (args.games is not None and args.games < 1)):
        p.error("--workers and --games must be at least 1")
    if args.reconnect is not None and not args.reconnect >= 0:
        p.error(f"--reconnect must be a number of seconds >= 0, not {args.reconnect}")
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        bot = load_bot(args.bot)
    except ValueError as e:
        p.error(str(e))
    if worker_mode:
        return _serve(args, bot, tls_ca)
    client = BotClient(bot, args.referee, args.ticket, name=args.name, version=args.version,
                       connect_timeout_s=args.connect_timeout, tls_ca=tls_ca)
    try:
        end = client.run()
    except ClientError as e:
        logging.getLogger("sdk.run").error("%s", e)
        return 1
    print(summary_line(end, client.counts.exceptions, client.counts.fallbacks), flush=True)
    return 0


def summary_line(end: MatchEnd, exceptions: int = 0, fallbacks: int = 0) -> str:
    """The one line ``sdk.run`` prints when its match ends, e.g. ``match completed: games won 1-0,
    winner side 0, this seat normal`` (``no winner`` on a tie or an aborted match). When the bot itself
    failed (``exceptions`` its ``act`` raised, ``fallbacks``: moves the SDK sent in place of its answer,
    as ``Decision.counts`` reports them) the line ends with both: ``…, 3 exceptions, 3 fallbacks``."""
    winner = "no winner" if end.winner is None else f"winner side {end.winner}"
    line = f"match {end.status}: games won {end.wins[0]}-{end.wins[1]}, {winner}, this seat {end.termination}"
    return f"{line}, {exceptions} exceptions, {fallbacks} fallbacks" if exceptions or fallbacks else line


def _serve(args: argparse.Namespace, first_bot: BotLike, tls_ca: bytes | None) -> int:
    """Worker mode: ``args.workers`` lobby workers until they leave; returns the exit status."""
    name = args.name or os.environ.get(NAME_ENV) or bot_name(first_bot)
    version = args.version or str(getattr(first_bot, "version", "") or "0")
    try:
        referee_ca = referee_tls_ca(tls_ca)
    except PemError as e:
        print(f"sdk.run: {e}", file=sys.stderr)
        return 2
    play = sdk_player(lambda: load_bot(args.bot), name, version, referee_ca)
    played, errors = run_workers(
        lambda stop: LobbyWorker(play, args.arena, args.token, name, version, games=args.games, tls_ca=tls_ca,
                                 reconnect_s=args.reconnect, stop=stop),
        args.workers,
    )
    for error in dict.fromkeys(errors):
        print(f"sdk.run: {error}", file=sys.stderr, flush=True)
    print(f"worker mode: {played} matches played", flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
