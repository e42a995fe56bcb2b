"""The ``arena`` command: ``arena run CONFIG [--referee HOST:PORT ...] [--admin-token T] [--output DIR]``,
``arena token CONFIG NAME [--revoke]`` (a remote bot's token, see :func:`token_command`).

Runs (or resumes) the tournament of a TOML config (docs/tournament-config.md), then rates every
stored game and publishes the results (docs/arena.md). Games are played on an embedded referee, or
spread over the external referees given with ``--referee`` (repeatable) or ``tournament.referees``.
Exit status: 0 when every scheduled game is played and published; 1 on a runtime failure (e.g. no
referee reachable, or the output folder is locked by another arena process; the games stored so far
are kept: run the same command again to resume; or a damaged database, or a disk full at publication:
the line names the file or folder); 2 on a bad config or arguments (including an admin token a referee
refuses), or an output folder holding another tournament (or a published one whose store is lost);
128 + the signal's number when stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129), the games in
flight stored first (:mod:`arena.cli.interrupt`). Errors are one line on stderr, without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from rich.console import Console
from rich.markup import escape

from arena import metrics
from arena.cli import interrupt
from arena.cli.parser import parser
from arena.config import (
    ConfigError,
    TournamentConfig,
    check_bot_cwds,
    is_loopback,
    load_config,
    parse_address,
    read_config_file,
)
from arena.formats.sprt_run import SprtRun
from arena.hosting.sandbox import SandboxError  # light: arena.config imports that module too
from arena.lobby.tokens import MIN_GIVEN_TOKEN
from arena.ratings.publication import LivePublisher, Refreshed
from arena.report import failures
from arena.report.cache import PublishCache
from arena.report.live import remove_live_files
from arena.report.publish import publish_tournament
from arena.report.terminal import progress_bar
from arena.tournament.game_logs import GameLogs
from arena.tournament.lock import OutputLocked, lock_output
from arena.tournament.result import GameResult
from arena.tournament.runner import (
    DB_NAME,
    GameRunner,
    SimulatedRunner,
    Tournament,
    closed_league,
    open_tournament,
    pending_games,
    run_games,
)
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import StorageError, Store, StoreMismatch, check_store_file
from referee.credentials import SecretError, env_secret, file_variable

if TYPE_CHECKING:  # imported where used: docker, the lobby and the web start only when a run needs them
    from arena.formats.ladder_run import LadderRun
    from arena.hosting.jail import Jail
    from arena.hosting.sandbox import Sandbox
    from arena.lobby.setup import LobbySetup
    from arena.play.referees import RefereePool, RemoteListener
    from arena.web import WebServer

#: Console width when output is not a terminal (a pipe, a CI log) and ``COLUMNS`` is not set.
PIPE_WIDTH = 120


def make_console(file: IO[str] | None = None, stderr: bool = False) -> Console:
    """A console on ``file`` (default stdout, or stderr): when that is not a terminal and ``COLUMNS`` is
    unset it is :data:`PIPE_WIDTH` wide, not rich's 80, so the leaderboard table is not wrapped in logs."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    width = None if tty or os.environ.get("COLUMNS", "").isdigit() else PIPE_WIDTH
    return Console(file=stream, width=width)


