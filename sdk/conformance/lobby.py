"""Lobby mode of the conformance suite (``--lobby``): the bot runs as one long-lived *worker* that dials
a scripted lobby (proto/allfours/v1/lobby.proto), and plays every scenario as one Assignment after
another, each on its own scripted referee, exactly as a worker plays in an arena.

The worker is launched once (:func:`run_lobby`) with ``ALLFOURS_LOBBY`` (the lobby's ``host:port``),
``ALLFOURS_BOT_TOKEN`` (a token made for this run), ``ALLFOURS_BOT_NAME`` and
``ALLFOURS_WORKER_PARENT`` set and no ticket, as the arena starts its local workers
(``arena.play.environment.worker_environment``). The lobby answers its Register with Registered, sends the
Assignments one at a time and waits up to ``Limits.exit_s`` for a Ready naming each match before it
sends the next (:class:`ScriptedLobby`). What the lobby saw goes into :class:`LobbyLog`; the lobby
checks (``lobby-register``, ``lobby-ready``, ``lobby-redial``) judge it, the other checks judge each
match as in per-game mode.

``lobby-redial`` (:func:`_redial`, after the scenarios, so that a worker that never comes back fails
that check only): the lobby closes the worker's stream with UNAVAILABLE and stops serving, as an arena
that shuts down to restart does, listens again on the same address :data:`DOWN_S` later, and waits up
to :data:`REDIAL_S` for a new Register; the worker then gets one more Assignment and must play it and
send its Ready. The first stream after the lobby is back is refused (UNAVAILABLE, as by a lobby still
shutting down), and the next must come at least :data:`MIN_REDIAL_GAP_S` later: a worker that dials
again at once, without back-off, floods a lobby that refuses it.

Bounded waits: the Register within ``Limits.startup_s + 5`` s of the launch (or the worker's exit,
whichever comes first), a Hello on each Assignment's referee within :data:`JOIN_S`, a new Register
within :data:`REDIAL_S` of the lobby coming back (``lobby-redial``). A worker that
never registers, exits, or does not join an Assignment ends the run at once: the scenarios left get
``"not played: …"`` and :attr:`LobbyLog.fatal` says why in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from arena.config import ENV_REFEREE, ENV_TICKET
from referee import wire
from referee.streams import Undecodable, add_stream_method
from sdk.conformance.launch import (
    Limits,
    OutputTail,
    bot_argv,
    kill_group,
    play_beside,
    sample_memory,
    start_referee,
    watch_memory,
)
from sdk.conformance.logs import LobbyLog, RedialSeen, RegisterSeen, RunLog
from sdk.conformance.scenarios import Scenario
from sdk.worker import LOBBY_ENV, NAME_ENV, PARENT_ENV, TOKEN_ENV

#: Seconds a new lobby stream has to send its first message.
REGISTER_S = 10.0
#: Seconds from an Assignment to the worker's Hello at that referee.
JOIN_S = 10.0
#: The bot name the worker is given (``ALLFOURS_BOT_NAME``) and must register with.
BOT_NAME = "conformance-bot"
#: Readies kept (a worker flooding the lobby is not remembered beyond this).
MAX_READIES = 256
#: The lobby service's full name (``allfours.v1.LobbyService``).
LOBBY_SERVICE = lpb.DESCRIPTOR.services_by_name["LobbyService"].full_name
#: Characters of the worker's last output line quoted in a fatal failure.
LAST_WORDS_CHARS = 160
#: ``lobby-redial``: seconds the scripted lobby stays down between closing the worker's stream and
#: listening again on the same address (an arena restarting), so that the worker's first dials fail.
DOWN_S = 1.0
#: ``lobby-redial``: seconds from the lobby listening again to the worker's new Register. A worker dialling
#: with back-off capped at 5 s (plus jitter, plus its gRPC channel's own reconnect back-off) is well
#: within it.
REDIAL_S = 12.0
#: ``lobby-redial``: least seconds from the lobby's refusal of the worker's first new stream to its next
#: Register. A worker backing off from 0.5 s (less 20% jitter) is well above it; one that dials again at
#: once floods a lobby that refuses it (every stream a handler at the lobby).
MIN_REDIAL_GAP_S = 0.25
#: What the arena's lobby says closing each worker's stream when it shuts down (arena/lobby/service.py).
SHUTTING_DOWN = "the arena is shutting down; connect again later"
#: The name of the scenario played after the worker came back (``lobby-redial``: a copy of its scenario).
REDIAL_SCENARIO = "redial"

#: Put in a worker's stream queue: end the stream with UNAVAILABLE, as the arena's lobby does at shutdown.
_DROP = "drop"


class ScriptedLobby(lpb_grpc.LobbyServiceServicer):
    """Serves ``LobbyService.Connect`` for one worker; :meth:`assign` hands it a seat.

    Unlike the arena's lobby it refuses nothing (a wrong token or version is written down for the
    ``lobby-register`` check and the run goes on), so one fault fails one check.
    """

    def __init__(self, token: str, bot_name: str, clock: Callable[[], float]) -> None:
        self.log = LobbyLog(token=token, bot_name=bot_name)
        self.clock = clock
        self.out: asyncio.Queue[lpb.ConnectResponse | str | None] | None = None
        self.registered = asyncio.Event()
        #: Set with ``log.fatal`` when the worker's stream was refused as the arena's lobby refuses it.
        self.refused = asyncio.Event()
        #: Each Ready's match id and when it came (from the launch).
        self.ready: asyncio.Queue[tuple[str, float]] = asyncio.Queue(maxsize=MAX_READIES)
        #: ``lobby-redial``: refuse the next Register (UNAVAILABLE) and note when in ``log.redial``.
        self.refuse_next = False

    async def Connect(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        """One worker stream: Register → Registered, then the queued Assignments; Readies are logged."""
        try:
            first = await asyncio.wait_for(context.read(), REGISTER_S)
        except TimeoutError:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"no Register within {REGISTER_S:g} s")
            return
        if first is grpc.aio.EOF:
            return
        if isinstance(first, Undecodable):  # as the arena's lobby: INVALID_ARGUMENT, one line
            self._refuse(first.detail("the first message on the lobby stream"))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, first.detail())
            return
        is_register = first.WhichOneof("msg") == "register"
        if is_register and self.refuse_next and self.log.redial is not None:  # lobby-redial: a lobby that refuses
            self.refuse_next = False
            self.log.redial.refused_at = self.clock()
            await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
            return
        reg = first.register if is_register else lpb.Register()
        self.log.registers.append(RegisterSeen(self.clock(), reg.token, reg.bot_name, reg.protocol_version,
                                               is_register))
        out: asyncio.Queue[lpb.ConnectResponse | str | None] = asyncio.Queue()
        self.out = out
        await context.write(lpb.ConnectResponse(registered=lpb.Registered(worker_id="w1", tournament="conformance")))
        self.registered.set()
        reader = asyncio.ensure_future(self._read(context))
        try:
            while (msg := await out.get()) is not None:
                if isinstance(msg, str):  # _DROP
                    await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
                    return
                await context.write(msg)
        finally:
            reader.cancel()

    async def _read(self, context: grpc.aio.ServicerContext) -> None:
        with contextlib.suppress(grpc.RpcError, asyncio.CancelledError):
            while (msg := await context.read()) is not grpc.aio.EOF:
                if isinstance(msg, Undecodable):  # the arena's lobby ends the stream (INVALID_ARGUMENT)
                    self._refuse(msg.detail("a message after Register"))
                    self.close()
                    return
                if msg.WhichOneof("msg") == "ready" and len(self.log.readies) < MAX_READIES:
                    seen = (msg.ready.match_id[:80], self.clock())
                    self.log.readies.append(seen)
                    with contextlib.suppress(asyncio.QueueFull):
                        self.ready.put_nowait(seen)

    def _refuse(self, why: str) -> None:
        """The worker sent what the arena's lobby refuses, ending its stream: the run stops (``fatal``)."""
        if not self.log.fatal:
            self.log.fatal = f"{why}: the arena's lobby refuses it (INVALID_ARGUMENT) and ends the stream"
        self.refused.set()

    def assign(self, assignment: lpb.Assignment) -> None:
        """Send ``assignment`` to the connected worker."""
        self.log.assigned.append(assignment.match_id)
        if self.out is not None:
            self.out.put_nowait(lpb.ConnectResponse(assignment=assignment))

    async def wait_ready(self, match_id: str, ended_at: float, timeout: float) -> None:
        """Wait up to ``timeout`` s for a Ready naming ``match_id``; log how long after MatchEnd it came, or,
        for one that came before it (queued meanwhile), how long before (``ready_early_s``)."""
        self.log.ended.append(match_id)
        at = await self.next_ready(match_id, timeout)
        if at is not None and at < ended_at:
            self.log.ready_early_s[match_id] = ended_at - at
        elif at is not None:
            self.log.ready_after_s[match_id] = at - ended_at

    async def next_ready(self, match_id: str, timeout: float) -> float | None:
        """When the next Ready naming ``match_id`` came (s from the launch; one queued already counts),
        waiting up to ``timeout`` s; ``None`` if none came."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while (left := end - loop.time()) > 0:
            try:
                got, at = await asyncio.wait_for(self.ready.get(), left)
            except TimeoutError:
                return None
            if got == match_id:
                return at
        return None

    def close(self) -> None:
        """End the worker's stream (after the last scenario)."""
        if self.out is not None:
            self.out.put_nowait(None)

    def drop(self) -> None:
        """End the worker's stream with UNAVAILABLE, as the arena's lobby does when it shuts down."""
        if self.out is not None:
            self.out.put_nowait(_DROP)


