"""A bot that exits right after its MatchEnd left after the match, not before it: a raw bot that returns when its
stream ends is no crash and no "exited … before the match ended" (a review saw that in 4 of 16 league games).
The arena looks at the bots' processes once the referee's result has come; the result now says which seats the
referee sent MatchEnd on an open stream (``SeatResult.connected_at_end``), and an exit of such a seat is one
after the end. Real games: the arena's runner as ``arena run`` makes it (:func:`arena.cli.commands.make_runner`:
the embedded referee, one bot process or container per seat on real sockets). The arena's look surely comes
after the bot's exit: :func:`exit_seen_after_result` has the runner wait for that exit once the result has come,
then go on as the arena does (the order a busy machine gives at times, here every time)."""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from allfours.v1 import referee_pb2 as pb
from arena.cli.commands import make_runner, parser, run_command
from arena.config import parse_config
from arena.lobby.service import WorkerRef
from arena.play.game import GrpcGameRunner, Seat
from arena.play.referees import RefereeConnection
from arena.tournament.result import GameResult
from arena.tournament.schedule import ScheduledGame, make_schedule
from tests.configs import INSTANT, bots_toml

pytestmark = [pytest.mark.slow, pytest.mark.docker]

ROOT = Path(__file__).resolve().parent.parent
#: The bot that exits after its MatchEnd, in every game of this module.
QUITS = "quits"

#: The raw bot (arena.testing.instant_bot) in mode ``argv[1]``; once it has read its MatchEnd it exits with
#: status ``argv[2]`` (any other end: the instant bot's own status).
RAW = """
import os, sys
from arena.testing.instant_bot import Behaviour, play

ended = play(os.environ["ALLFOURS_REFEREE"], os.environ["ALLFOURS_TICKET"], Behaviour(mode=sys.argv[1]))
os._exit(int(sys.argv[2]) if ended == 0 else ended)
"""

#: The same in a container: an SDK bot that plays the first legal action and exits with ``$QUIT_STATUS`` in its
#: ``on_match_end``.
SDK_BOT = """
import os
from sdk import Bot, Context


class Quits(Bot):
    name = "quits"
    version = "1"

    def act(self, ctx: Context):
        return ctx.legal[0]

    def on_match_end(self, result):
        os._exit(int(os.environ["QUIT_STATUS"]))
"""


#: The raw bot as a lobby worker (``mode = "worker"``): it exits with status 3 once it has read a MatchEnd.
RAW_WORKER = """
import os, sys
from arena.testing import instant_bot

play_on = instant_bot.play_on


async def then_exit(channel, ticket, b):
    ended = await play_on(channel, ticket, b)
    if ended == 0:
        os._exit(3)
    return ended

instant_bot.play_on = then_exit
sys.exit(instant_bot.main())
"""


