"""The ``arena`` command line: one sub-command a function (``run``, ``web``, ``bots build``, ``serve``,
``token``); what each does is in :mod:`arena.cli.commands`."""

from __future__ import annotations

import argparse
from typing import Any

from arena.config import ENV_ADMIN_TOKEN
from arena.lobby.tokens import MIN_GIVEN_TOKEN
from arena.ratings.fit import DEFAULT_BOOTSTRAP
from referee.cli import port_number

#: ``--bootstrap`` of run, serve and the final.
_BOOTSTRAP_HELP = f"bootstrap resamples for intervals (default {DEFAULT_BOOTSTRAP}; 0: the normal approximation)"


def parser() -> argparse.ArgumentParser:
    """The parser of every ``arena`` sub-command."""
    p = argparse.ArgumentParser(prog="arena", description="All Fours bot tournaments.")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_add_run, _add_web, _add_bots, _add_serve, _add_token, _add_backup, _add_restore, _add_competitor,
                _add_competition, _add_submit, _add_submissions):
        add(sub)
    return p


def _add_run(sub: Any) -> None:
    """``arena run CONFIG``: run or resume a tournament, then rate and publish."""
    run = sub.add_parser("run", help="run or resume the tournament of CONFIG, then rate and publish")
    run.add_argument("config", help="tournament config (TOML)")
    run.add_argument(
        "--referee",
        metavar="HOST:PORT",
        action="append",
        help="play on this external referee instead of an embedded one; repeat to spread games over "
        "several (overrides tournament.referees)",
    )
    run.add_argument(
        "--admin-token",
        metavar="T",
        help="admin token of the external referees (default: the environment variable named by "
        f"tournament.admin_token_env, {ENV_ADMIN_TOKEN} unless set)",
    )
    run.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    run.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N",
                     help=_BOOTSTRAP_HELP)
    run.add_argument("--verbose", action="store_true", help="show the embedded referee's log")
    run.add_argument("--no-progress", action="store_true", help="no live progress bar")
    run.add_argument("--referee-advertise", metavar="HOST",
                     help="the host remote workers are told to dial the embedded referee at (default: "
                     "tournament.lobby's host; needed when that is 0.0.0.0 or ::)")
    run.add_argument("--referee-port", type=port_number, default=0, metavar="PORT",
                     help="the embedded referee's port remote workers dial (default 0: any free one; with container "
                     "bots, its listener for them on the lobby's host); fix it when a firewall must let remote "
                     "workers through to it, beside the lobby's port")
    run.add_argument("--live", action="store_true",
                     help="write running games' public events to OUTPUT/live/ for `arena web`'s spectators "
                     "(default: off, the arena then asks the referee for each result alone: cheaper)")
    run.add_argument("--metrics-port", type=int, metavar="PORT", default=None,
                     help="serve Prometheus metrics at http://HOST:PORT/metrics (default: off; behind a bearer "
                     "token when $ALLFOURS_METRICS_TOKEN or its _FILE is set; docs/deploy.md)")
    run.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                     help="interface of --metrics-port (default 127.0.0.1; 0.0.0.0 in a container)")
    run.add_argument(
        "--skip-broken",
        action="store_true",
        help="a bot that fails its check before the first game (it must start and join a practice match) "
        "forfeits its games at once (in a ladder: gets no games in this run) instead of stopping the run",
    )
    run.add_argument(
        "--simulate",
        type=float,
        metavar="SECONDS",
        default=None,
        help="testing aid: no referee or bots; outcomes are simulated, each game sleeping SECONDS",
    )


def _add_web(sub: Any) -> None:
    """``arena web OUTPUT``: serve an output folder (or one record) over HTTP."""
    web = sub.add_parser("web", help="serve an output folder over HTTP: live leaderboard, replays, API")
    web.add_argument("output", nargs="?", help="the tournament's output folder")
    web.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    web.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    web.add_argument("--record", metavar="FILE", help="serve only the replay viewer of this match record")
    web.add_argument(
        "--delay", type=int, default=1, metavar="DEALS", help="spectators of a running game stay DEALS behind (>= 1)"
    )
    web.add_argument("--proxy", metavar="ADDR", action="append", default=[],
                     help="a reverse proxy in front (IP or network, repeatable): its X-Forwarded-For names the client")


def _add_bots(sub: Any) -> None:
    """``arena bots build DIR``: a bot's container image."""
    bots = sub.add_parser("bots", help="bot images").add_subparsers(dest="bots_command", required=True)
    build = bots.add_parser("build", help="build a bot's container image from its folder (docs/deploy.md)")
    build.add_argument("folder", metavar="DIR", help="the bot's folder (package.json: Node.js; else Python)")
    build.add_argument("--name", required=True, help="the bot's name (lower case; the image is allfours-bots/NAME:V)")
    build.add_argument("--version", required=True, help="the bot's version (the image's tag)")
    build.add_argument("--entry", help="module:Class (Python, required) or the entry file (Node.js; default: main)")
    build.add_argument("--tag", help="tag the image with this instead of allfours-bots/NAME:V")
    build.add_argument("--base", metavar="IMAGE", help="base image (build argument BASE; default: the official "
                       "python or node image; offline: docker/base-image.sh python|node)")
    build.add_argument("--ca-bundle", metavar="PEM", default=None,
                       help="CA bundle pip and npm trust inside the build (default: the host's)")