def worker_env(lobby_address: str, token: str) -> dict[str, str]:
    """The worker's environment: ours without a ticket or referee, plus the lobby, token, name and our pid."""
    env = {k: v for k, v in os.environ.items() if k not in (ENV_TICKET, ENV_REFEREE)}
    env.update({LOBBY_ENV: lobby_address, TOKEN_ENV: token, NAME_ENV: BOT_NAME, PARENT_ENV: str(os.getpid())})
    return env


def _lobby_server(lobby: ScriptedLobby) -> grpc.aio.Server:
    """A server for ``lobby`` (no port yet)."""
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024)])
    # Bytes that are not a ConnectRequest reach the scripted lobby as Undecodable (as they reach the
    # arena's), so it refuses them as the arena does instead of losing the stream to gRPC's decoder.
    add_stream_method(server, LOBBY_SERVICE, "Connect", lobby.Connect, lpb.ConnectRequest, lpb.ConnectResponse)
    return server


async def run_lobby(scenarios: Sequence[Scenario], command: Sequence[str], limits: Limits,
                    redial: Scenario | None = None) -> dict[str, RunLog]:
    """Launch the bot once as a worker of a scripted lobby and play every scenario as one Assignment
    after another; with ``redial``, then the ``lobby-redial`` step (:func:`_redial`), whose Assignment
    after the worker came back is a copy of that scenario. Every returned log
    (one per scenario, by name) carries the same :class:`LobbyLog` in ``lobby``; its start-up time is the
    Register's, its peak memory the worker's over the whole run.

    :raises ValueError: for a command with an unknown placeholder.
    :raises OSError: if the command cannot be started.
    """
    t0 = time.monotonic()
    clock = lambda: time.monotonic() - t0  # noqa: E731
    lobby = ScriptedLobby(secrets.token_urlsafe(18), BOT_NAME, clock)
    server = _lobby_server(lobby)
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    servers = [server]  # the one serving is the last (lobby-redial starts another on the same address)
    logs: dict[str, RunLog] = {}
    peak = RunLog(scenario="lobby", ticket="")
    with OutputTail() as out:
        try:
            proc = await asyncio.create_subprocess_exec(*bot_argv(command, "", "", 0), env=worker_env(address,
                                                        lobby.log.token), stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=out.fd, stderr=out.fd, start_new_session=True)
        except OSError:
            await server.stop(None)
            raise
        out.started()
        memory = asyncio.ensure_future(watch_memory(proc.pid, peak))
        try:
            await _await_register(lobby, proc, limits.startup_s + 5)
            for sc in scenarios:
                if lobby.log.fatal:
                    break
                logs[sc.name] = await _assignment(lobby, sc, proc, limits, clock)
            if redial is not None and not lobby.log.fatal:
                await _redial(lobby, servers, address, proc, redial, limits, clock)
        finally:
            memory.cancel()
            if proc.returncode is None:
                sample_memory(proc.pid, peak)  # the worker's peak, before the kill takes it away
            lobby.close()
            kill_group(proc)
            await proc.wait()
            await servers[-1].stop(0.2)
        tail = out.text()
    if lobby.log.fatal and (words := _last_line(tail)):
        lobby.log.fatal += f" (its last output: {words})"
    if (redialled := lobby.log.redial) is not None and redialled.exit_code is not None:
        redialled.last_words = _last_line(tail)
    for sc in scenarios:
        logs.setdefault(sc.name, RunLog(sc.name, "", failure=f"not played: {lobby.log.fatal}"))
    startup = lobby.log.registers[0].at if lobby.log.registers else None
    for log in logs.values():
        log.lobby, log.startup_s, log.peak_rss_mib, log.stderr_tail = lobby.log, startup, peak.peak_rss_mib, tail
    return logs