@pytest.fixture
def exit_seen_after_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The arena's runner, but once the referee's result has come it waits for the :data:`QUITS` seat's bot to
    exit (its process or container; a lobby worker: until the lobby has seen it leave) before the arena looks at
    it (``_await_result`` reads each seat's exit right after ``_watch``, the lobby's after the record)."""
    seated: dict[tuple[int, str], tuple[list[Seat], Sequence[WorkerRef | None]]] = {}
    seat_bots, watch = GrpcGameRunner._seat_bots, GrpcGameRunner._watch

    def keep_seats(self: GrpcGameRunner, conn: RefereeConnection, game: ScheduledGame,
                   created: pb.CreateMatchResponse, workers: Sequence[WorkerRef | None], log_dir: Path,
                   procs: list[Seat], notes: list[str]) -> None:
        seated[id(self), game.game_id] = procs, workers
        seat_bots(self, conn, game, created, workers, log_dir, procs, notes)

    def then_its_exit(self: GrpcGameRunner, conn: RefereeConnection, game: ScheduledGame,
                      mid: str) -> pb.MatchResult | None:
        result = watch(self, conn, game, mid)
        procs, workers = seated[id(self), game.game_id]
        seat = game.seats.index(QUITS)
        worker = workers[seat] if workers else None
        if worker is None:
            quits = procs[seat]
            assert quits is not None
            quits.wait(120)
            return result
        assert self.lobby is not None
        deadline = time.monotonic() + 120
        while self.lobby.gone(worker) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return result

    monkeypatch.setattr(GrpcGameRunner, "_seat_bots", keep_seats)
    monkeypatch.setattr(GrpcGameRunner, "_watch", then_its_exit)


def play_one(tmp_path: Path, quits: dict[str, Any], decision_ms: int = 5000) -> tuple[GameResult, int]:
    """One 2-player game of the bot ``quits`` (its ``[[bots]]`` table, named :data:`QUITS`) against the instant
    bot, on the runner ``arena run`` makes; returns its result and the seat of ``quits`` (its log:
    ``tmp_path/out/logs/<game>/seat<seat>.log``)."""
    data = {
        "tournament": {"name": f"after-{tmp_path.name[-8:]}", "players": 2, "games_per_pairing": 2,
                       "output": str(tmp_path / "out"), "rules": {"target": 7},
                       "time_control": {"decision_ms": decision_ms, "join_ms": 20000, "grace_ms": 500}},
        "bots": [
            {"name": QUITS, **quits},
            {"name": "first", "command": ["{python}", "-m", "arena.testing.instant_bot"], "cwd": str(ROOT),
             "sandbox": "none"},
        ],
    }
    config = parse_config(data, str(tmp_path / "after.toml"), tmp_path)
    args = argparse.Namespace(simulate=None, referee=[], admin_token=None, verbose=True, live=False)
    runner, close = make_runner(config, args, tmp_path / "out", Console(file=io.StringIO()))
    try:
        assert isinstance(runner, GrpcGameRunner)
        game = make_schedule(config.name, [QUITS, "first"], 2, 2, bytes(32))[0]
        return runner.play(game), game.seats.index(QUITS)
    finally:
        close()


def raw(tmp_path: Path, mode: str, status: int) -> dict[str, Any]:
    """The ``[[bots]]`` table of the raw bot :data:`RAW` in ``mode``, exiting ``status`` after its MatchEnd."""
    (tmp_path / "raw.py").write_text(RAW)
    return {"command": ["{python}", str(tmp_path / "raw.py"), mode, str(status)], "cwd": str(ROOT),
            "sandbox": "none"}


def after_the_end(seat: int, status: int, kind: str = "process") -> list[str]:
    """The note on the bot of ``seat`` exiting with ``status`` after the match ended (none for status 0)."""
    return [f"seat {seat} ({QUITS}) {kind} exited with status {status} after the match ended"] if status else []


@pytest.mark.usefixtures("exit_seen_after_result")
@pytest.mark.parametrize("status", [0, 3])
def test_an_exit_after_a_normal_end_is_no_crash(tmp_path: Path, status: int) -> None:
    """The match ends normally; the bot exits 0 or 3 right after its MatchEnd: no crash counted (the old code
    counted one for status 3, and noted ``exited with status 3`` as for a failure), a note for status 3 only."""
    res, seat = play_one(tmp_path, raw(tmp_path, "first", status))
    assert res.terminations == ("normal", "normal")
    assert res.failures is not None and res.failures[seat].crashes == 0, res.reasons
    assert [r for r in res.reasons if "exited" in r] == after_the_end(seat, status)


@pytest.mark.usefixtures("exit_seen_after_result")
@pytest.mark.parametrize("status", [0, 3])
def test_a_forfeited_seat_that_exits_after_its_match_end_left_after_it(tmp_path: Path, status: int) -> None:
    """The seat forfeits (malformed actions only) and is sent MatchEnd; its bot then exits 0 or 3. The old code said
    ``exited with status 0 before the match ended`` and, for 3, a crash; now: the referee's ``protocol_error``, no
    crash, and for status 3 a note that it exited after the match ended."""
    res, seat = play_one(tmp_path, raw(tmp_path, "garbage", status))
    assert res.terminations[seat] == "protocol_error", res.reasons
    assert res.failures is not None and res.failures[seat].crashes == 0, res.reasons
    assert not [r for r in res.reasons if "before the match ended" in r or " crash" in r], res.reasons
    assert [r for r in res.reasons if "exited" in r] == after_the_end(seat, status)


@pytest.mark.usefixtures("exit_seen_after_result")
def test_a_bot_that_dies_before_the_end_is_still_a_crash(tmp_path: Path) -> None:
    """A bot that dies mid-game (status 1, its stream closed: not connected at the end) keeps its label: the seat
    forfeits on ``crash`` with ``before the match ended`` and a crash counted."""
    res, seat = play_one(tmp_path, raw(tmp_path, "crash", 0))
    assert res.terminations[seat] == "crash", res.reasons
    assert res.failures is not None and res.failures[seat].crashes == 1
    assert any(r.startswith(f"seat {seat} ({QUITS}) crash: process exited with status 1 before the match ended")
               for r in res.reasons), res.reasons


@pytest.fixture(scope="module")
def quits_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The container bot :data:`SDK_BOT` built as a user builds one (``arena bots build``); removed after."""
    from tests.docker_helpers import base_image, build_bot, docker_client, remove_images

    client = docker_client()
    folder = tmp_path_factory.mktemp("quits")
    (folder / "quits.py").write_text(SDK_BOT)
    tag = build_bot(folder, "exit-after-match-end", "1", base_image("python"), entry="quits:Quits")
    image_id = client.images.get(tag).id
    try:
        yield tag
    finally:
        remove_images(client, [image_id])