def _add_serve(sub: Any) -> None:
    """``arena serve CONFIG``: the league as a service."""
    srv = sub.add_parser("serve", help="run the league of CONFIG as a service (SIGHUP: re-read CONFIG; SIGTERM: stop)")
    srv.add_argument("config", help="tournament config (TOML)")
    srv.add_argument("--referee", metavar="HOST:PORT", action="append", help="as for run")
    srv.add_argument("--admin-token", metavar="T", help="as for run")
    srv.add_argument("--referee-advertise", metavar="HOST", help="as for run")
    srv.add_argument("--referee-port", type=port_number, default=0, metavar="PORT", help="as for run")
    srv.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    srv.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N",
                     help=_BOOTSTRAP_HELP)
    srv.add_argument("--verbose", action="store_true", help="show the embedded referee's log")
    srv.add_argument("--web", type=int, metavar="PORT", default=None,
                     help="also serve the web pages and API (as `arena web`) on PORT in this process (0: a free port)")
    srv.add_argument("--web-host", metavar="HOST", default="127.0.0.1",
                     help="address of --web (default 127.0.0.1: this machine only)")
    srv.add_argument("--web-proxy", metavar="ADDR", action="append", default=[],
                     help="as `arena web --proxy`: a reverse proxy in front of --web (IP or network, repeatable)")
    srv.add_argument("--metrics-port", type=int, metavar="PORT", default=None,
                     help="serve Prometheus metrics at http://HOST:PORT/metrics (default: off; behind a bearer "
                     "token when $ALLFOURS_METRICS_TOKEN or its _FILE is set; docs/deploy.md)")
    srv.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                     help="interface of --metrics-port (default 127.0.0.1; 0.0.0.0 in a container)")
    srv.add_argument("--no-live", dest="live", action="store_false",
                     help="no live files of running games for `arena web`'s spectators (default: written)")
    srv.set_defaults(simulate=None, no_progress=True)


def _add_token(sub: Any) -> None:
    """``arena token CONFIG NAME``: a remote bot's token."""
    tok = sub.add_parser("token", help="print a new token for remote bot NAME (or revoke its tokens)")
    tok.add_argument("config", help="tournament config (TOML)")
    tok.add_argument("name", help="the remote bot's name ([[bots]] name, with remote = true)")
    tok.add_argument("--revoke", action="store_true", help="revoke every token of NAME (its workers are refused)")
    tok.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    tok.add_argument("--from-env", metavar="VAR", help="accept the token held by environment variable VAR (at least "
                     f"{MIN_GIVEN_TOKEN} characters, e.g. made with secrets.token_urlsafe(24)) instead of making one; "
                     "nothing is printed (compose.yaml: the arena and the bot's worker service share it)")


def _add_backup(sub: Any) -> None:
    """``arena backup OUTPUT DEST``: a consistent copy of an output folder, also while an arena serves it."""
    b = sub.add_parser("backup", help="copy an output folder to DEST, safely while `arena serve` runs (SQLite's "
                       "backup API; DEST new, 0700; logs/ and live/ left out)")
    b.add_argument("output", metavar="OUTPUT", help="the tournament's output folder")
    b.add_argument("dest", metavar="DEST", help="the backup's folder: new, or an empty one, outside OUTPUT")


def _add_restore(sub: Any) -> None:
    """``arena restore BACKUP OUTPUT [--keep-close]``: put a backup back as an output folder."""
    r = sub.add_parser("restore", help="put a backup (`arena backup`) back as OUTPUT, the folder it replaces moved "
                       "aside; refused when the backup was made before OUTPUT's freeze, final, close or a "
                       "disqualification")
    r.add_argument("backup", metavar="BACKUP", help="the backup's folder (made by `arena backup`)")
    r.add_argument("output", metavar="OUTPUT", help="the tournament's output folder (the path it was served at)")
    r.add_argument("--keep-close", action="store_true", help="restore a backup made before OUTPUT's freeze, final, "
                   "close or a disqualification and keep them in it (the league stays closed, the book frozen, the "
                   "final OUTPUT's, the disqualified competitors so)")