def _last_line(text: str) -> str:
    """The last non-empty line of the worker's output, whitespace folded, cut to LAST_WORDS_CHARS."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return repr(lines[-1][:LAST_WORDS_CHARS]) if lines else ""


async def _await_register(lobby: ScriptedLobby, proc: asyncio.subprocess.Process, timeout: float) -> None:
    """Wait up to ``timeout`` s for the worker's Register, or its exit; set ``fatal`` if none came."""
    registered = asyncio.ensure_future(lobby.registered.wait())
    refused = asyncio.ensure_future(lobby.refused.wait())
    exited = asyncio.ensure_future(proc.wait())
    try:
        await asyncio.wait({registered, refused, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (registered, refused, exited):
            waiting.cancel()
    if lobby.registered.is_set() or lobby.log.fatal:
        return
    if proc.returncode is not None:
        lobby.log.fatal = f"the worker's process ended with status {proc.returncode} before it registered at the lobby"
    else:
        lobby.log.fatal = (f"the worker sent no Register to the lobby within {timeout:g} s of the launch "
                           f"(is its worker mode started by {LOBBY_ENV}?)")


async def _redial(lobby: ScriptedLobby, servers: list[grpc.aio.Server], address: str,
                  proc: asyncio.subprocess.Process, scenario: Scenario, limits: Limits,
                  clock: Callable[[], float]) -> None:
    """The ``lobby-redial`` step, written down in ``lobby.log.redial``: close the worker's stream with
    UNAVAILABLE and stop serving (as an arena shutting down to restart), listen again on ``address``
    :data:`DOWN_S` later (the new server is appended to ``servers``), refuse the first Register there
    (UNAVAILABLE), wait up to :data:`REDIAL_S` for a new Register, then give the worker one more
    Assignment (a copy of ``scenario``) and wait for its Ready. Never sets ``fatal``: a worker that does
    not come back fails ``lobby-redial`` only."""
    seen = RedialSeen(dropped_at=clock())
    lobby.log.redial = seen
    before = len(lobby.log.registers)
    lobby.registered.clear()
    lobby.drop()
    await servers[-1].stop(0.5)  # the worker's stream has its UNAVAILABLE, then the port closes
    await asyncio.sleep(DOWN_S)
    server = _lobby_server(lobby)
    port = 0
    for _ in range(20):  # the port was ours a moment ago; something else may hold it for a while
        with contextlib.suppress(RuntimeError):  # grpc raises RuntimeError when it cannot bind
            port = server.add_insecure_port(address)
        if port:
            break
        await asyncio.sleep(0.1)
    if not port:
        seen.failure = f"internal: the scripted lobby could not listen on {address} again"
        return
    lobby.refuse_next = True
    await server.start()
    servers.append(server)
    seen.back_at = clock()
    if proc.returncode is None:
        registered = asyncio.ensure_future(lobby.registered.wait())
        exited = asyncio.ensure_future(proc.wait())
        try:
            await asyncio.wait({registered, exited}, timeout=REDIAL_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            registered.cancel()
            exited.cancel()
    if len(lobby.log.registers) > before:
        seen.register = lobby.log.registers[before]
    if seen.register is None or not lobby.registered.is_set():
        seen.exit_code = proc.returncode
        return
    again = dataclasses.replace(scenario, name=REDIAL_SCENARIO)
    ref, ref_server, ref_address = await start_referee(again, clock)
    try:
        seen.match_id = ref.match_id
        lobby.assign(lpb.Assignment(match_id=ref.match_id, seat=again.bot_seat, ticket=ref.ticket,
                                    referee=ref_address, rules=wire.rules_to_pb(again.rules),
                                    time_control=ref.time_control()))
        log = await play_beside(ref, proc, limits, JOIN_S, since="its Assignment")
        if not log.match_end_sent:
            seen.failure = (f"did not play its next Assignment {ref.match_id} to MatchEnd: "
                            f"{log.failure or 'the match did not end'}")
        elif await lobby.next_ready(ref.match_id, limits.exit_s) is None:
            seen.failure = f"sent no Ready naming {ref.match_id} within {limits.exit_s:g} s of its MatchEnd"
        ref.drain()
    finally:
        await ref_server.stop(0.2)


async def _assignment(lobby: ScriptedLobby, sc: Scenario, proc: asyncio.subprocess.Process, limits: Limits,
                      clock: Callable[[], float]) -> RunLog:
    """One scenario in lobby mode: its referee, the Assignment, the match, then the worker's Ready.
    Sets ``lobby.log.fatal`` when the worker has exited or did not join (the run cannot go on), unless
    the lobby refused its stream first (that is the cause)."""
    ref, server, address = await start_referee(sc, clock)
    try:
        if proc.returncode is not None:
            lobby.log.fatal = lobby.log.fatal or (f"the worker's process ended with status {proc.returncode} after "
                                                  f"{len(lobby.log.assigned)} Assignment(s)")
            return ref.log
        lobby.assign(lpb.Assignment(match_id=ref.match_id, seat=sc.bot_seat, ticket=ref.ticket, referee=address,
                                    rules=wire.rules_to_pb(sc.rules), time_control=ref.time_control()))
        started = clock()
        log = await play_beside(ref, proc, limits, JOIN_S, since="its Assignment")
        if log.match_end_sent:
            await lobby.wait_ready(ref.match_id, log.match_end_at or 0.0, limits.exit_s)
        ref.drain()
        log.wall_s = clock() - started
        if lobby.log.fatal:  # the lobby refused the worker's stream meanwhile: the first cause is the one
            pass
        elif proc.returncode is not None:
            lobby.log.fatal = f"the worker's process ended with status {proc.returncode} during {ref.match_id}"
        elif not log.hellos:
            lobby.log.fatal = f"the worker did not join the referee of its Assignment {ref.match_id}: {log.failure}"
        return log
    finally:
        await server.stop(0.2)
