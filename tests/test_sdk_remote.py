"""The SDK and sample bots against a real referee: real processes over real sockets.

A ``referee serve --port 0`` subprocess; matches created through AdminService; bots launched as
``python -m sdk.run …`` and ``node sample_bots/js/bot.js`` subprocesses; the result read by
WatchMatch. Also: a bot in-process through :class:`sdk.client.BotClient` receives exactly the
events and hooks that local mode gives it for the same seed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.rules import Phase
from sample_bots.heuristic import HeuristicBot
from sdk import Bot, Context
from sdk.bot import DealEnd, Event, GameEnd, MatchEnd, MatchInfo
from sdk.client import BotClient, ClientError
from sdk.local import play_local
from tests.conftest import require

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "sdk-test-token"
MD = (("authorization", f"Bearer {TOKEN}"),)
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "ALLFOURS_ADMIN_TOKEN": TOKEN}
NODE = shutil.which("node")
JS_BOT = ROOT / "sample_bots" / "js" / "bot.js"


class Referee:
    """A referee process and an admin stub."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0",
                                      "--log-level", "warning"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), f"referee did not start: {line!r}"
        self.address = f"127.0.0.1:{int(line.split()[1])}"
        self.channel = grpc.insecure_channel(self.address)
        self.admin = pb_grpc.AdminServiceStub(self.channel)

    def create(self, players: int, games: int = 1, seed: bytes = b"") -> pb.CreateMatchResponse:
        tc = pb.TimeControl(decision_ms=3000, grace_ms=3000, join_ms=30_000, bank_ms=120_000)
        return self.admin.CreateMatch(pb.CreateMatchRequest(
            rules=pb.RuleSet(players=players), seat_names=[f"s{i}" for i in range(players)], games=games,
            seed=seed, time_control=tc), metadata=MD, timeout=10)

    def result(self, match_id: str, timeout: float = 90) -> pb.MatchResult:
        for m in self.admin.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=MD, timeout=timeout):
            if m.HasField("result"):
                return m.result
        raise AssertionError("WatchMatch ended without a result")

    def close(self) -> None:
        self.channel.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def referee() -> Iterator[Referee]:
    ref = Referee()
    try:
        yield ref
    finally:
        ref.close()


