"""The C++ sample bot (sample_bots/cpp, built offline from Debian's gRPC by scripts/setup.d/30-cpp.sh)
plays in a tournament over real gRPC and is seated in the demo; as a worker it leaves once its arena
is gone, and dials its lobby again until it is back (but not after a refusal). The conformance suite
runs on it, in both modes, in tests/test_conformance.py."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from allfours.v1.lobby_pb2_grpc import LobbyServiceServicer
from arena.config import load_config
from sdk.conformance.lobby import BOT_NAME, ScriptedLobby, worker_env
from sdk.worker import PARENT_ENV
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "sample_bots/cpp/build/allfours-cpp-bot"

pytestmark = pytest.mark.slow

CONFIG = """
[tournament]
name = "cpp"
players = 4
games_per_pairing = 2
concurrency = 1
output = "{out}"

[tournament.rules]
target = 7

[tournament.time_control]
decision_ms = 2000
join_ms = 15000

[[bots]]
name = "cpp"
version = "1"
command = ["sample_bots/cpp/build/allfours-cpp-bot", "--ticket={{ticket}}"]
cwd = "{root}"

[[bots]]
name = "heuristic"
version = "1"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.heuristic:HeuristicBot", "--log-level", "warning"]
cwd = "{root}"
"""


def test_the_cpp_bot_plays_a_tournament(tmp_path: Path) -> None:
    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    out = tmp_path / "out"
    cfg = tmp_path / "cpp.toml"
    cfg.write_text(CONFIG.format(out=out, root=ROOT))
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    games = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert len(games) == 2
    for g in games:
        assert g["terminations"] == ["normal"] * 4 and g["winner"] in (0, 1), g
    ratings = json.loads((out / "ratings.json").read_text())
    assert ratings["ratings"]["cpp"]["games"] == 2


def test_the_demo_seats_the_cpp_bot() -> None:
    demo = load_config(ROOT / "examples/demo.toml")
    cpp = next(b for b in demo.bots if b.name == "cpp")
    assert Path(cpp.cwd or "") == ROOT / "sample_bots/cpp" and cpp.command[0] == "build/allfours-cpp-bot"
    assert cpp.jailed  # sandboxed, seeing its own folder


def test_the_cpp_worker_leaves_once_its_arena_is_gone() -> None:
    """Worker mode (ALLFOURS_LOBBY set, no ticket): the worker registers and waits for Assignments; once
    the process named by ALLFOURS_WORKER_PARENT is gone it leaves (status 0, one line) instead of
    waiting on the lobby for ever, so a local worker never outlives its arena. (That it plays its
    Assignments is the conformance suite's lobby mode: tests/test_conformance.py.)"""
    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")

    async def serve_until_it_leaves() -> tuple[int | None, str]:
        lobby = ScriptedLobby("a-token", BOT_NAME, time.monotonic)
        server = grpc.aio.server()
        lpb_grpc.add_LobbyServiceServicer_to_server(lobby, server)
        address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        await server.start()
        gone = subprocess.Popen(["true"])
        gone.wait()
        env = {**worker_env(address, "a-token"), PARENT_ENV: str(gone.pid)}
        proc = await asyncio.create_subprocess_exec(str(BINARY), env=env, stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 20)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            lobby.close()
            await server.stop(None)
        return proc.returncode, err.decode()

    status, err = asyncio.run(serve_until_it_leaves())
    assert status == 0, err
    assert err.strip().splitlines()[-1].endswith(") is gone: leaving"), err


class RefusingLobby(LobbyServiceServicer):
    """A lobby that refuses every worker as the arena's refuses a revoked token."""

    async def Connect(self, request_iterator: object, context: grpc.aio.ServicerContext) -> None:  # type: ignore[override]
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")


def test_the_cpp_worker_dials_its_lobby_again_until_it_is_back_and_leaves_at_a_refusal() -> None:
    """docs/protocol.md ("Workers and the lobby", 6): a worker whose lobby stream breaks (UNAVAILABLE: the
    arena restarting), or whose first dial finds no lobby, dials again with back-off and registers again.
    The C++ worker left with status 1 at the first loss, so an arena restarted (``arena serve`` after an
    upgrade or a crash) had lost its C++ workers for good. Now it dials until its lobby is there (started
    after it), registers again once the lobby stopped and came back on the same address, and leaves
    (status 1, one line) only when refused in a way dialling again cannot help."""
    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    with socket.socket() as probe:  # a free port, for three servers in turn
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"127.0.0.1:{port}"
    servers: list[grpc.aio.Server] = []

    async def serve(servicer: LobbyServiceServicer) -> grpc.aio.Server:
        server = grpc.aio.server()
        lpb_grpc.add_LobbyServiceServicer_to_server(servicer, server)
        assert server.add_insecure_port(address) == port
        await server.start()
        servers.append(server)
        return server

    async def restarts() -> tuple[int | None, str, int]:
        lobby = ScriptedLobby("a-token", BOT_NAME, time.monotonic)
        proc = await asyncio.create_subprocess_exec(str(BINARY), env=worker_env(address, "a-token"),
                                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.PIPE)

        async def registers() -> None:  # at this lobby, or say why not (the worker's stderr)
            gone = asyncio.ensure_future(proc.wait())
            came = asyncio.ensure_future(lobby.registered.wait())
            await asyncio.wait({gone, came}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
            gone.cancel()
            came.cancel()
            if not lobby.registered.is_set():
                err = await proc.stderr.read() if proc.returncode is not None and proc.stderr else b""
                raise AssertionError(f"no Register (the worker's status: {proc.returncode}): {err.decode()}")
            lobby.registered.clear()

        try:
            await asyncio.sleep(1.5)  # no lobby yet: the worker's first dials find nothing
            server = await serve(lobby)
            await registers()
            await server.stop(0)  # the arena goes away …
            await asyncio.sleep(1.0)
            server = await serve(lobby)  # … and comes back on the same address
            await registers()
            count = len(lobby.log.registers)
            await server.stop(0)
            server = await serve(RefusingLobby())  # its token revoked meanwhile
            _, err = await asyncio.wait_for(proc.communicate(), 20)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            for server in servers:
                await server.stop(None)
        return proc.returncode, err.decode(), count

    status, err, count = asyncio.run(restarts())
    assert count == 2, err
    assert status == 1, err
    assert err.strip().splitlines()[-1].endswith(
        f"lobby {address} refused the worker: UNAUTHENTICATED: unknown or revoked bot token"), err


def test_a_copy_of_the_cpp_bot_in_a_folder_of_its_own_builds_from_the_proto_beside_it(tmp_path: Path) -> None:
    """docs/bot-authors.md tells an author to copy a sample into a folder of its own with a copy of
    ``proto/`` (the sandbox shows a bot only its folder); the Node.js bot reads the ``proto/`` beside it,
    but CMakeLists.txt always took ``../../proto``, so the copy's build stopped at once with ``No rule to
    make target '…/proto/allfours/v1/referee.proto'``. A dry run (``make -n``) proves the rules are
    whole without compiling for a minute."""
    import shutil

    require(all(shutil.which(t) for t in ("cmake", "make", "pkg-config", "protoc", "grpc_cpp_plugin")),
            "the C++ toolchain is missing (scripts/setup.sh)")
    mine = tmp_path / "mybots" / "cpp"
    shutil.copytree(ROOT / "sample_bots/cpp", mine, ignore=shutil.ignore_patterns("build"))
    shutil.copytree(ROOT / "proto", mine / "proto")
    build = mine / "build"
    subprocess.run(["cmake", "-S", str(mine), "-B", str(build)], check=True, capture_output=True, timeout=300)
    dry = subprocess.run(["cmake", "--build", str(build), "--", "-n"], capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr
    assert str(mine / "proto" / "allfours" / "v1" / "referee.proto") in dry.stdout, dry.stdout[-2000:]


def test_the_cpp_bots_summary_line_says_how_its_seat_ended() -> None:
    """The line on stdout said only ``match over: games won 0-1, winner side 1``: a C++ author whose bot
    timed out (or whose opponent never came) could not tell from it. It now names the match's status and
    this seat's termination, as the Python and Node.js lines do, and ``no winner`` instead of side -1."""
    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    from allfours.v1 import referee_pb2 as pb
    from tests.test_sdk_remote import MD, Referee

    ref = Referee()
    try:  # the other seat never joins: a forfeit (no_show) that the C++ bot's seat did not cause
        m = ref.admin.CreateMatch(pb.CreateMatchRequest(
            rules=pb.RuleSet(players=2), seat_names=["cpp", "absent"], games=1,
            time_control=pb.TimeControl(join_ms=2000)), metadata=MD, timeout=10)
        r = subprocess.run([str(BINARY), "--referee", ref.address, f"--ticket={m.tickets[0]}"], capture_output=True,
                           text=True, timeout=60)
    finally:
        ref.close()
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert line.startswith("match forfeited: games won 0-0, winner side 0, this seat other_seat_forfeited ("), line
    assert "did not join" in line, line  # the referee's detail, in brackets


def test_the_cpp_bots_errors_are_one_line_that_names_the_status() -> None:
    """A refused ticket said ``refused the seat: 16: unknown ticket`` and an absent referee ``14: …`` (gRPC's
    status numbers), after a ``connection lost …; reconnecting`` line for every dial of the 15 s it waits
    for a referee that is not there yet (about 20 lines for a connection never made). Now one line each,
    naming the status as the other languages do."""
    import socket

    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    from tests.test_sdk_remote import Referee

    ref = Referee()
    try:
        refused = subprocess.run([str(BINARY), "--referee", ref.address, "--ticket=t-unknown"], capture_output=True,
                                 text=True, timeout=60)
    finally:
        ref.close()
    with socket.socket() as closed:  # bound, not listening: every dial is refused
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        absent = subprocess.run([str(BINARY), "--referee", address, "--ticket=t"], capture_output=True, text=True,
                                timeout=120)
    for r, needle in ((refused, "refused the seat: UNAUTHENTICATED: unknown ticket"),
                      (absent, f"cannot reach the referee at {address}: UNAVAILABLE: ")):
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and needle in lines[0], r.stderr


def test_the_cpp_bot_says_each_strike_in_a_warning_line() -> None:
    """The C++ bot ignored the referee's TIMEOUT events: a seat that answered late lost its decisions (the
    referee played the first legal action) and, at ``max_strikes``, the seat, with nothing in its log until
    the summary line. Each strike of its own seat is now one warning line on stderr, in the words of the
    Python SDK and the Node.js bot; ``--think-ms`` (an author's way to see strikes happen) makes every
    answer late."""
    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    from tests.test_sdk_remote import ENV, THINK_MS, Referee, assert_each_strike_is_a_warning_line, two_slow_seats

    def cpp_bot(ticket: str) -> subprocess.Popen[str]:
        return subprocess.Popen([str(BINARY), "--referee", ref.address, f"--ticket={ticket}", "--think-ms",
                                 str(THINK_MS)], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    ref = Referee()
    try:
        result, errs = two_slow_seats(ref, cpp_bot)
    finally:
        ref.close()
    assert_each_strike_is_a_warning_line(result, errs)


def test_the_cpp_bot_refuses_a_think_time_that_is_not_a_whole_number() -> None:
    """``--think-ms`` takes a whole number of ms; anything else is a usage error (status 2), not a silent 0."""
    require(BINARY.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    for bad in ("-1", "1.5", "", "x"):
        r = subprocess.run([str(BINARY), "--referee", "127.0.0.1:1", "--ticket=t", f"--think-ms={bad}"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and r.stderr.startswith("allfours-cpp-bot: --think-ms needs a whole number >= 0"), r
