"""A bot *worker*: one long-lived connection to an arena's lobby, one seat at a time, match after match.

Protocol (proto/allfours/v1/lobby.proto, docs/protocol.md "Workers and the lobby"): open
``LobbyService.Connect``, send Register (bot token, bot name, version, protocol version), wait for
Assignments; for each, play the seat on the referee's ``Play`` stream with the ticket (the same
:class:`sdk.client.BotClient` a per-game bot uses), then send Ready. A lost lobby connection (the
arena restarting, for an upgrade of any length) is dialled again, on a new channel, with back-off (0.5 s
doubling to 5 s, with jitter) until the worker is stopped, or for ``reconnect_s`` seconds when given
(:func:`gives_up`); a refused token or registration (UNAUTHENTICATED,
INVALID_ARGUMENT, a message over the lobby's 16 KiB limit: RESOURCE_EXHAUSTED) ends the worker with
:class:`WorkerError` at once; a full pool (RESOURCE_EXHAUSTED "… workers connected: dial again later",
or any refusal ending ``dial again later``) is dialled again like a lost lobby.

Environment (set by the arena for its own local workers; a remote worker may use them too):
``ALLFOURS_LOBBY`` (``host:port``), ``ALLFOURS_BOT_TOKEN``, ``ALLFOURS_BOT_NAME``, and
``ALLFOURS_WORKER_PARENT`` (the arena's process id: the worker leaves once that process is gone, so
a local worker never outlives its arena).
"""

from __future__ import annotations

import logging
import os
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from referee import wire
from referee.credentials import read_pem
from referee.tls import tls_hint

if TYPE_CHECKING:
    from sdk.bot import BotLike

log = logging.getLogger("sdk.worker")

#: Environment variable holding the lobby's ``host:port``.
LOBBY_ENV = "ALLFOURS_LOBBY"
#: Environment variable holding the bot token.
TOKEN_ENV = "ALLFOURS_BOT_TOKEN"
#: Environment variable holding the bot's name in the tournament config.
NAME_ENV = "ALLFOURS_BOT_NAME"
#: Environment variable holding the PEM file of the CA/certificate to trust for TLS (lobby and referee);
#: set, the lobby is dialled with TLS.
TLS_CA_ENV = "ALLFOURS_TLS_CA"
#: Environment variable holding the PEM file to trust for a referee that serves TLS (an Assignment with
#: ``referee_tls``) when the lobby does not: the arena sets it for its local workers from
#: ``tournament.referee_tls_ca``; unset, :data:`TLS_CA_ENV`'s file is trusted for both.
REFEREE_TLS_CA_ENV = "ALLFOURS_REFEREE_TLS_CA"


def warn_secret_in_argv(prog: str, argv: Sequence[str], option: str, instead: str) -> None:
    """One line on stderr when ``option`` (``--token``) was given in ``argv``: a command line shows in
    ``ps`` to every local user, the environment (``instead``: where to put it) does not."""
    if any(a == option or a.startswith(option + "=") for a in argv):
        print(f"{prog}: warning: {option} is visible to every local user (ps); set {instead} instead",
              file=sys.stderr, flush=True)


def referee_tls_ca(lobby_ca: bytes | None) -> bytes | None:
    """The PEM to trust for a TLS referee: :data:`REFEREE_TLS_CA_ENV`'s file, else ``lobby_ca``.

    :raises PemError: if the file cannot be read or holds no PEM certificate.
    """
    path = os.environ.get(REFEREE_TLS_CA_ENV)
    if not path:
        return lobby_ca
    return read_pem(REFEREE_TLS_CA_ENV, path)
#: Environment variable holding the process id of the arena that started this (local) worker.
PARENT_ENV = "ALLFOURS_WORKER_PARENT"

#: Codes after which dialling again cannot help (RESOURCE_EXHAUSTED: see :func:`is_final`).
FATAL_CODES = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INVALID_ARGUMENT,
               grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNIMPLEMENTED,
               grpc.StatusCode.PERMISSION_DENIED)
#: The lobby's refusal of one worker too many (docs/protocol.md): RESOURCE_EXHAUSTED, but a worker
#: may leave, so it is worth dialling again; any other RESOURCE_EXHAUSTED (a message over the lobby's
#: 16 KiB receive limit: ``Received message larger than max``) is final.
POOL_FULL = "workers connected: dial again later"
#: The end of every RESOURCE_EXHAUSTED of the lobby worth dialling again after: a full pool
#: (:data:`POOL_FULL`), too many streams waiting to register (from this address, or in all).
DIAL_AGAIN = "dial again later"