def python_bot(spec: str, referee: Referee, ticket: str, *extra: str) -> subprocess.Popen[str]:
    """``python -m sdk.run spec`` with the ticket and referee address in the environment."""
    env = {**ENV, "ALLFOURS_TICKET": ticket, "ALLFOURS_REFEREE": referee.address}
    return subprocess.Popen([sys.executable, "-m", "sdk.run", spec, "--log-level", "warning", *extra], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def node_bot(referee: Referee, ticket: str, *extra: str) -> subprocess.Popen[str]:
    """``node sample_bots/js/bot.js`` with the ticket and referee address in the environment."""
    assert NODE is not None
    env = {**ENV, "ALLFOURS_TICKET": ticket, "ALLFOURS_REFEREE": referee.address}
    return subprocess.Popen([NODE, str(JS_BOT), *extra], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def sdk_runs(folder: Path, ref: Referee, specs: list[str], tickets: Sequence[str]) -> list[subprocess.Popen[str]]:
    """``python -m sdk.run SPEC`` for each seat of a match on ``ref`` (its ticket by ``ALLFOURS_TICKET``), with
    the bots' modules importable from ``folder``; read their ends with :func:`finish`."""
    env = {**ENV, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}", "ALLFOURS_REFEREE": ref.address}
    return [subprocess.Popen([sys.executable, "-m", "sdk.run", spec, "--log-level", "warning"], cwd=ROOT,
                             env={**env, "ALLFOURS_TICKET": t}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
            for spec, t in zip(specs, tickets, strict=True)]


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    """Wait for every bot process; return (exit status, stdout, stderr) of each."""
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        out.append((p.returncode, o, e))
    return out


def assert_completed(result: pb.MatchResult, games: int) -> None:
    assert result.status == pb.MATCH_STATUS_COMPLETED, result
    assert len(result.games) == games
    for g in result.games:
        assert g.winner in (0, 1) and max(g.scores) >= 14 and not g.forfeited
    assert all(s.termination == pb.TERMINATION_NORMAL for s in result.seats), result.seats
    assert sum(result.games_won) == games


def test_python_bots_play_a_four_player_match_through_sdk_run(referee: Referee) -> None:
    m = referee.create(players=4, games=2)
    specs = ["sample_bots.heuristic:HeuristicBot", "sample_bots.random_bot:RandomBot"] * 2
    procs = [python_bot(spec, referee, t) for spec, t in zip(specs, m.tickets, strict=True)]
    result = referee.result(m.match_id)
    outs = finish(procs)
    assert_completed(result, games=2)
    for code, stdout, stderr in outs:
        assert code == 0, stderr
        assert "match completed" in stdout
    assert all(s.illegal == 0 and s.protocol_errors == 0 and s.strikes == 0 for s in result.seats)


def test_sdk_run_takes_flags_instead_of_the_environment(referee: Referee) -> None:
    m = referee.create(players=2)
    env = {**ENV}
    env.pop("ALLFOURS_TICKET", None)
    env.pop("ALLFOURS_REFEREE", None)
    procs = [subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee",
                               referee.address, f"--ticket={t}", "--name", f"flagbot{i}", "--version", "9"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, t in enumerate(m.tickets)]
    result = referee.result(m.match_id)
    assert [code for code, _, _ in finish(procs)] == [0, 0]
    assert_completed(result, games=1)
    records = referee.admin.GetRecord(pb.GetRecordRequest(match_id=m.match_id), metadata=MD, timeout=10)
    assert "flagbot0" in "\n".join(records.lines)  # the --name flag reached the referee's record


def test_sdk_run_exits_1_on_an_unknown_ticket_and_2_without_one(referee: Referee) -> None:
    bad = python_bot("sample_bots.random_bot:RandomBot", referee, "no-such-ticket")
    code, _, stderr = finish([bad])[0]
    assert code == 1 and "UNAUTHENTICATED" in stderr
    env = {k: v for k, v in ENV.items() if k not in ("ALLFOURS_TICKET", "ALLFOURS_REFEREE")}
    usage = subprocess.run([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee",
                            referee.address], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
    assert usage.returncode == 2 and "ALLFOURS_TICKET" in usage.stderr


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_node_bot_plays_complete_matches_with_python_bots(referee: Referee) -> None:
    if not (ROOT / "sample_bots" / "js" / "node_modules" / "@grpc" / "grpc-js").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to install the Node.js bot's dependencies"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=ROOT / "sample_bots" / "js", check=True,
                       capture_output=True, timeout=300)
    m = referee.create(players=4, games=1)
    procs = [node_bot(referee, m.tickets[0]), python_bot("sample_bots.random_bot:RandomBot", referee, m.tickets[1]),
             node_bot(referee, m.tickets[2]), python_bot("sample_bots.heuristic:HeuristicBot", referee, m.tickets[3])]
    result = referee.result(m.match_id)
    outs = finish(procs)
    assert_completed(result, games=1)
    assert [code for code, _, _ in outs] == [0, 0, 0, 0], [e for _, _, e in outs]
    assert result.seats[0].illegal == 0 and result.seats[2].illegal == 0
    assert result.seats[0].bot_counts == result.seats[2].bot_counts == pb.BotCounts()  # sent, and nothing failed
    # Two Node bots head to head, two games.
    m2 = referee.create(players=2, games=2)
    outs = finish([node_bot(referee, t) for t in m2.tickets])
    assert_completed(referee.result(m2.match_id), games=2)
    assert [code for code, _, _ in outs] == [0, 0], [e for _, _, e in outs]


def test_node_bot_counts_its_strategys_exceptions_in_the_result_and_the_record(referee: Referee) -> None:
    """``--raise-every 3``: the Node bot's strategy throws on every third decision; the bot sends the
    first legal action instead and reports both counts with each Decision, as the Python SDK does."""
    require(NODE is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    m = referee.create(players=2)
    procs = [node_bot(referee, m.tickets[0], "--raise-every", "3"), node_bot(referee, m.tickets[1])]
    result = referee.result(m.match_id)
    outs = finish(procs)
    assert_completed(result, games=1)
    assert [code for code, _, _ in outs] == [0, 0], [e for _, _, e in outs]
    counts = result.seats[0].bot_counts
    assert counts.exceptions == counts.fallbacks > 3, counts
    assert f"{counts.exceptions} exceptions, {counts.fallbacks} fallbacks" in outs[0][1], outs[0][1]
    assert "a planned failure (--raise-every 3)" in outs[0][2]
    assert result.seats[1].bot_counts == pb.BotCounts() and "0 exceptions, 0 fallbacks" in outs[1][1]
    lines = referee.admin.GetRecord(pb.GetRecordRequest(match_id=m.match_id), metadata=MD, timeout=10).lines
    end = next(json.loads(x) for x in lines if json.loads(x)["type"] == "result")
    assert end["seats"][0]["bot_counts"] == {"exceptions": counts.exceptions, "fallbacks": counts.fallbacks}


#: What the Node.js and C++ sample bots log, after a time stamp, at each strike of their seat: one text in
#: both languages, and sdk/client.py's but for its ``ctx.time_left_ms``.
STRIKE_LINE = ("warning: the referee timed out this seat (strike {k} of {n}): the bot answered past its deadline "
               "(time_left_ms), so the first legal action was played for it")
#: The sample bots' ``--think-ms`` for :func:`two_slow_seats`, and its time control: every answer comes
#: 800 ms past its deadline (the referee's timer has that long to fire; an answer received before it fires
#: would be played in time), so strikes no longer depend on the machine's speed.
THINK_MS = 1000
SLOW = pb.TimeControl(decision_ms=200, max_strikes=3)


def two_slow_seats(referee: Referee, bot: Callable[[str], subprocess.Popen[str]]) -> tuple[pb.MatchResult, list[str]]:
    """A 2-seat match at :data:`SLOW` of two ``bot(ticket)`` processes (a sample bot told ``--think-ms
    THINK_MS``): the result and each seat's stderr, after checking that each left with status 0."""
    m = referee.admin.CreateMatch(pb.CreateMatchRequest(rules=pb.RuleSet(players=2), seat_names=["slow0", "slow1"],
                                                        games=1, time_control=SLOW), metadata=MD, timeout=10)
    procs = [bot(t) for t in m.tickets]
    result = referee.result(m.match_id)
    ends = finish(procs)
    assert [code for code, _, _ in ends] == [0, 0], ends
    return result, [err for _, _, err in ends]


def assert_each_strike_is_a_warning_line(result: pb.MatchResult, errs: list[str]) -> None:
    """Each seat's strikes, and only its own, are its warning lines (:data:`STRIKE_LINE`), numbered as the
    referee counts them. Every answer is late, so one seat strikes out at its third decision; the other has
    struck by then (the dealer acts before the other seat's third decision), so each log is also tested for
    the other seat's TIMEOUT events, which are not its strikes."""
    n = SLOW.max_strikes
    strikes = sorted(s.strikes for s in result.seats)
    assert result.status == pb.MATCH_STATUS_FORFEITED and strikes[0] >= 1 and strikes[1] == n, result
    assert sorted(s.termination for s in result.seats) == sorted(
        [pb.TERMINATION_TIMEOUT, pb.TERMINATION_OTHER_SEAT_FORFEITED]), result
    for seat, err in zip(result.seats, errs, strict=True):
        said = [line.split(" ", 1)[1] for line in err.splitlines() if "timed out this seat" in line]
        assert said == [STRIKE_LINE.format(k=k, n=n) for k in range(1, seat.strikes + 1)], (seat, err)


def test_node_bot_says_each_strike_in_a_warning_line(referee: Referee) -> None:
    """The Node.js bot ignored the referee's TIMEOUT events: a seat that answered late lost its decisions
    (the referee played the first legal action) and, at ``max_strikes``, the seat, with nothing in its log
    until the end. Each strike of its own seat is now one warning line, numbered as the referee counts
    them (sdk/client.py says the same). ``--think-ms`` makes every answer late (it relied on
    ``decision_ms=1`` being too short for at least one answer)."""
    require(NODE is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    result, errs = two_slow_seats(referee, lambda ticket: node_bot(referee, ticket, "--think-ms", str(THINK_MS)))
    assert_each_strike_is_a_warning_line(result, errs)


def test_node_bot_says_why_it_cannot_reach_the_referee(referee: Referee) -> None:
    """An unreachable referee was ``no connection within the reconnect window``, whatever the reason
    (waitForReady says only that its deadline passed); a refused seat gave the details without the status.
    Each is now one line with gRPC's status and details, exit 1."""
    require(NODE is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    import socket

    assert NODE is not None

    with socket.socket() as s:  # a port with nothing listening: bound, never listened on
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
        env = {**ENV, "ALLFOURS_TICKET": "no-such-ticket"}
        runs = [subprocess.run([NODE, str(JS_BOT), "--referee", address, "--connect-timeout-ms", "1000"], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=60)
                for address in (closed, referee.address)]
    (unreachable, refused) = runs
    for r in runs:
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"cannot reach the referee at {closed}: UNAVAILABLE: " in unreachable.stderr, unreachable.stderr
    assert "ECONNREFUSED" in unreachable.stderr and "Resolution note" not in unreachable.stderr, unreachable.stderr
    assert refused.stderr.strip().endswith(
        f"the referee at {referee.address} refused the seat: UNAUTHENTICATED: unknown ticket"), refused.stderr


# ----------------------------------------------------------------- in-process client, same as local mode


class Journal(HeuristicBot):
    """The heuristic bot, writing down every decision, event and hook call."""

    def __init__(self) -> None:
        self.log: list[tuple[str, object]] = []

    def act(self, ctx: Context) -> object:
        choice = super().act(ctx)
        self.log.append(("act", (ctx.observation, ctx.legal, choice, ctx.game)))
        return choice

    def on_welcome(self, info: MatchInfo) -> None:
        self.log.append(("welcome", (info.seat, info.rules, info.games, info.commitment)))

    def on_event(self, event: Event) -> None:
        self.log.append(("event", event))

    def on_deal_end(self, deal: DealEnd) -> None:
        self.log.append(("deal_end", deal))

    def on_game_end(self, game: GameEnd) -> None:
        self.log.append(("game_end", game))

    def on_match_end(self, result: MatchEnd) -> None:
        self.log.append(("match_end", (result.games, result.wins, result.winner)))


def test_remote_play_gives_a_bot_exactly_what_local_mode_gives_it(referee: Referee) -> None:
    seed = bytes(range(32))
    m = referee.create(players=2, games=2, seed=seed)
    remote = [Journal(), Journal()]
    errors: list[BaseException] = []

    def play(seat: int) -> None:
        try:
            BotClient(remote[seat], referee.address, m.tickets[seat]).run()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=play, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors
    local = [Journal(), Journal()]
    play_local(local, seed=seed, games=2)
    for r, lo in zip(remote, local, strict=True):
        # Same decisions from the same observations, same events, same hooks (welcome aside: match ids).
        assert [x for x in r.log if x[0] != "welcome"] == [x for x in lo.log if x[0] != "welcome"]
        assert r.log[0][1][:2] == lo.log[0][1][:2]  # type: ignore[index]


class Stubborn(Bot):
    """Answers "beg" when it must play a card and nonsense otherwise: the SDK falls back to legal actions."""

    def act(self, ctx: Context) -> object:
        return "beg" if ctx.phase is Phase.PLAY else "not an action"


def test_a_bot_that_chooses_illegally_still_completes_its_match(referee: Referee) -> None:
    m = referee.create(players=2)
    ends: list[MatchEnd] = []
    t = threading.Thread(target=lambda: ends.append(BotClient(Stubborn(), referee.address, m.tickets[0]).run()))
    t.start()
    other = python_bot("sample_bots.random_bot:RandomBot", referee, m.tickets[1])
    result = referee.result(m.match_id)
    t.join(30)
    assert finish([other])[0][0] == 0
    assert_completed(result, games=1)
    assert result.seats[0].illegal == 0  # the SDK never sent the illegal choices
    assert ends and ends[0].status == "completed" and ends[0].termination == "normal"


def test_bot_client_reports_an_unreachable_referee() -> None:
    with pytest.raises(ClientError, match="cannot reach"):
        BotClient(HeuristicBot(), "127.0.0.1:9", "t", connect_timeout_s=0.5).run()


@pytest.mark.parametrize("bot", ["python", "node"])
def test_a_referee_address_that_takes_the_connection_and_never_answers_is_given_up(bot: str) -> None:
    """An address that accepts TCP and never speaks (a killed referee's address can behave so on a
    swarm's overlay network): the bot gives up with "cannot reach the referee" and exits 1, instead of
    holding its seat for ever. The Node.js bot hung here (a worker of it never got back to the lobby,
    and a lost game's replay waited past ``no_show_s``); the Python SDK gives up at gRPC's 20 s
    handshake limit."""
    import socket

    if bot == "node":
        require(NODE is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
                "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    with socket.create_server(("127.0.0.1", 0), backlog=16) as silent:  # listens, never accepts
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        argv = ([str(NODE), str(JS_BOT), "--connect-timeout-ms", "2000"] if bot == "node" else
                [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--connect-timeout", "2"])
        r = subprocess.run([*argv, "--referee", address, "--ticket", "t"], cwd=ROOT, env=ENV, capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 1 and f"cannot reach the referee at {address}" in r.stderr, (r.returncode, r.stderr)


class Proxy:
    """A TCP proxy to the referee whose connections can be cut, to force a transport error."""

    def __init__(self, target: str) -> None:
        import socket

        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            host, port = self.target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            with self.lock:
                self.socks += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: object, dst: object) -> None:
        try:
            while data := src.recv(65536):  # type: ignore[attr-defined]
                dst.sendall(data)  # type: ignore[attr-defined]
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.close()  # type: ignore[attr-defined]

    def cut(self) -> None:
        """Reset every connection made so far."""
        import socket

        with self.lock:
            for s in self.socks:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            self.socks.clear()

    def close(self) -> None:
        self.server.close()
        self.cut()


def test_the_client_reconnects_with_its_ticket_after_a_transport_error(referee: Referee) -> None:
    proxy = Proxy(referee.address)

    class CutOnce(HeuristicBot):
        cut = False

        def on_event(self, event: Event) -> None:
            if event.kind == "trick_won" and not self.cut:
                self.cut = True
                proxy.cut()

    m = referee.create(players=2)
    client = BotClient(CutOnce(), proxy.address, m.tickets[0])
    ends: list[MatchEnd] = []
    t = threading.Thread(target=lambda: ends.append(client.run()))
    t.start()
    other = python_bot("sample_bots.random_bot:RandomBot", referee, m.tickets[1])
    result = referee.result(m.match_id)
    t.join(30)
    proxy.close()
    assert finish([other])[0][0] == 0
    assert client.reconnects >= 1
    assert_completed(result, games=1)
    assert ends and ends[0].termination == "normal"


class MaxCard(Bot):
    """A newcomer's mistake: ``max(ctx.legal_cards)`` raises (cards do not compare), and outside the
    play phase there are no legal cards at all: every decision falls back."""

    def act(self, ctx: Context) -> object:
        return max(ctx.legal_cards)


def test_a_bot_whose_act_raises_is_counted_in_the_result_and_the_record(referee: Referee) -> None:
    """The SDK plays a fallback for each exception, as before, but now reports both counts with each
    Decision: the referee's SeatResult.bot_counts and the record's result line hold them."""
    import json

    m = referee.create(players=2)
    client = BotClient(MaxCard(), referee.address, m.tickets[0])
    t = threading.Thread(target=client.run)
    t.start()
    other = python_bot("sample_bots.random_bot:RandomBot", referee, m.tickets[1])
    result = referee.result(m.match_id)
    t.join(30)
    assert finish([other])[0][0] == 0
    assert_completed(result, games=1)
    counts = result.seats[0].bot_counts
    assert counts.exceptions == counts.fallbacks == client.counts.fallbacks > 5, counts
    assert (result.seats[1].bot_counts.exceptions, result.seats[1].bot_counts.fallbacks) == (0, 0)
    lines = referee.admin.GetRecord(pb.GetRecordRequest(match_id=m.match_id), metadata=MD, timeout=10).lines
    end = next(json.loads(x) for x in lines if json.loads(x)["type"] == "result")
    assert end["seats"][0]["bot_counts"] == {"exceptions": counts.exceptions, "fallbacks": counts.fallbacks}


def test_a_referee_that_is_not_there_yet_is_one_line_when_sdk_run_gives_up() -> None:
    """Before its first Welcome the SDK keeps dialling for ``--connect-timeout`` seconds (bots may start
    before the referee). Each failed dial was a WARNING "connection lost …; reconnecting" (about 20 lines
    in the default 15 s, for a connection never made); what the author needs is the one line at the end
    (found by a review from a bot author's side, 2026-12-05)."""
    import socket

    with socket.socket() as closed:  # bound, not listening: every dial is refused
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        r = subprocess.run([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee", address,
                            "--ticket", "t", "--connect-timeout", "2"], cwd=ROOT, env=ENV, capture_output=True,
                           text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and f"cannot reach the referee at {address}" in lines[0], r.stderr


def test_sdk_run_refuses_a_tls_ca_file_that_holds_no_certificate(tmp_path: Path) -> None:
    """``--tls-ca`` naming a file that is not PEM (the key, a typo'd path to another file) was only found
    at the first dial: gRPC's own C-core lines and one "Failed to create security handshaker" warning a
    retry. Now a usage error, one line, before any dial."""
    not_pem = tmp_path / "bot.py"
    not_pem.write_text("print('hello')\n")
    r = subprocess.run([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee",
                        "127.0.0.1:9", "--ticket", "t", "--tls-ca", str(not_pem)], cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m sdk.run: error: --tls-ca") and "is not a PEM certificate" in last, r.stderr
    assert "handshaker" not in r.stderr and "ssl_transport_security" not in r.stderr, r.stderr


def test_sdk_runs_summary_line_says_how_often_the_bot_itself_failed(referee: Referee) -> None:
    """The one line on stdout said "this seat normal" for a bot whose ``act`` raised at every decision
    (every move the SDK's fallback): the author, who reads that line, learnt nothing. It now ends with the
    counts the referee records (``Decision.counts``), as the Node.js bot's line does."""
    m = referee.create(players=2)
    procs = [python_bot("tests.bots.newcomer:MaxCardBot" if i == 0 else "sample_bots.random_bot:RandomBot", referee, t)
             for i, t in enumerate(m.tickets)]
    result = referee.result(m.match_id)
    (code, out, _), (other, clean, _) = finish(procs)
    counts = result.seats[0].bot_counts
    assert code == other == 0 and counts.exceptions > 0
    assert out.strip().endswith(f"this seat normal, {counts.exceptions} exceptions, {counts.fallbacks} fallbacks"), out
    assert clean.strip().endswith("this seat normal"), clean  # a bot that never failed: the line as before


@pytest.mark.parametrize("bot", ["python", "cpp"])
def test_a_referee_gone_mid_match_is_one_warning_and_one_error(bot: str) -> None:
    """A seat that loses its referee dials again for the match's grace period, with back-off. Each dial
    was a "connection lost …; reconnecting" warning (eight or nine in 5 s) before the final error: now
    the loss is one warning, the dials after it are quiet, and giving up is one error line."""
    cpp = ROOT / "sample_bots/cpp/build/allfours-cpp-bot"
    if bot == "cpp":
        require(cpp.is_file(), "sample_bots/cpp is not built (bash sample_bots/cpp/build.sh)")
    ref = Referee()
    try:
        m = ref.admin.CreateMatch(pb.CreateMatchRequest(
            rules=pb.RuleSet(players=2), seat_names=["a", "b"], games=1,
            time_control=pb.TimeControl(grace_ms=3000)), metadata=MD, timeout=10)
        argv = [str(cpp)] if bot == "cpp" else [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot"]
        proc = subprocess.Popen([*argv, "--referee", ref.address, f"--ticket={m.tickets[0]}"], cwd=ROOT, env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        joined = proc.stderr.readline()  # its Welcome came (seat 1 never comes: the match waits)
        assert "joined match" in joined, joined
    finally:
        ref.proc.kill()
        ref.close()
    _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert proc.returncode == 1, err
    assert len(lines) == 2 and "connection lost" in lines[0] and "cannot reach the referee" in lines[1], err


def test_a_bot_that_answers_past_its_deadline_is_told_so_at_each_strike(tmp_path: Path) -> None:
    """A bot whose ``act`` sleeps past ``time_left_ms`` lost its seat to ``timeout`` with nothing in its log
    until the end (``this seat: timeout``): it did not know which decisions were late, nor that the
    referee had played for it. Each strike (the referee's TIMEOUT event for this seat) is now a warning."""
    (tmp_path / "slowbot.py").write_text(
        "import time\nfrom sdk import Bot\n\nclass Slow(Bot):\n"
        "    def act(self, ctx):\n        time.sleep(ctx.time_left_ms / 1000 + 0.5)\n        return ctx.legal[0]\n")
    ref = Referee()
    try:
        m = ref.admin.CreateMatch(pb.CreateMatchRequest(
            rules=pb.RuleSet(players=2), seat_names=["slow", "random"], games=1,
            time_control=pb.TimeControl(decision_ms=300, max_strikes=2)), metadata=MD, timeout=10)
        procs = sdk_runs(tmp_path, ref, ["slowbot:Slow", "sample_bots.random_bot:RandomBot"], m.tickets)
        result = ref.result(m.match_id)
        (code, out, err), _ = finish(procs)
    finally:
        ref.close()
    assert result.seats[0].termination == pb.TERMINATION_TIMEOUT and code == 0, (result, err)
    strikes = [x for x in err.splitlines() if "past its deadline" in x]
    assert len(strikes) == 2 and "strike 1 of 2" in strikes[0] and "strike 2 of 2" in strikes[1], err
    assert out.strip().endswith("this seat timeout"), out


FAULTY_BOTS = '''
import sys
from sample_bots.random_bot import RandomBot

class HookRaises(RandomBot):
    def on_welcome(self, info):
        raise RuntimeError("welcome hook broke")

    def on_event(self, event):
        if event.kind == "trick_won":
            raise RuntimeError("event hook broke")

class Exits(RandomBot):
    def act(self, ctx):
        if ctx.decision % 2:
            sys.exit(3)
        return super().act(ctx)
'''


def test_a_bot_whose_hook_raises_keeps_its_seat_and_one_that_exits_says_so(tmp_path: Path) -> None:
    """The runner kept the seat of a bot whose ``act`` raised, but a hook that raised (``on_event``,
    ``on_welcome``…) went up through it: ``sdk.run`` died with a traceback mid-match and its seat was
    forfeited (``disconnect``). Now it is the bot's own failure like any other: its traceback logged,
    counted in ``Decision.counts``, and the match played on. An ``act`` that calls ``sys.exit`` is the bot
    leaving, as Python means it (a competition's validation rejects it so): it ended the process with its
    status and not a word; now one error line says so first."""
    (tmp_path / "faulty.py").write_text(FAULTY_BOTS)
    ref = Referee()
    try:
        ends, results = [], []
        for spec in ("faulty:HookRaises", "faulty:Exits"):
            m = ref.create(players=2)
            procs = sdk_runs(tmp_path, ref, [spec, "sample_bots.random_bot:RandomBot"], m.tickets)
            results.append(ref.result(m.match_id))
            ends.append(finish(procs))
    finally:
        ref.close()
    (hook_code, _, hooks), _ = ends[0]
    assert hook_code == 0, hooks
    assert_completed(results[0], games=1)
    assert results[0].seats[0].bot_counts.exceptions > 0, results[0].seats
    assert "RuntimeError: welcome hook broke" in hooks and "RuntimeError: event hook broke" in hooks, hooks
    (exit_code, _, exits), _ = ends[1]
    assert exit_code == 3 and results[1].seats[0].termination != pb.TERMINATION_NORMAL, (exits, results[1].seats)
    assert "the bot's act() called sys.exit(3): it leaves the match" in exits, exits
