"""The lobby's cap on a bot's connected workers (``MAX_WORKERS_PER_BOT``) is a count every worker of the bot
shares: the arena's pool of a container bot's workers is bigger than it (``workers = 0``: two a game at a
4-player table, 128 at concurrency 64, over the 64), so the containers past it dialled again and again, and
whether one of them registered told it whether a partner container had left: a bit between two containers
of one entrant. On the container sandbox's gateway a container's worker is not counted by it (the arena's
pool, one worker a token it issued, bounds them). The "containers" are 127.0.0.1 on the network 127.0.0.0/8
(its gateway 127.0.0.254), the lobby's gateway server on 127.0.0.1 as ``arena run`` wires it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
import pytest

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from arena.lobby import service as lobby_module
from arena.lobby.service import Lobby
from arena.lobby.tokens import TokenBook
from referee import wire
from referee.peers import BotNetwork


def test_a_bots_containers_share_no_count_of_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lobby_module, "MAX_WORKERS_PER_BOT", 1)  # stands for 64: the pool is twice it
    lobby = Lobby("t", TokenBook(), "127.0.0.1", 0, None, also_host="127.0.0.1",
                  bots=BotNetwork.parse("127.0.0.0/8", "127.0.0.254"))
    lobby.start()
    streams, firsts, leave = [], [], threading.Event()

    def held_open(token: str) -> Iterator[lpb.ConnectRequest]:  # the stream stays open (a half-close leaves)
        yield lpb.ConnectRequest(register=lpb.Register(token=token, bot_name="alpha",
                                                       protocol_version=wire.PROTOCOL_VERSION))
        leave.wait(60)

    try:
        with grpc.insecure_channel(lobby.address) as ch:
            for _ in range(2):  # two containers of the pool of 'alpha' (tokens the arena issued)
                token = lobby.tokens.issue("alpha")
                call = lpb_grpc.LobbyServiceStub(ch).Connect(held_open(token), timeout=60)
                streams.append(call)
                try:
                    firsts.append(next(call).WhichOneof("msg"))
                except grpc.RpcError as e:
                    firsts.append(f"{e.code()}: {e.details()}")
            for call in streams:
                call.cancel()
    finally:
        leave.set()
        lobby.stop()
    assert firsts == ["registered", "registered"], firsts
