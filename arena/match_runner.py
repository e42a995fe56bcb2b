"""The real game runner: one referee match per scheduled game, one bot process per seat.

For each game :meth:`GrpcGameRunner.play`:

1. ``AdminService.CreateMatch`` with the tournament's rules and time control, the seat names from
   the schedule, one game, the scheduled seed and first dealer → match id, seed commitment, tickets;
2. starts one process per seat (``subprocess``, own process group) from the bot's ``command`` with
   ``ALLFOURS_TICKET`` (that seat's ticket) and ``ALLFOURS_REFEREE`` (``host:port``) in its
   environment; placeholders in the command are replaced: ``{python}`` (the arena's interpreter),
   ``{config_dir}``, ``{ticket}``, ``{referee}``, ``{seat}``. Each process's output goes to
   ``<output>/logs/<game id>/seat<k>.log``;
3. ``AdminService.WatchMatch`` until the result; then ``GetRecord`` → ``<output>/records/<game id>.jsonl``;
4. stops leftover bot processes (SIGTERM to the group, then SIGKILL after 2 s).

Bot failures are results: a bot that cannot start, crashes, hangs or breaks the protocol forfeits
through the referee (no-show, disconnect, timeout, protocol error) and loses the game; the reasons
(the referee's termination per seat, plus the arena's note on a process that could not start or
exited with a non-zero status) are stored with the result. Only a referee failure raises.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.config import ENV_REFEREE, ENV_TICKET, BotSpec, TournamentConfig
from arena.schedule import ScheduledGame
from arena.store import GameResult
from referee import wire

#: Seconds a bot process gets to exit after the match before SIGTERM, and after SIGTERM before SIGKILL.
EXIT_WAIT_S = 2.0


@dataclass
class RefereeConnection:
    """An admin connection to a referee: ``address`` (``host:port``), ``token``, the Admin stub, and
    the embedded :class:`referee.server.ThreadedReferee` if the arena started one."""

    address: str
    token: str
    channel: grpc.Channel
    admin: pb_grpc.AdminServiceStub
    embedded: Any = None
    _closed: bool = field(default=False, repr=False)

    @property
    def metadata(self) -> list[tuple[str, str]]:
        """Call metadata carrying the admin token."""
        return [("authorization", f"Bearer {self.token}")]

    def close(self) -> None:
        """Close the channel and stop the embedded referee, if any (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.channel.close()
        if self.embedded is not None:
            self.embedded.stop()


def connect_referee(address: str | None, token: str | None) -> RefereeConnection:
    """Connect to the referee at ``address`` with admin ``token``, or start an embedded one.

    Without ``address`` a :class:`referee.server.ThreadedReferee` is started in this process on
    ``127.0.0.1``, port 0, with a fresh random admin token.

    :raises ValueError: if ``address`` is given without ``token``.
    :raises RuntimeError: if the embedded referee cannot start or the referee is unreachable (10 s).
    """
    embedded = None
    if address is None:
        from referee.server import ThreadedReferee

        token = secrets.token_urlsafe(24)
        embedded = ThreadedReferee(grace_s=1.0, host="127.0.0.1", port=0, admin_token=token)
        embedded.start()
        address = embedded.address
    elif not token:
        raise ValueError("an external referee needs its admin token")
    assert token is not None
    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=10)
    except grpc.FutureTimeoutError:
        channel.close()
        if embedded is not None:
            embedded.stop()
        raise RuntimeError(f"the referee at {address} is not reachable") from None
    return RefereeConnection(address, token, channel, pb_grpc.AdminServiceStub(channel), embedded)


def expand_command(bot: BotSpec, values: Mapping[str, str]) -> list[str]:
    """The bot's argv with ``{python}``, ``{config_dir}``, ``{ticket}``, ``{referee}``, ``{seat}`` replaced.

    Other braces are left as they are.
    """
    out = []
    for arg in bot.command:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


_TERMINATION = {v: k.removeprefix("TERMINATION_").lower() for k, v in pb.Termination.items()}