def is_final(code: grpc.StatusCode, details: str | None) -> bool:
    """Whether the lobby's refusal ``code`` with ``details`` ends the worker (dialling again cannot help)."""
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and (details or "").endswith(DIAL_AGAIN):
        return False
    return code in FATAL_CODES

#: Seconds before the first dial again after a loss; doubled after each failed dial, up to MAX_BACKOFF_S.
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 5.0
#: Each wait is the back-off times a random factor within 1 ± JITTER.
JITTER = 0.2


def gives_up(now: float, lost_at: float, reconnect_s: float | None) -> bool:
    """Whether a worker that lost its lobby at ``lost_at`` (or started then, not yet registered) stops dialling
    at ``now`` (seconds, one monotonic clock): only with a bound ``reconnect_s`` (seconds, ``--reconnect``)
    that has run out; None, the default, dials on for as long as the worker runs (the arena may be
    upgraded for hours, and its competitors' workers must be there when it is back)."""
    return reconnect_s is not None and now - lost_at >= reconnect_s

#: Plays one assignment to its end; errors it raises are logged and the worker carries on.
PlaySeat = Callable[[lpb.Assignment], None]


class WorkerError(RuntimeError):
    """The lobby refused this worker (wrong or revoked token, bad registration) or stayed unreachable.

    ``str(e)`` is one line, e.g. ``lobby 127.0.0.1:7000 refused the worker: UNAUTHENTICATED: unknown
    or revoked bot token``.
    """


