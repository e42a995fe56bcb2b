"""Lobby mode of the conformance suite (``--lobby``): the bot runs as one long-lived *worker* that dials
a scripted lobby (proto/allfours/v1/lobby.proto), and plays every scenario as one Assignment after
another, each on its own scripted referee, exactly as a worker plays in an arena.

The worker is launched once with ``ALLFOURS_LOBBY`` (the lobby's ``host:port``), ``ALLFOURS_BOT_TOKEN``
(a token made for this run) and ``ALLFOURS_BOT_NAME`` set, as the arena starts its local workers.
The lobby answers its Register with Registered, sends the Assignments one at a time and waits for a
Ready naming each match before it sends the next (:class:`ScriptedLobby`). What the lobby saw goes
into :class:`LobbyLog`; the lobby checks (``lobby-register``, ``lobby-ready``) judge it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc

#: Seconds a new lobby stream has to send its Register.
REGISTER_S = 10.0


@dataclass(slots=True)
class RegisterSeen:
    """A Register the worker sent (``first_message``: it was the stream's first message)."""

    at: float
    token: str
    bot_name: str
    protocol_version: str
    first_message: bool


@dataclass(slots=True)
class LobbyLog:
    """What the scripted lobby saw (times in seconds from the launch)."""

    token: str
    bot_name: str
    registers: list[RegisterSeen] = field(default_factory=list)
    #: (match id, seconds from the launch) per Ready.
    readies: list[tuple[str, float]] = field(default_factory=list)
    #: match id -> seconds from its MatchEnd to its Ready (absent: no Ready).
    ready_after_s: dict[str, float] = field(default_factory=dict)
    assigned: list[str] = field(default_factory=list)


class ScriptedLobby(lpb_grpc.LobbyServiceServicer):
    """Serves ``LobbyService.Connect`` for one worker; :meth:`assign` hands it a seat."""

    def __init__(self, token: str, bot_name: str, clock: Any) -> None:
        self.log = LobbyLog(token=token, bot_name=bot_name)
        self.clock = clock
        self.out: asyncio.Queue[lpb.ConnectResponse | None] | None = None
        self.registered = asyncio.Event()
        self.ready: asyncio.Queue[str] = asyncio.Queue()

    async def Connect(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        """One worker stream: Register → Registered, then the queued Assignments; Readies are logged."""
        try:
            first = await asyncio.wait_for(context.read(), REGISTER_S)
        except TimeoutError:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no Register")
            return
        if first is grpc.aio.EOF:
            return
        is_register = first.WhichOneof("msg") == "register"
        reg = first.register if is_register else lpb.Register()
        self.log.registers.append(RegisterSeen(self.clock(), reg.token, reg.bot_name, reg.protocol_version,
                                               is_register))
        out: asyncio.Queue[lpb.ConnectResponse | None] = asyncio.Queue()
        self.out = out
        await context.write(lpb.ConnectResponse(registered=lpb.Registered(worker_id="w1", tournament="conformance")))
        self.registered.set()
        reader = asyncio.ensure_future(self._read(context))
        try:
            while (msg := await out.get()) is not None:
                await context.write(msg)
        finally:
            reader.cancel()

    async def _read(self, context: grpc.aio.ServicerContext) -> None:
        with contextlib.suppress(grpc.RpcError, asyncio.CancelledError):
            while (msg := await context.read()) is not grpc.aio.EOF:
                if msg.WhichOneof("msg") == "ready":
                    self.log.readies.append((msg.ready.match_id, self.clock()))
                    self.ready.put_nowait(msg.ready.match_id)

    def assign(self, assignment: lpb.Assignment) -> None:
        """Send ``assignment`` to the connected worker."""
        self.log.assigned.append(assignment.match_id)
        if self.out is not None:
            self.out.put_nowait(lpb.ConnectResponse(assignment=assignment))

    async def wait_ready(self, match_id: str, ended_at: float, timeout: float) -> None:
        """Wait up to ``timeout`` s for a Ready naming ``match_id``; log how long after MatchEnd it came."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while (left := end - loop.time()) > 0:
            try:
                got = await asyncio.wait_for(self.ready.get(), left)
            except TimeoutError:
                return
            if got == match_id:
                self.log.ready_after_s[match_id] = self.clock() - ended_at
                return

    def close(self) -> None:
        """End the worker's stream (after the last scenario)."""
        if self.out is not None:
            self.out.put_nowait(None)