def _add_competitor(sub: Any) -> None:
    """``arena competitor add CONFIG NAME [--revoke]``, ``arena competitor disqualify CONFIG NAME --reason TEXT
    [--undo]``, ``arena competitor list CONFIG``: competitors."""
    comp = sub.add_parser("competitor", help="competitors who submit their own bots (docs/competition.md)")
    verbs = comp.add_subparsers(dest="competitor_command", required=True)
    add = verbs.add_parser("add", help="print a new token for competitor NAME, once (or revoke it)")
    add.add_argument("config", help="league config (TOML) with a [competition] table")
    add.add_argument("name", help="the competitor's name")
    add.add_argument("--revoke", action="store_true", help="revoke NAME's token (its submissions and games stay)")
    add.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    dq = verbs.add_parser("disqualify", help="disqualify competitor NAME: token revoked, entries no longer "
                          "scheduled, their games out of the ratings, out of the final (--undo takes it back)")
    dq.add_argument("config", help="league config (TOML) with a [competition] table")
    dq.add_argument("name", help="the competitor's name (arena competitor list CONFIG)")
    dq.add_argument("--reason", help="why, one line of at most 200 characters: shown on the board beside each of "
                    "their entries (required, but with --undo)")
    dq.add_argument("--undo", action="store_true", help="take the disqualification back: their entries are "
                    "scheduled and rated again (their token stays revoked: `competitor add` makes a new one)")
    dq.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    ls = verbs.add_parser("list", help="list the competitors and whether their tokens are live")
    ls.add_argument("config", help="league config (TOML)")
    ls.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")


def _add_competition(sub: Any) -> None:
    """``arena competition freeze|retry|final|close CONFIG``: stop taking submissions, build failed ones again,
    play the final, end the league and reveal its seed."""
    comp = sub.add_parser("competition", help="a competition's lifecycle (docs/competition.md)")
    verbs = comp.add_subparsers(dest="competition_command", required=True)
    freeze = verbs.add_parser("freeze", help="stop taking submissions (a running arena serve refuses them at once)")
    freeze.add_argument("config", help="league config (TOML)")
    freeze.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    retry = verbs.add_parser("retry", help="build failed submissions again (the arena's fault, e.g. a missing base "
                             "image, once mended); a running arena serve takes them at once")
    retry.add_argument("config", help="league config (TOML)")
    retry.add_argument("ids", metavar="ID", type=int, nargs="*",
                       help="submissions to retry (default: every failed one)")
    retry.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    final = verbs.add_parser("final", help="play the final evaluation of the frozen competition (OUTPUT/final)")
    final.add_argument("config", help="league config (TOML)")
    final.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    final.add_argument("--games-per-pairing", type=int, default=None, metavar="N",
                       help="games of each pairing (even; default: twice the league's)")
    final.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N",
                       help=_BOOTSTRAP_HELP)
    close = verbs.add_parser("close", help="end the league for good and reveal its master seed (after the final; "
                             "arena serve is refused there from then on)")
    close.add_argument("config", help="league config (TOML)")
    close.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    close.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N", help=_BOOTSTRAP_HELP)


def _arena_options(p: Any) -> None:
    p.add_argument("--arena", required=True, metavar="HOST:PORT", help="the arena's lobby address")
    p.add_argument("--tls-ca", metavar="PEM", help="trust this certificate (the arena serves TLS)")


def _add_submit(sub: Any) -> None:
    """``arena submit DIR --arena HOST:PORT``: submit a bot (token in ALLFOURS_COMPETITOR_TOKEN)."""
    s = sub.add_parser("submit", help="submit a bot's folder to a competition (token: $ALLFOURS_COMPETITOR_TOKEN)")
    s.add_argument("folder", metavar="DIR", nargs="?", help="the bot's folder (package.json: Node.js; else Python)")
    _arena_options(s)
    s.add_argument("--select", type=int, metavar="ID", help="instead of a folder: choose accepted submission ID "
                   "for the final evaluation (default: the latest accepted)")
    s.add_argument("--name", help="the bot's name (default: the folder's name, lower case)")
    s.add_argument("--version", default="next", help="the bot's version (default: next, one more than the last)")
    s.add_argument("--entry", default="", help="module:Class (Python) or the entry file (Node.js; default: main)")
    s.add_argument("--image", action="store_true", help="DIR is instead a prebuilt image's archive (docker save IMAGE "
                   "> bot.tar; its entry point plays one seat per container, as user 10001); --name is required")
    s.add_argument("--remote", action="store_true", help="instead of a folder: register a bot that runs on your own "
                   "machine as a remote entry (--name; --version); prints its bot token, once")
    s.add_argument("--wait", action="store_true", help="follow the submission's status to the end")
    s.add_argument("--wait-timeout", type=float, default=3600.0, metavar="S", help="stop following after S seconds")


def _add_submissions(sub: Any) -> None:
    """``arena submissions --arena HOST:PORT [--games | --log GAME SEAT]``: my submissions, games, a seat's log."""
    s = sub.add_parser("submissions", help="list my submissions, or my games, or print a seat's log (token: "
                       "$ALLFOURS_COMPETITOR_TOKEN)")
    _arena_options(s)
    which = s.add_mutually_exclusive_group()
    which.add_argument("--games", action="store_true", help="list my entrants' games instead (id, sides, score, "
                       "my seats)")
    which.add_argument("--log", nargs=2, metavar=("GAME", "SEAT"), help="print my bot's log of SEAT (0-based) in "
                       "GAME instead (its last 512 KiB), as it wrote it")