@pytest.mark.usefixtures("exit_seen_after_result")
@pytest.mark.parametrize("status", [0, 3])
def test_a_container_that_exits_after_its_match_end_is_no_crash(tmp_path: Path, quits_image: str,
                                                               status: int) -> None:
    """The same for a container bot (:class:`arena.hosting.sandbox.BotContainer`, its exit read from docker): the
    old code counted a crash for status 3; nothing of the run is left behind."""
    from arena.hosting.sandbox import run_key
    from tests.docker_helpers import docker_client, leftovers

    res, seat = play_one(tmp_path, {"image": quits_image, "env": {"QUIT_STATUS": str(status)}})
    assert res.terminations == ("normal", "normal"), res.reasons
    assert res.failures is not None and res.failures[seat].crashes == 0, res.reasons
    assert [r for r in res.reasons if "exited" in r] == after_the_end(seat, status, "container")
    assert leftovers(docker_client(), run_key(tmp_path / "out")) == []


@pytest.mark.usefixtures("exit_seen_after_result")
def test_a_lobby_worker_that_leaves_after_its_match_end_did_not_leave_during_the_game(tmp_path: Path) -> None:
    """A local worker (``mode = "worker"``) exits with status 3 after each MatchEnd (its pool starts another): the
    old code noted ``worker wN left during the game`` and counted a crash; its seat was connected at the end, so
    the note says it left the lobby after, and no crash is counted (an ``arena run``, in this process)."""
    (tmp_path / "worker.py").write_text(RAW_WORKER)
    cfg = tmp_path / "w.toml"
    local = {"cwd": json.dumps(str(ROOT)), "sandbox": '"none"'}
    cfg.write_text('[tournament]\nname = "after-worker"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 1\n'
                   'output = "out"\n[tournament.rules]\ntarget = 7\n[tournament.time_control]\njoin_ms = 20000\n'
                   + bots_toml(QUITS, command=json.dumps(["{python}", str(tmp_path / "worker.py")]), mode='"worker"',
                               workers="1", **local)
                   + bots_toml("first", command=INSTANT, **local))
    said = io.StringIO()
    args = parser().parse_args(["run", str(cfg), "--no-progress", "--bootstrap", "0", "--verbose"])
    assert run_command(args, Console(file=said, width=400), Console(file=said, width=400)) == 0, said.getvalue()
    games = [json.loads(line) for line in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(games) == 2
    for g in games:
        seat = [g["a"], g["b"]].index(QUITS)
        assert g["terminations"] == ["normal", "normal"], g["reasons"]
        assert g["failures"][seat]["crashes"] == 0, g["reasons"]
        left = [r for r in g["reasons"] if "worker" in r]
        assert len(left) == 1 and " left the lobby, its seat connected at the match's end: " in left[0], g["reasons"]