def bots_build_command(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena bots build``: 0 and the image's tag on stdout, or 2 with a one-line error."""
    from arena.hosting.bots_build import HOST_CA_BUNDLE, BuildError, build_image, plan_build

    try:
        plan = plan_build(args.folder, args.name, args.version, args.entry, args.tag)
        err.print(f"building {plan.tag} ({plan.kind} bot, entry {plan.entry})", highlight=False, soft_wrap=True)
        build_image(plan, args.base, Path(args.ca_bundle) if args.ca_bundle else HOST_CA_BUNDLE)
    except BuildError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 2
    console.print(plan.tag, highlight=False, soft_wrap=True)
    return 0


def web_command(args: argparse.Namespace, err: Console) -> int:
    """``arena web``: serve until interrupted; exit 2 on bad arguments (one line)."""
    from arena.web import bind, serve, trusted_proxies

    def error(message: str) -> int:
        err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
        return 2

    if not args.record and not args.output:  # an empty argument names nothing either
        return error("give an output folder, or --record FILE")
    if args.delay < 1:
        return error(f"--delay must be at least 1 deal, not {args.delay}")
    if not 0 < args.port < 65536:
        return error(f"--port must be between 1 and 65535, not {args.port}")
    try:
        proxies = trusted_proxies(args.proxy)
    except ValueError as e:
        return error(f"--proxy {e}")
    record = Path(args.record).resolve() if args.record else None
    if record is not None and not record.is_file():
        return error(f"--record {args.record!r}: no such file")
    output = record.parent if record is not None and not args.output else Path(args.output).resolve()
    if not output.is_dir() and not output.parent.is_dir():
        return error(f"{args.output!r}: no such folder")
    check_store_file(output / DB_NAME)  # a store of another schema would be misread: one line, exit 1
    try:
        sock = bind(args.host, args.port)
    except OSError as e:
        return error(f"--port {args.port} on {args.host}: {e.strerror or e}")
    if not output.is_dir():  # `arena web` started right after `arena run`, which makes the folder
        err.print(f"waiting for {output} (arena run makes it; Ctrl-C stops)", soft_wrap=True, highlight=False)
        while not output.is_dir():
            time.sleep(0.5)
    what = f"the record {record}" if record is not None and not args.output else str(output)
    err.print(f"serving {what} on http://{args.host}:{args.port}/ (Ctrl-C stops)", soft_wrap=True, highlight=False)
    serve(output, sock, proxies, spectator_delay=args.delay, record=record)
    return 0


def token_command(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena token CONFIG NAME [--revoke]``: make (and print once) or revoke a remote bot's token.

    Only the token's SHA-256 is stored (in the tournament's database), so it can be printed only when
    it is made; a second request for a bot that has one is refused (revoke, then ask again). The
    token alone goes to stdout (for scripts); notes go to stderr. Exit status 0, or 2 with one line.
    """
    from arena.lobby.setup import TOKEN_POLL_S
    from arena.lobby.tokens import new_token, token_digest
    from arena.tournament.store import Store

    def error(message: str) -> int:
        err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
        return 2

    try:
        config = load_config(args.config)
    except ConfigError as e:
        return error(str(e))
    bot = next((b for b in config.bots if b.name == args.name), None)
    if bot is None:
        entry = (f"; a competitor's remote entry is not one: `arena competitor add {args.config} COMPETITOR --revoke` "
                 "(or `arena competitor disqualify`) revokes its tokens, the final's copies too"
                 if config.competition is not None else "")
        return error(f"{config.source}: no bot named {args.name!r} (bots: {', '.join(b.name for b in config.bots)})"
                     + entry)
    if bot.mode != "remote":
        return error(f"{config.source}: bot {args.name!r} is not remote (set remote = true in its [[bots]] table)")
    output = Path(args.output).resolve() if args.output else config.output
    output.mkdir(mode=0o700, parents=True, exist_ok=True)
    with Store(output / DB_NAME) as store:
        if args.revoke:
            n = store.revoke_tokens(args.name)
            err.print(f"revoked {n} token(s) of {args.name}; a running `arena serve` refuses them within "
                      f"{TOKEN_POLL_S:g} s or so and drops their workers (no SIGHUP needed)",
                      highlight=False, soft_wrap=True)
            return 0
        if args.from_env:
            return _token_from_env(args, store, err, error)
        if store.token_digests(args.name):
            return error(f"bot {args.name!r} already has a token; only its SHA-256 is kept, so it cannot be shown "
                         f"again: revoke it with `arena token {args.config} {args.name} --revoke`, then ask again")
        token = new_token()
        store.add_token(args.name, token_digest(token))
    console.print(token, highlight=False, soft_wrap=True)
    tls = f" --tls-ca {Path(config.lobby_tls[0]).name}" if config.lobby_tls else ""
    err.print(f"token for remote bot {args.name}: keep it secret; workers read it from the environment "
              f"(a command line shows in ps): `ALLFOURS_BOT_TOKEN=TOKEN python -m sdk.run MODULE:Class --arena "
              f"{_lobby_to_dial(config.lobby)} --name {args.name}{tls}`"
              + (" (the lobby serves TLS: give its owner the certificate, never the key)" if tls else ""),
              highlight=False, soft_wrap=True)
    return 0


def _lobby_to_dial(lobby: str) -> str:
    """``tournament.lobby`` as a remote worker would dial it: ``HOST`` for a wildcard or loopback host
    (this machine's address is the host's to say), ``PORT`` for port 0 (any free one, printed at start)."""
    host, _, port = lobby.rpartition(":")
    host = "HOST" if host.strip("[]") in ("0.0.0.0", "::", "") or is_loopback(host) else host
    return f"{host}:{'PORT' if port == '0' else port}"



def _token_from_env(args: argparse.Namespace, store: Store, err: Console, error: Callable[[str], int]) -> int:
    """``arena token … --from-env VAR``: store the SHA-256 of the token in ``$VAR`` (or in the file
    ``$VAR_FILE`` names) for the bot (once)."""
    from arena.lobby.tokens import token_digest

    try:
        token = env_secret(args.from_env) or ""
    except SecretError as e:
        return error(f"--from-env {args.from_env}: {e}")
    if not MIN_GIVEN_TOKEN <= len(token) <= 256 or any(c.isspace() for c in token):
        return error(f"--from-env {args.from_env}: the variable must hold a token of {MIN_GIVEN_TOKEN} to 256 "
                     f"characters without spaces (got {len(token)} characters)")
    digest = token_digest(token)
    if digest in store.token_digests(args.name).get(args.name, []):
        err.print(f"the token in ${args.from_env} is already {args.name}'s", highlight=False, soft_wrap=True)
        return 0
    store.add_token(args.name, digest)
    err.print(f"the token in ${args.from_env} is now {args.name}'s (only its SHA-256 is kept)", highlight=False,
              soft_wrap=True)
    return 0


#: Seconds to reach each referee found through DNS (its replica may still be starting).
DNS_CONNECT_TIMEOUT_S = 30.0


class UsageError(ValueError):
    """Bad command-line arguments or config values found outside the config parser (exit status 2)."""


def referee_addresses(config: TournamentConfig, args: argparse.Namespace) -> tuple[list[str], str | None]:
    """The external referees (``--referee`` over ``tournament.referees``; empty: embedded) and their
    admin token (``--admin-token`` over the environment variable ``tournament.admin_token_env``, or the
    file its ``_FILE`` variable names: :func:`referee.credentials.env_secret`).

    :raises UsageError: for a malformed address, or external referees without a token (or with an
        unreadable token file, or the token given twice).
    """
    addresses = []
    for a in args.referee or config.referees:
        try:
            addresses.append(parse_address(a))
        except ValueError as e:
            raise UsageError(f"--referee {a!r}: {e}") from None
    if not addresses:
        return [], None
    try:
        token = args.admin_token or env_secret(config.admin_token_env)
    except SecretError as e:
        raise UsageError(str(e)) from None
    if not token:
        raise UsageError(
            f"external referees need their admin token: pass --admin-token or set ${config.admin_token_env} "
            f"(or a file in ${file_variable(config.admin_token_env)})"
        )
    return list(dict.fromkeys(addresses)), token


def make_runner(
    config: TournamentConfig, args: argparse.Namespace, output: Path, console: Console, league: bool = False
) -> tuple[GameRunner, Callable[[], None]]:
    """The game runner for ``args`` and a closer to call at the end (stops an embedded referee).

    ``league`` (``arena serve``): sandboxed bots may join later (SIGHUP), so the embedded referee gets
    its unix socket whenever ``bwrap`` is there, even if no bot of ``config`` is sandboxed yet.

    :raises arena.play.referees.RefereeError: if a referee is unreachable or refuses the admin token.
    :raises UsageError: for bad referee arguments.
    """
    if args.simulate is not None:
        return SimulatedRunner(delay_s=args.simulate, target=config.rules.target), lambda: None
    from arena.play.game import GrpcGameRunner
    from arena.play.referees import CONNECT_TIMEOUT_S, DnsWatch, resolve_referees

    addresses, token = referee_addresses(config, args)
    if not addresses and not args.verbose:
        _quiet_embedded_referee()
    with contextlib.ExitStack() as undo:  # what is opened is closed again if a later step fails
        jail = open_jail(config, addresses, league)
        if jail is not None:
            undo.callback(jail.close)
        sandbox = open_sandbox(config, output, addresses)
        if sandbox is not None:
            undo.callback(sandbox.close)
        found = resolve_referees(addresses)
        if found != addresses:
            console.print(f"referees: {', '.join(addresses)} -> {', '.join(found)}", highlight=False, soft_wrap=True)
        timeout = DNS_CONNECT_TIMEOUT_S if found != addresses else CONNECT_TIMEOUT_S  # replicas may still be starting
        tls_ca = read_config_file(config, "referee_tls_ca", config.referee_tls_ca) if config.referee_tls_ca else None
        pool = _connect(config, args, sandbox, found, token, timeout, tls_ca)
        isolation = undo.pop_all()

    def on_event(message: str) -> None:
        console.print(f"[yellow]referee failure:[/yellow] {escape(message)}", soft_wrap=True, highlight=False)

    def on_dns(message: str) -> None:
        console.print(f"referees: {escape(message)}", soft_wrap=True, highlight=False)

    # a referee gone from DNS (its container or task died) is retired before a game is sent to it
    watch = DnsWatch(pool, addresses, token, on_dns, tls_ca=tls_ca).start()

    def close() -> None:
        watch.stop()
        pool.close()
        isolation.close()  # the container sandbox, then the process sandbox's sockets

    if addresses and found == addresses:
        console.print(f"referees: {', '.join(addresses)}", highlight=False)
    if sandbox is not None:
        sandbox.allow(int(pool.conns[0].address.rsplit(":", 1)[1]))
        console.print(f"container bots on network {sandbox.network_name} ({sandbox.subnet})", highlight=False)
    return GrpcGameRunner(config, pool, output, on_event=on_event, sandbox=sandbox, live=args.live, jail=jail), close


def _connect(config: TournamentConfig, args: argparse.Namespace, sandbox: Sandbox | None, found: Sequence[str],
             token: str | None, timeout: float, tls_ca: bytes | None) -> RefereePool:
    """The referees at ``found`` (``tls_ca``: over TLS), or the embedded one: on the container sandbox's
    gateway when ``sandbox`` is open (and for remote workers on the lobby's host too: :func:`remote_listener`),
    else where :func:`embedded_referee_host` says.

    :raises arena.play.referees.RefereeError: as :func:`arena.play.referees.connect_referees`.
    :raises UsageError: as :func:`embedded_referee_host`.
    """
    from arena.play.referees import connect_referees

    port, remote, bots = getattr(args, "referee_port", 0), None, None
    if sandbox is not None and sandbox.gateway:  # open() set it
        host, advertise, bots = sandbox.gateway, None, sandbox.bot_network()  # each container counted apart
        remote = None if found else remote_listener(config, args, port)
    else:
        host, advertise = embedded_referee_host(config, args, found)
    return connect_referees(found, token, timeout, host, advertise, tls_ca=tls_ca,
                            serve_tls=_embedded_tls(config, sandbox is not None and bool(sandbox.gateway)),
                            port=0 if remote is not None else port, remote=remote, bots=bots)


def _quiet_embedded_referee() -> None:
    """Warnings only from the embedded referee's log, which has a line for every match event: the
    terminal is kept for the progress bar."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def open_jail(config: TournamentConfig, addresses: Sequence[str], league: bool = False) -> Jail | None:
    """The process sandbox (:class:`arena.hosting.jail.Jail`) when some local process bot is sandboxed
    (``sandbox = "bwrap"``, the default), else None; for a ``league`` on the embedded referee also
    when none is yet, if ``bwrap`` is there (a sandboxed bot may join on SIGHUP).

    :raises UsageError: ``bwrap`` missing (one line naming the package ``bubblewrap``), or sandboxed bots
        with external referees (a sandboxed bot reaches only the embedded referee's unix socket).
    """
    from arena.hosting.jail import Jail, JailError

    jailed = [b.name for b in config.bots if b.jailed]
    if not jailed:
        return Jail.open() if league and not addresses and shutil.which("bwrap") else None
    if addresses:
        raise UsageError(
            f"sandboxed process bots ({', '.join(jailed)}) reach only the embedded referee, over a unix socket: "
            'drop --referee and tournament.referees, or set sandbox = "none" for trusted bots (docs/arena.md)'
        )

    try:
        return Jail.open()
    except JailError as e:
        raise UsageError(str(e)) from None


def _embedded_tls(config: TournamentConfig, in_sandbox_network: bool) -> tuple[bytes, bytes] | None:
    """The TLS pair the embedded referee serves: the lobby's (``lobby_tls_cert``, ``lobby_tls_key``), so
    that a remote worker's games cross the network as privately as its lobby connection; None without
    lobby TLS, or when the referee listens on the container sandbox's gateway (container bots only)."""
    if config.lobby_tls is None or in_sandbox_network:
        return None
    cert, key = config.lobby_tls
    return read_config_file(config, "lobby_tls_cert", cert), read_config_file(config, "lobby_tls_key", key)


def embedded_referee_host(
    config: TournamentConfig, args: argparse.Namespace, referees: Sequence[str]
) -> tuple[str, str | None]:
    """Where the embedded referee listens and the host remote workers are told to dial it at.

    Remote workers (``remote = true`` bots) reach the lobby at ``tournament.lobby``'s host, so the
    referee must be reachable there too: loopback lobby -> ``127.0.0.1`` (as before); a specific
    host -> that host (``--referee-advertise`` may name another); a wildcard (``0.0.0.0``, ``::``)
    -> listen on it and advertise ``--referee-advertise``, which is then required. External
    referees at loopback addresses cannot be dialed by remote workers either.

    :raises UsageError: one line, when remote workers could not reach the referee they are told.
    """
    advertise = getattr(args, "referee_advertise", None)
    host = config.remote_host
    if host is None:
        return "127.0.0.1", advertise
    if referees:
        local = [a for a in referees if is_loopback(a.rpartition(":")[0])]
        if local:
            raise UsageError(f"remote workers dial the lobby at {config.lobby} but would be told referee {local[0]}, "
                             "which only this machine reaches: give the referees by an address the workers reach")
        return "127.0.0.1", None
    try:
        wildcard = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        wildcard = False
    if wildcard and not advertise:
        raise UsageError(f"the lobby listens on {config.lobby} for remote workers, who cannot reach the embedded "
                         "referee there: give --referee-advertise HOST (this machine's address the workers dial) or "
                         "a specific host in tournament.lobby")
    return host, advertise


def remote_listener(config: TournamentConfig, args: argparse.Namespace, port: int) -> RemoteListener | None:
    """Where the embedded referee, listening on the container sandbox's gateway (which only this machine
    reaches), also listens for remote workers on other machines: on the lobby's host
    (:func:`embedded_referee_host`: a wildcard lobby needs ``--referee-advertise``) at ``port`` (0: any
    free one), serving the lobby's TLS pair when it has one. None when no remote worker can come (no
    ``mode = "remote"`` bot and no competition, whose remote entries register later) or the lobby is on
    loopback (its workers are on this machine, and reach the gateway).

    :raises UsageError: a wildcard lobby without ``--referee-advertise``.
    """
    from arena.play.referees import RemoteListener

    if config.remote_host is None:
        return None
    host, advertise = embedded_referee_host(config, args, [])
    return RemoteListener(host, port, advertise, _embedded_tls(config, False))


def reach_remote_workers(config: TournamentConfig, args: argparse.Namespace, pool: RefereePool,
                         in_sandbox_network: bool) -> None:
    """Make the referees of a league's re-read ``config`` (SIGHUP) ones its remote workers reach, when it
    has remote workers now (:attr:`arena.config.TournamentConfig.remote_host`: a ``mode = "remote"`` bot
    on a lobby other machines dial) and the embedded referee listens only where this machine reaches it
    (``127.0.0.1``, as a league started without remote workers does, or the container sandbox's gateway,
    ``in_sandbox_network``): it opens the listener for remote workers (:func:`remote_listener`) at
    ``--referee-port`` (0: any free port), as had the league started with them. External referees at
    loopback addresses are refused as at the start (:func:`embedded_referee_host`).

    :raises ConfigError: one line naming ``tournament.lobby``, so the league keeps its old config: a
        wildcard lobby without ``--referee-advertise``, loopback external referees, or the address cannot
        be bound.
    """
    from arena.play.referees import RefereeError

    if config.remote_host is None:
        return
    embedded = [c for c in pool.conns if c.embedded is not None]
    try:
        if not embedded:
            embedded_referee_host(config, args, [c.address for c in pool.conns])
            return
        conn = embedded[0]
        if conn.remote is not None or not (in_sandbox_network or is_loopback(conn.address.rpartition(":")[0])):
            return
        listener = remote_listener(config, args, getattr(args, "referee_port", 0))
        if listener is not None:
            listener.open(conn)
    except (UsageError, RefereeError) as e:
        raise ConfigError(config.source, "tournament.lobby", f"remote workers cannot be told a referee they "
                          f"reach: {e}", show_value=False) from None


def open_sandbox(config: TournamentConfig, output: Path, addresses: Sequence[str]) -> Sandbox | None:
    """The container sandbox (:class:`arena.hosting.sandbox.Sandbox`, opened) when the tournament has container
    bots or a competition (its accepted submissions play in containers), else None. Leftovers of an earlier
    run of this tournament are removed first.

    :raises UsageError: container bots with external referees (the containers reach only the host's
        gateway on their network, where the embedded referee listens).
    :raises arena.hosting.sandbox.SandboxError: docker unreachable, the network or firewall rules failing.
    """
    if not any(b.in_container for b in config.bots) and config.competition is None:
        return None
    if addresses:
        raise UsageError(
            "container bots play on the embedded referee (their network reaches only it): drop --referee "
            "and tournament.referees, or run the bots as lobby workers (docs/deploy.md)"
        )
    from arena.hosting.sandbox import Sandbox, docker_client, raise_open_files, run_key

    # every seat of every game at once in a container of its own, and the container bots' worker pools
    raise_open_files(config.concurrency * config.players + sum(b.workers for b in config.bots if b.in_container))
    sandbox = Sandbox(docker_client(), run_key(output), config.name)
    sandbox.open()
    return sandbox


class ErrorLine(Protocol):
    """Prints ``label: message`` as one line on the error console (``label`` is ``error`` unless given)."""

    def __call__(self, message: str, label: str = "error") -> None: ...


def check_ladder_total(config: TournamentConfig) -> None:
    """:raises ConfigError: for a ladder without a total budget (``arena run`` must end; ``arena serve`` need not)."""
    if config.ladder is not None and config.ladder.budget.total is None:
        raise ConfigError(config.source, "tournament.ladder.total", "`arena run` of a ladder needs a total budget "
                          "(games); a ladder without one is a league: `arena serve`", show_value=False)


def run_command(args: argparse.Namespace, console: Console, err: Console | None = None) -> int:
    """``arena run``: see the module docstring for the exit status. The output folder is locked before
    anything else starts (a referee, the sandboxes: a container sandbox removes the leftovers of runs
    in that folder); a stop signal (:mod:`arena.cli.interrupt`) cannot cut the clean-up short."""
    from arena.play.referees import RefereeError

    err = err or console

    def error(message: str, label: str = "error") -> None:
        err.print(f"[red]{label}:[/red] {escape(message)}", soft_wrap=True, highlight=False)

    checked = _checked_config(args, error)
    if isinstance(checked, int):
        return checked
    config, output = checked
    closers: list[Callable[[], None]] = []
    get_runner = _runner_maker(config, args, output, console, closers)
    if args.metrics_port is not None and not _serve_metrics(args, config, console, error):
        return 2
    held = contextlib.ExitStack()
    try:
        held.enter_context(lock_output(output))
        held.callback(_close_all, closers)  # before the lock is let go
        if args.simulate is None and not (output / DB_NAME).exists():
            get_runner()  # a new tournament: reach the referees before writing anything
        return _open_and_play(args, console, error, config, output, get_runner)
    except (ConfigError, UsageError) as e:  # a ConfigError here: the lobby cannot listen where the config says
        error(str(e), "config error" if isinstance(e, ConfigError) else "error")
        return 2
    except (OutputLocked, SandboxError) as e:  # SandboxError: no dockerd for the container bots
        error(str(e))
        return 1
    except RefereeError as e:
        error(str(e))
        if e.exit_status == 1 and (output / DB_NAME).exists():
            error("stored games are kept; run the same command to resume", "note")
        return e.exit_status
    finally:
        with interrupt.shielded():  # a folder made for a tournament that never began is removed
            held.close()


def _close_all(closers: list[Callable[[], None]]) -> None:
    """Call each closer in order (the runner's: bots, lobby, referees, sandboxes)."""
    for close in closers:
        close()


def _checked_config(args: argparse.Namespace, error: ErrorLine) -> tuple[TournamentConfig, Path] | int:
    """``arena run``'s config and output folder, checked (bots' working folders, a ladder's total
    budget), or exit status 2 after one ``config error`` line per problem."""
    try:
        config = load_config(args.config)
    except ConfigError as e:
        for one in e.errors:  # every problem of the file, one line each
            error(str(one), "config error")
        return 2
    output = Path(args.output).resolve() if args.output else config.output
    try:
        check_bot_cwds(config, output)
        check_ladder_total(config)
    except ConfigError as e:
        error(str(e), "config error")
        return 2
    return config, output


def _runner_maker(config: TournamentConfig, args: argparse.Namespace, output: Path, console: Console,
                  closers: list[Callable[[], None]]) -> Callable[[], GameRunner]:
    """The run's game runner, made (:func:`make_runner`) on first use; its closer goes in ``closers``."""
    made: list[GameRunner] = []

    def get_runner() -> GameRunner:
        if not made:
            runner, close = make_runner(config, args, output, console)
            made.append(runner)
            closers.append(close)
        return made[0]

    return get_runner


def _serve_metrics(args: argparse.Namespace, config: TournamentConfig, console: Console,
                   error: Callable[[str], object]) -> bool:
    """``--metrics-port``: serve the metrics (:func:`arena.metrics.registry`: the referee's only when it is
    embedded) and print where; False after one line if the port is taken."""
    from referee.credentials import SecretError
    from referee.metrics import metrics_token, serve

    embedded = args.simulate is None and not (args.referee or config.referees)
    try:
        port = serve(args.metrics_port, args.metrics_host, metrics.registry(embedded), metrics_token())
    except SecretError as e:
        error(str(e))
        return False
    except OSError as e:
        error(f"--metrics-port {args.metrics_port}: {e.strerror or e}")
        return False
    console.print(f"metrics: http://{args.metrics_host}:{port}/metrics", highlight=False)
    return True


def serve_command(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena serve``: see :mod:`arena.tournament.league`. Exit status 0 after SIGTERM/SIGINT; 2 on a bad config,
    arguments, a changed rule/time control or a closed league (``arena competition close`` revealed its
    seed); 1 when the referees cannot be reached, the folder is locked or
    docker does not answer (container bots, a competition)."""
    from arena.play.referees import RefereeError

    def error(message: str, label: str = "error") -> int:
        err.print(f"[red]{label}:[/red] {escape(message)}", soft_wrap=True, highlight=False)
        return 2

    try:
        config = load_config(args.config)
        output = Path(args.output).resolve() if args.output else config.output
        check_bot_cwds(config, output)
    except ConfigError as e:
        for one in e.errors:
            error(str(one), "config error")
        return 2
    if args.web is not None and not 0 <= args.web < 65536:
        return error(f"--web must be a port between 0 and 65535, not {args.web}")
    from arena.web import bind, trusted_proxies

    try:
        args.web_proxy = trusted_proxies(args.web_proxy)
    except ValueError as e:
        return error(f"--web-proxy {e}")
    web_sock = None
    if args.web is not None:  # bound first: a busy port stops nothing already started
        try:
            web_sock = bind(args.web_host, args.web)
        except OSError as e:
            return error(f"--web {args.web_host}:{args.web}: {e.strerror or e}")
    closers: list[Callable[[], None]] = [web_sock.close] if web_sock is not None else []
    if args.metrics_port is not None and not _serve_metrics(args, config, console, error):
        _close_all(closers)
        return 2
    try:
        with lock_output(output):
            try:
                return _serve_league(args, config, output, console, closers, error, web_sock)
            finally:  # the workers, sandboxes and store are closed before the lock is let go
                _close_all(closers)
                closers.clear()
    except ConfigError as e:  # found once the league starts: the lobby cannot listen where the config says
        return error(str(e), "config error")
    except SandboxError as e:  # no dockerd for the container bots or a competition's submissions
        error(str(e))
        return 1
    except UsageError as e:
        return error(str(e))
    except OutputLocked as e:
        error(str(e))
        return 1
    except RefereeError as e:
        error(str(e))
        return e.exit_status
    finally:  # the lock was refused: only the web socket is open
        _close_all(closers)


def _serve_league(
    args: argparse.Namespace,
    config: TournamentConfig,
    output: Path,
    console: Console,
    closers: list[Callable[[], None]],
    error: Callable[[str], int],
    web_sock: socket.socket | None = None,
) -> int:
    """Serve the league in the locked ``output`` until stopped (see :func:`serve_command`), its web on
    ``web_sock`` (``--web``); every resource opened is put in ``closers`` (first to close first)."""
    from arena.tournament.league import League, install_signals

    refused = closed_league(output)  # its seed is published: refused before a referee or a bot starts
    if refused is not None:
        return error(refused)
    first, close = make_runner(config, args, output, console, league=True)
    closers.append(close)
    runner_for = _league_runners(first, args, output)
    refreshed: list[Callable[[], None]] = []  # run (in the refresher's thread) after each background bootstrap

    def on_refreshed(_: Refreshed) -> None:
        for fn in refreshed:
            fn()

    publisher, cache = LivePublisher(args.bootstrap, on_done=on_refreshed), PublishCache()  # kept by each publication
    closers.insert(0, publisher.close)
    league = League(args.config, output, console, lambda t: publish_tournament(
        t, output, args.bootstrap, None, reveal=False, publisher=publisher, cache=cache), runner_for)
    refreshed.append(league.request_republish)
    closers.insert(0, league.close)
    if config.competition is not None:
        from arena.competition.setup import open_competition

        closers.insert(0, open_competition(config, output, league, _competition_note(console)))
    install_signals(league)
    remove_live_files(output)  # left by a killed run: no game of the folder runs now
    try:
        league.open(config)
    except StoreMismatch as e:
        return error(str(e))
    if web_sock is not None:  # --web, bound by serve_command
        web = _start_web(args, output, publisher, console, web_sock)
        closers.insert(0, web.stop)
        league.after_game.append(lambda result, t: web.notify())
        refreshed.append(web.notify)
    assert league.tournament is not None  # open() set it or raised
    league.publish(league.tournament)
    console.print("serving: SIGHUP re-reads the config, SIGTERM stops", highlight=False)
    league.serve()
    console.print("stopped: every stored game is kept; `arena serve` again resumes", highlight=False)
    return 0


def _league_runners(
    first: GameRunner, args: argparse.Namespace, output: Path
) -> Callable[[TournamentConfig], GameRunner]:
    """How a league makes the runner of each (re-read) config: on ``first``'s referees, sandboxes and jail."""
    from arena.play.game import GrpcGameRunner

    assert isinstance(first, GrpcGameRunner)

    def runner_for(cfg: TournamentConfig) -> GrpcGameRunner:
        """The runner of a (re-read) config. :raises ConfigError: sandboxed bots without a sandbox
        (bwrap missing, or external referees), or remote workers that could not be told a referee they
        reach (:func:`reach_remote_workers`), so the league keeps its old config."""
        if first.jail is None and any(b.jailed for b in cfg.bots):
            raise ConfigError(cfg.source, "bots", 'sandboxed process bots need bwrap (Debian\'s bubblewrap) and '
                              'the embedded referee: install it and restart, or set sandbox = "none"', show_value=False)
        reach_remote_workers(cfg, args, first.pool, first.sandbox is not None)
        return GrpcGameRunner(cfg, first.pool, output, on_event=first.on_event, sandbox=first.sandbox,
                              live=first.live, jail=first.jail)

    return runner_for


def _competition_note(console: Console) -> Callable[[str], None]:
    """How the competition service tells the host something: one line ``competition: …`` on ``console``."""
    return lambda m: console.print(f"[cyan]competition:[/cyan] {escape(m)}", soft_wrap=True, highlight=False)


def _start_web(args: argparse.Namespace, output: Path, publisher: LivePublisher, console: Console,
               sock: socket.socket) -> WebServer:
    """``arena serve --web PORT``: the web app of ``output`` on ``sock`` (bound by :func:`serve_command`)
    in a thread of this process, sharing the league's ratings ``publisher``; prints its address."""
    from arena.web import start_in_thread

    # args.web_proxy: checked by serve_command (trusted_proxies)
    web = start_in_thread(output, args.web_host, args.web, args.web_proxy, sock, bootstrap=args.bootstrap,
                          publisher=publisher)
    host = f"[{args.web_host}]" if ":" in args.web_host else args.web_host
    console.print(f"web: http://{host}:{web.port}/", highlight=False)
    return web


def _open_and_play(
    args: argparse.Namespace,
    console: Console,
    error: ErrorLine,
    config: TournamentConfig,
    output: Path,
    get_runner: Callable[[], GameRunner],
) -> int:
    """Open (or resume) the tournament in the locked ``output``, play its pending games, publish."""
    remove_live_files(output)  # left by a killed `arena run --live`: no game of the folder runs now
    try:
        t = open_tournament(config, output)
    except StoreMismatch as e:
        error(str(e))
        return 2
    try:
        if config.ladder is not None:
            return _run_ladder(args, console, error, t, output, get_runner)
        pending = pending_games(t)
        console.print(
            f"tournament {config.name}: {len(t.schedule)} games scheduled, "
            f"{len(t.schedule) - len(pending)} already played; master seed commitment {t.commitment}",
            soft_wrap=True,
        )
        test = SprtRun(config, t.schedule, t.store.results()) if config.sprt else None
        if test is not None and test.test.decided:
            pending = []  # the test has decided: the rest of the game limit is not played
            console.print("the SPRT has decided: no more games to play", highlight=False)
        if pending:
            _note_revealed(t, error)
            runner = get_runner()
            if hasattr(runner, "use_entrants"):
                runner.use_entrants(t.entrants)
            setup = _open_lobby(config, t, runner, output, console)
            try:
                code = _play(args, console, error, config, t, pending, runner, test, barred=_book_bar(output, error))
            finally:
                if setup is not None:
                    setup.stop()
            if code:
                return code
        publish_tournament(t, output, args.bootstrap, console)
        return 0
    finally:
        t.store.close()


def _note_revealed(t: Tournament, error: ErrorLine) -> None:
    """Before new games of a tournament whose master seed was revealed (it was complete): say so once."""
    if t.store.get_meta("finished_at") is not None:
        error("the master seed was revealed when this tournament was complete; anyone can compute the "
              "deals of the games added since (a league that keeps growing: `arena serve`)", "note")


def _run_ladder(
    args: argparse.Namespace,
    console: Console,
    error: ErrorLine,
    t: Tournament,
    output: Path,
    get_runner: Callable[[], GameRunner],
) -> int:
    """``arena run`` of a ladder: ask it for the next pairs, play them, until it stops (its total budget
    spent, settled, or waiting for tomorrow's budgets); then publish. One line per plan: the pairs and why."""
    import json
    import time

    from arena.formats.ladder_run import LadderRun, pairs_a_round
    from arena.tournament.runner import LADDER_KEY

    ladder = LadderRun(t)
    console.print(f"tournament {t.config.name}: a ladder, {t.store.count()} games stored, total budget "
                  f"{t.config.ladder.budget.total if t.config.ladder else None} games; "
                  f"master seed commitment {t.commitment}", soft_wrap=True, highlight=False)
    runner, setup = None, None
    try:
        while True:
            now = time.time()
            games = ladder.next_games(pairs_a_round(t.config), now)
            if games and runner is None:
                _note_revealed(t, error)
                runner = get_runner()
                if hasattr(runner, "use_entrants"):
                    runner.use_entrants(t.entrants)
                setup = _open_lobby(t.config, t, runner, output, console)
                code = _check_bots(args, console, error, runner, games, ladder.active)
                if code:
                    return code
                if ladder.leave_out(getattr(runner, "broken", {})):  # --skip-broken: choose without them
                    games = ladder.next_games(pairs_a_round(t.config), now)
            t.store.set_meta(LADDER_KEY, json.dumps(ladder.board(now)))
            console.print(escape(ladder.plan_line()), soft_wrap=True, highlight=False)
            if not games:
                break
            assert runner is not None  # started with the first games
            code = _play(args, console, error, t.config, t, games, runner, ladder=ladder, check=False)
            if code:
                return code
    finally:
        if setup is not None:
            setup.stop()
    publish_tournament(t, output, args.bootstrap, console)
    return 0


def _open_lobby(
    config: TournamentConfig, t: Tournament, runner: GameRunner, output: Path, console: Console
) -> LobbySetup | None:
    """Start the lobby and the lobby bots' workers when the config has any (else None); print where."""
    from arena.play.game import GrpcGameRunner

    if not config.uses_lobby or not isinstance(runner, GrpcGameRunner):
        return None
    from arena.lobby.setup import open_lobby

    def on_event(message: str) -> None:
        console.print(f"[yellow]workers:[/yellow] {escape(message)}", soft_wrap=True, highlight=False)

    setup = open_lobby(config, t.store, output / "logs", runner.secret_names, runner.secret_values, on_event,
                       runner.sandbox, loop=runner.pool.embedded_loop(), jail=runner.jail)
    runner.attach_lobby(setup.lobby, setup.kinds)
    tls = " (TLS)" if config.lobby_tls else ""
    also = setup.lobby.remote_address  # None when the lobby's own address is tournament.lobby's (a wildcard)
    remote = f", remote workers at {also}" if config.remote_host and also else ""
    console.print(f"lobby: {setup.lobby.address}{tls}{remote}", highlight=False)
    return setup


def _workers_note(console: Console) -> Callable[[str], None]:
    """How the run loop's notes are said (a remote bot's games wait for its first worker; a run that ends gives
    up on it): one ``workers: …`` line on ``console``, as the lobby's own."""
    return lambda line: console.print(f"[yellow]workers:[/yellow] {escape(line)}", soft_wrap=True, highlight=False)


def _play(
    args: argparse.Namespace,
    console: Console,
    error: ErrorLine,
    config: TournamentConfig,
    t: Tournament,
    pending: Sequence[ScheduledGame],
    runner: GameRunner,
    test: SprtRun | None = None,
    *, ladder: LadderRun | None = None, check: bool = True, barred: Callable[[], Mapping[str, str]] = dict,
) -> int:
    """Play the ``pending`` games with a progress bar; returns 0, or the exit status of a failure.

    :param test: an sprt tournament's test: once it decides, no new game starts. ``barred``: the entrants barred
        (:func:`_book_bar`): not checked, their games forfeited (:func:`arena.tournament.runner.run_games`).
    :param ladder: a ladder's :class:`arena.formats.ladder_run.LadderRun`, fed each stored game (no bar);
        ``check``: check the bots first (:func:`_check_bots`; a ladder checks all its entrants itself).
    """
    from arena.play.referees import RefereeError

    if code := _check_bots(args, console, error, runner, pending, barred=barred()) if check else 0:
        return code
    stop = threading.Event()
    try:
        with progress_bar(
            len(t.schedule), len(t.schedule) - len(pending), console, enabled=not args.no_progress and not ladder
        ) as advance:
            seen = failures.Failures()
            logs = GameLogs(config.bot_logs_kept_games)  # its first call sweeps: earlier runs' games too

            def on_result(result: GameResult, written: bool) -> None:
                for counts in failures.of_game(result).values():
                    seen.add(counts)
                advance(1, seen.summary())
                if written:
                    metrics.game_stored(result)
                    logs.after_store(t.store)
                if written and ladder is not None:
                    ladder.add(result)
                if test is not None and written and test.add(result):
                    stop.set()
                failed = [r for r in result.reasons if not r.startswith("side ") or "forfeit" in r]
                if failed:  # printed above the progress bar while it runs, or alone with --no-progress
                    console.print(
                        f"{result.game_id}: {escape('; '.join(result.reasons))}", highlight=False, soft_wrap=True
                    )

            with interrupt.stopping(stop):  # a stop signal: no new game; those in flight are stored
                run_games(pending, runner, t.store, config.concurrency, on_result, stop,
                          twins_together=config.twins_together, on_note=_workers_note(console), barred=barred)
    except RefereeError as e:
        error(str(e))
        if e.exit_status == 1:
            error("stored games are kept; run the same command to resume (the failed games are played again)", "note")
        return e.exit_status
    except Exception as e:
        error(f"{type(e).__name__}: {e}; stored games are kept; run the same command to resume")
        return 1
    interrupt.raise_if_received()  # the games in flight are stored: the run ends as Ctrl-C ends it (main)
    return 0


#: Seconds the run waits, at each look for games to start, for a busy competition book (:func:`_book_bar`).
BAR_WAIT_S = 0.5


def _book_bar(output: Path, error: ErrorLine) -> Callable[[], Mapping[str, str]]:
    """The entrants of the run in ``output`` its competition's host disqualified, as the run asks at each look for
    games to start (:func:`arena.report.disqualified.read_barred`, read again each time: a final's folder reads
    the competition's book beside it, so a disqualification, or its undoing, holds in a final already written;
    ``{}`` for a folder of no competition). A book that cannot be read (busy past its wait) keeps the last answer,
    said once in a ``note`` line."""
    import sqlite3

    from arena.report.disqualified import read_barred

    last: dict[str, str] = {}
    said: list[str] = []

    def now() -> Mapping[str, str]:
        nonlocal last
        try:
            last = read_barred(output, BAR_WAIT_S)  # the run loop waits on it: a busy book costs a look no more
        except sqlite3.Error as e:
            if not said:
                said.append(str(e))
                error(f"the competition's disqualifications could not be read ({e}): the last read holds", "note")
        return last

    return now


def _check_bots(
    args: argparse.Namespace,
    console: Console,
    error: ErrorLine,
    runner: GameRunner,
    pending: Sequence[ScheduledGame],
    entrants: Sequence[str] | None = None,
    barred: Collection[str] = (),
) -> int:
    """Check every bot of the ``pending`` games once (it starts and joins a practice match) before the
    first game, but those of ``barred`` (disqualified: their games are forfeited, their bots never started);
    ``entrants``: check these instead (a ladder, whose games are chosen as it goes). A failure
    stops the run (exit status 2, one line per broken bot), or with ``--skip-broken`` its games are
    forfeited at once, or in a ladder it gets none (the caller leaves it out: :meth:`LadderRun.leave_out`),
    one warning line per broken bot; returns 0 to go on."""
    check = getattr(runner, "check_bots", None)
    if check is None:  # the simulated runner starts no bots
        return 0
    names = list(entrants) if entrants is not None else list(dict.fromkeys(n for g in pending for n in g.sides))
    names = [n for n in names if n not in barred]
    problems: dict[str, str] = check(names)
    for name, why in problems.items():
        games = ("it gets no games in this run" if entrants is not None
                 else f"its {sum(name in g.sides for g in pending)} games are forfeited")
        if args.skip_broken:
            console.print(
                f"[yellow]warning:[/yellow] bot {escape(repr(name))} failed its check: {escape(why)}; "
                f"{games} (--skip-broken)",
                soft_wrap=True,
                highlight=False,
            )
        else:
            error(f"bot {name!r} failed its check before the first game: {why} (fix it, or pass --skip-broken)")
    return 2 if problems and not args.skip_broken else 0


def backup_command(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena backup OUTPUT DEST`` (:mod:`arena.tournament.backup`): 0 and one line saying what was copied,
    or 2 and one line saying why not."""
    from arena.tournament.backup import SKIPPED, BackupError, backup

    try:
        made = backup(Path(args.output), Path(args.dest))
    except (BackupError, OSError) as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 2
    dbs = ", ".join(f"{name} ({size} bytes)" for name, size in made.databases.items())
    console.print(f"backup: {Path(args.dest).resolve()}: {dbs} and {made.files} other files "
                  f"({', '.join(sorted(SKIPPED))} left out)", soft_wrap=True, highlight=False)
    return 0


def restore_command(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena restore BACKUP OUTPUT [--keep-close]`` (:mod:`arena.tournament.restore`): 0 and one line saying
    what was restored and where the replaced folder is, 2 and one line saying why not (nothing changed), 1 and
    one line while an arena uses OUTPUT."""
    from arena.tournament.backup import BackupError
    from arena.tournament.lock import OutputLocked
    from arena.tournament.restore import RestoreError, restore

    try:
        done = restore(Path(args.backup), Path(args.output), args.keep_close)
    except OutputLocked as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 1
    except (RestoreError, BackupError, OSError) as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 2
    dbs = ", ".join(f"{name} ({size} bytes)" for name, size in done.copied.databases.items())
    aside = f"; the folder it replaced is at {done.aside}" if done.aside else ""
    kept = (f"; kept from it: {', '.join(done.kept)} (what came after the backup is gone; `arena competition close "
            "CONFIG` publishes a closed league's board again)") if done.kept else ""
    console.print(f"restore: {Path(args.output).resolve()} from {Path(args.backup).resolve()}: {dbs} and "
                  f"{done.copied.files} other files{aside}{kept}", soft_wrap=True, highlight=False)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arena`` console script; returns the exit status."""
    from sdk.worker import warn_secret_in_argv

    warn_secret_in_argv("arena", sys.argv[1:] if argv is None else argv, "--admin-token",
                        "the admin token's environment variable")
    args = parser().parse_args(argv)
    console = make_console()
    err = make_console(stderr=True)
    try:
        if args.command == "run":
            from referee.server import tune_gc

            tune_gc()  # a long run, maybe with the embedded referee: GC pauses off its decisions
            with interrupt.handled():
                return run_command(args, console, err)
        if args.command == "bots":
            return bots_build_command(args, console, err)
        if args.command == "web":
            return web_command(args, err)
        if args.command == "serve":
            from referee.server import tune_gc

            tune_gc()
            return serve_command(args, console, err)
        if args.command == "token":
            return token_command(args, console, err)
        if args.command == "backup":
            return backup_command(args, console, err)
        if args.command == "restore":
            return restore_command(args, console, err)
        if args.command == "competition" and args.competition_command == "final":
            from arena.cli.competing import final_command

            with interrupt.handled():
                return final_command(args, console, err, run_command)
        if args.command in ("competitor", "competition", "submit", "submissions"):
            from arena.cli.competing import competing_command

            return competing_command(args, console, err)
    except KeyboardInterrupt as e:  # SIGINT, or for `arena run` SIGTERM and SIGHUP (arena.cli.interrupt)
        err.print(interrupt.line(interrupt.signum_of(e)), highlight=False, soft_wrap=True)
        return interrupt.exit_status(interrupt.signum_of(e))
    except StorageError as e:  # a damaged database, a full disk: the message names the file and what to do
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 1
    except Exception as e:
        if getattr(args, "verbose", False):
            raise
        err.print(
            f"[red]error:[/red] {escape(f'{type(e).__name__}: {e}')} (--verbose shows the traceback)",
            soft_wrap=True,
            highlight=False,
        )
        return 1
    return 2  # pragma: no cover - argparse rejects other commands


if __name__ == "__main__":
    sys.exit(main())