class GrpcGameRunner:
    """Plays scheduled games on a referee (see the module docstring). Thread-safe.

    :param config: the tournament (rules, time control, bots).
    :param conn: the referee connection (:func:`connect_referee`).
    :param output: the output folder (records/ and logs/ are written below it).
    """

    def __init__(self, config: TournamentConfig, conn: RefereeConnection, output: Path):
        self.config = config
        self.conn = conn
        self.output = Path(output)
        self.bots = {b.name: b for b in config.bots}
        self.rules_pb = wire.rules_to_pb(config.rules)
        self.tc = config.full_time_control
        self.tc_pb = wire.time_control_to_pb(self.tc)
        self.config_dir = str(Path(config.source).resolve().parent)
        self._lock = threading.Lock()

    def play(self, game: ScheduledGame) -> GameResult:
        """Play ``game`` to its end and return its result.

        :raises grpc.RpcError: if the referee refuses the match or the watch fails.
        """
        start = time.perf_counter()
        created = self.conn.admin.CreateMatch(
            pb.CreateMatchRequest(
                rules=self.rules_pb,
                seat_names=list(game.seats),
                games=1,
                seed=game.seed,
                first_dealer=game.first_dealer,
                time_control=self.tc_pb,
            ),
            metadata=self.conn.metadata,
            timeout=30,
        )
        log_dir = self.output / "logs" / game.game_id
        log_dir.mkdir(parents=True, exist_ok=True)
        procs: list[subprocess.Popen[bytes] | None] = []
        notes: list[str] = []
        try:
            for seat, (name, ticket) in enumerate(zip(game.seats, created.tickets, strict=True)):
                procs.append(self._launch(self.bots[name], seat, ticket, log_dir, notes))
            result: pb.MatchResult | None = None
            for msg in self.conn.admin.WatchMatch(
                pb.WatchMatchRequest(match_id=created.match_id), metadata=self.conn.metadata
            ):
                if msg.WhichOneof("msg") == "result":
                    result = msg.result
                    break
            if result is None:
                raise RuntimeError(f"match {created.match_id}: the watch stream ended without a result")
            record = self._save_record(game, created.match_id)
        finally:
            codes = _stop(procs)
        for seat, code in enumerate(codes):
            if code not in (None, 0, -signal.SIGTERM, -signal.SIGKILL):
                notes.append(f"seat {seat} ({game.seats[seat]}) process exited with status {code}")
        return self._result(game, created.match_id, result, record, notes, time.perf_counter() - start)

    def _launch(
        self, bot: BotSpec, seat: int, ticket: str, log_dir: Path, notes: list[str]
    ) -> subprocess.Popen[bytes] | None:
        argv = expand_command(
            bot,
            {
                "python": sys.executable,
                "config_dir": self.config_dir,
                "ticket": ticket,
                "referee": self.conn.address,
                "seat": str(seat),
            },
        )
        env = {**os.environ, **bot.env, ENV_TICKET: ticket, ENV_REFEREE: self.conn.address}
        log = open(log_dir / f"seat{seat}.log", "wb")  # noqa: SIM115 - handed to the child
        try:
            return subprocess.Popen(
                argv,
                cwd=bot.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:
            notes.append(f"seat {seat} ({bot.name}) could not start {argv[0]!r}: {e.strerror or e}")
            return None
        finally:
            log.close()

    def _save_record(self, game: ScheduledGame, match_id: str) -> str | None:
        try:
            rec = self.conn.admin.GetRecord(
                pb.GetRecordRequest(match_id=match_id), metadata=self.conn.metadata, timeout=30
            )
        except grpc.RpcError:
            return None
        rel = Path("records") / f"{game.game_id}.jsonl"
        path = self.output / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in rec.lines), encoding="utf-8")
        return rel.as_posix()

    def _result(
        self,
        game: ScheduledGame,
        match_id: str,
        result: pb.MatchResult,
        record: str | None,
        notes: list[str],
        duration: float,
    ) -> GameResult:
        scores = (0, 0)
        reasons: list[str] = []
        if result.games:
            g = result.games[-1]
            scores = (int(g.scores[0]), int(g.scores[1])) if len(g.scores) == 2 else scores
            if g.winner >= 0 and not g.forfeited:
                reasons.append(f"side {g.winner} ({game.sides[g.winner]}) reached {scores[g.winner]}")
        for s in result.seats:
            if s.termination not in (pb.TERMINATION_NORMAL, pb.TERMINATION_OTHER_SEAT_FORFEITED):
                what = _TERMINATION.get(s.termination, str(s.termination))
                reasons.append(f"seat {s.seat} ({s.name}) {what}" + (f": {s.detail}" if s.detail else ""))
        if result.forfeited_side >= 0:
            reasons.append(f"side {result.forfeited_side} ({game.sides[result.forfeited_side]}) forfeited")
        if result.status == pb.MATCH_STATUS_ABORTED:
            reasons.append("match aborted by the referee")
        reasons.extend(notes)
        bank = self.tc.bank_ms
        think_ms = sum(max(0, bank - int(s.bank_left_ms)) for s in result.seats)
        winner = int(result.winner) if result.winner in (0, 1) else None
        return GameResult(
            game_id=game.game_id,
            match_id=match_id,
            pair_id=game.pair_id,
            sides=game.sides,
            scores=scores,
            winner=winner,
            reasons=tuple(reasons),
            record_path=record,
            seed_hex=game.seed.hex(),
            first_dealer=game.first_dealer,
            duration_s=duration,
            extra={
                "think_ms": think_ms,
                "status": pb.MatchStatus.Name(result.status),
                "terminations": [_TERMINATION.get(s.termination, "") for s in result.seats],
            },
        )


def _stop(procs: list[subprocess.Popen[bytes] | None]) -> list[int | None]:
    """Wait briefly for bot processes to exit, then SIGTERM, then SIGKILL their process groups."""
    deadline = time.monotonic() + EXIT_WAIT_S
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        live = [p for p in procs if p is not None and p.poll() is None]
        if not live:
            break
        if sig is not None:
            for p in live:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, sig)
            deadline = time.monotonic() + EXIT_WAIT_S
        for p in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
    return [None if p is None else p.poll() for p in procs]