class LobbyWorker:
    """One worker: registers at ``lobby`` and plays each assignment with ``play``.

    :param play: plays one :class:`~allfours.v1.lobby_pb2.Assignment` (see :func:`sdk_player`).
    :param lobby: ``host:port``; :param token: the bot token; :param name: the bot's config name;
    :param version: reported in Register; :param games: leave after this many matches (None: never);
    :param tls_ca: PEM root certificate(s) for a lobby serving TLS (None: plaintext);
    :param reconnect_s: seconds to keep dialling a lobby that went away (or is not up yet); None (the
        default): for as long as the worker runs (:func:`gives_up`);
    :param stop: set it to leave after the current match.
    """

    def __init__(self, play: PlaySeat, lobby: str, token: str, name: str, version: str = "0",
                 games: int | None = None, tls_ca: bytes | None = None, reconnect_s: float | None = None,
                 stop: threading.Event | None = None) -> None:
        self.play, self.lobby, self.token, self.name, self.version = play, lobby, token, name, version
        self.games, self.tls_ca, self.reconnect_s = games, tls_ca, reconnect_s
        self.stop = stop or threading.Event()
        self.played = 0
        self.worker_id = ""
        self._registered = False
        parent = os.environ.get(PARENT_ENV, "")
        self._parent = int(parent) if parent.isdigit() else None

    def _orphaned(self) -> bool:
        """True once the arena that started this worker (``ALLFOURS_WORKER_PARENT``) is gone."""
        if self._parent is None:
            return False
        try:
            os.kill(self._parent, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def run(self) -> int:
        """Serve until ``games`` matches are played, ``stop`` is set, or the parent arena is gone;
        returns the matches played.

        :raises WorkerError: if the lobby refuses the registration, or cannot be reached for ``reconnect_s``
            (when given).
        """
        lost_at = time.monotonic()
        backoff = FIRST_BACKOFF_S
        hint_tls = True  # until a session registers: a TLS mismatch then gets a hint (referee.tls)
        while not self._done():
            self._registered = False
            # A new channel for each dial: one channel kept across a long outage waits out gRPC's own
            # reconnect back-off (up to 120 s) after the lobby is back, whatever the back-off here.
            if self.tls_ca is not None:
                channel = grpc.secure_channel(self.lobby, grpc.ssl_channel_credentials(root_certificates=self.tls_ca))
            else:
                channel = grpc.insecure_channel(self.lobby)
            try:
                self._session(lpb_grpc.LobbyServiceStub(channel))
                why = "the stream ended"
            except grpc.RpcError as e:
                code = e.code()
                why = f"{code.name}: {e.details()}"
                if is_final(code, e.details()):
                    raise WorkerError(f"lobby {self.lobby} refused the worker: {why}") from None
            finally:
                channel.close()
            if self._registered:  # a session that got as far as Registered, however it ended
                lost_at = time.monotonic()
                backoff = FIRST_BACKOFF_S
                hint_tls = False
            if self._done():
                break
            hint = tls_hint(why, self.lobby, "--tls-ca" if self.tls_ca is not None else None) if hint_tls else ""
            if gives_up(time.monotonic(), lost_at, self.reconnect_s):
                raise WorkerError(f"cannot reach the lobby at {self.lobby}: {why}{hint}")
            wait = backoff * random.uniform(1 - JITTER, 1 + JITTER)  # workers of a restarted arena spread out
            # a TLS mismatch is the worker's setting, not a lobby restarting: said at once
            log.log(logging.WARNING if hint else logging.INFO, "lobby connection lost (%s%s); dialling again "
                    "in %.1f s", why, hint, wait)
            self.stop.wait(wait)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
        return self.played

    def _done(self) -> bool:
        return self.stop.is_set() or self._orphaned() or (self.games is not None and self.played >= self.games)

    def _requests(self, out: queue.Queue[lpb.ConnectRequest | None]) -> Iterator[lpb.ConnectRequest]:
        yield lpb.ConnectRequest(register=lpb.Register(token=self.token, bot_name=self.name,
                                                       bot_version=self.version,
                                                       protocol_version=wire.PROTOCOL_VERSION))
        while True:
            msg = out.get()
            if msg is None:
                return
            yield msg

    def _session(self, stub: lpb_grpc.LobbyServiceStub) -> bool:
        """One lobby stream; returns True if it got as far as Registered."""
        out: queue.Queue[lpb.ConnectRequest | None] = queue.Queue()
        call = stub.Connect(self._requests(out), wait_for_ready=False)
        registered = False
        try:
            for resp in call:
                which = resp.WhichOneof("msg")
                if which == "registered":
                    registered = self._registered = True
                    self.worker_id = resp.registered.worker_id
                    log.info("registered at %s as worker %s of %s", self.lobby, self.worker_id, self.name)
                elif which == "assignment":
                    a = resp.assignment
                    log.debug("match %s, seat %d: referee %s%s", a.match_id, a.seat, a.referee,
                              " (TLS)" if a.referee_tls else "")
                    try:
                        self.play(a)
                    except Exception as e:
                        log.warning("match %s, seat %d: %s: %s", a.match_id, a.seat, type(e).__name__, e)
                    self.played += 1
                    if self._done():
                        return registered
                    out.put(lpb.ConnectRequest(ready=lpb.Ready(match_id=a.match_id)))
            return registered
        finally:
            out.put(None)
            call.cancel()


def sdk_player(make_bot: Callable[[], BotLike], name: str, version: str | None = None,
               tls_ca: bytes | None = None) -> PlaySeat:
    """A :data:`PlaySeat` that plays each assignment with a fresh bot from ``make_bot`` through
    :class:`sdk.client.BotClient` (TLS to the referee when the assignment says so, with ``tls_ca``)."""
    from sdk.client import BotClient

    def play(a: lpb.Assignment) -> None:
        BotClient(make_bot(), a.referee, a.ticket, name=name, version=version,
                  tls_ca=tls_ca if a.referee_tls else None).run()

    return play


def run_workers(make_worker: Callable[[threading.Event], LobbyWorker], n: int) -> tuple[int, list[str]]:
    """Run ``n`` workers on threads until all end; returns (matches played, one-line errors).

    ``make_worker(stop)`` builds one worker sharing ``stop``; a worker that fails sets it, so the
    others leave after their current match.
    """
    stop = threading.Event()
    played = [0] * n
    errors: list[str] = []

    def one(k: int) -> None:
        worker = make_worker(stop)
        try:
            worker.run()
        except WorkerError as e:
            errors.append(str(e))
            stop.set()
        finally:
            played[k] = worker.played  # also what a worker refused later (a revoked token) had played

    threads = [threading.Thread(target=one, args=(k,), name=f"worker{k}", daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.5)
    except KeyboardInterrupt:
        stop.set()
        raise
    return sum(played), errors
