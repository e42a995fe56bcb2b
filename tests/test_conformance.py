"""The conformance suite (sdk/conformance) end to end: real bot processes over real gRPC streams.

- every sample bot (random, heuristic, Node.js, C++) passes every check of per-game mode, and the
  per-game suite is the 20 checks it was before lobby mode (no lobby check in it, not even a skip);
- a bot with one deliberate fault per check (tests/bots/broken.py) fails exactly that check;
- in lobby mode (one long-lived worker, a scripted lobby) the Python SDK, Node.js and C++ workers
  pass every check, and the broken bot's faults fail exactly their checks there too;
- a worker that does not dial the lobby again after it went away (an arena restarting) fails
  ``lobby-redial`` with one line, whether it idles or exits;
- a worker that never registers, dies before or after registering (a bot without worker mode), or
  does not join its Assignment gets one line saying so, within bounded time;
- the scripted decks stage what their checks need (checked through the engine);
- usage errors are one line and exit status 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from referee.rules import Beg, Phase, RunPack, apply, deal, new_game
from sdk.conformance.checks import CHECKS, Mode, checks_of
from sdk.conformance.cli import parse_rules, run_checks, selected_checks
from sdk.conformance.launch import Limits
from sdk.conformance.logs import RequestSent, RunLog
from sdk.conformance.referee import with_unknown_field
from sdk.conformance.scenarios import build_scenarios
from tests.conftest import require

# the suite's slowest host module (202 s of 1,655): in scripts/test.sh's docker half, which ran 400 s shorter
pytestmark = pytest.mark.docker_half

ROOT = Path(__file__).resolve().parent.parent
#: What a correct bot gets in each mode: every check of that mode passes (and nothing else is listed).
PER_GAME = {c.name: "pass" for c in checks_of(Mode.PER_GAME)}
LOBBY = {c.name: "pass" for c in checks_of(Mode.LOBBY)}
#: The broken bot's memory fault holds 300 MiB; the suite runs it with this limit.
MEMORY_LIMIT_MIB = "200"


def run_suite(*bot: str, extra: tuple[str, ...] = (), timeout: float = 600, cwd: Path = ROOT,
              env: dict[str, str] | None = None) -> dict[str, object]:
    """``python -m sdk.conformance --json … -- BOT…`` in ``cwd`` (with ``env``, else this one): the parsed
    JSON (the exit status is checked)."""
    proc = subprocess.run([sys.executable, "-m", "sdk.conformance", "--json", *extra, "--", *bot], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)
    out: dict[str, object] = json.loads(proc.stdout)
    assert proc.returncode == (0 if out["passed"] else 1), proc.stderr[-2000:]
    return out


def statuses(out: dict[str, object]) -> dict[str, str]:
    return {c["check"]: c["status"] for c in out["checks"]}  # type: ignore[attr-defined, index]


SAMPLE_BOTS = {
    "random": (sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"),
    "heuristic": (sys.executable, "-m", "sdk.run", "sample_bots.heuristic:HeuristicBot", "--log-level", "warning"),
    "nodejs": ("node", "sample_bots/js/bot.js"),
    "cpp": ("sample_bots/cpp/build/allfours-cpp-bot",),
}


def require_sample_bot(name: str) -> None:
    """Node.js needs its modules, the C++ bot its build (scripts/setup.sh makes both)."""
    if name == "nodejs":
        require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
                "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    if name == "cpp":
        require((ROOT / SAMPLE_BOTS["cpp"][0]).is_file(),
                "the C++ bot is not built (scripts/setup.sh runs sample_bots/cpp/build.sh)")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLE_BOTS))
def test_sample_bot_passes_every_check(name: str) -> None:
    require_sample_bot(name)
    out = run_suite(*SAMPLE_BOTS[name])
    assert statuses(out) == PER_GAME, json.dumps(out, indent=1)


@pytest.mark.slow
def test_a_copy_of_the_nodejs_bot_in_its_own_folder_finds_its_own_proto(tmp_path: Path) -> None:
    """docs/bot-authors.md and docs/competition.md say: copy ``sample_bots/js`` into a folder of its own
    with a copy of ``proto/``. Such a copy, outside the repository and without ALLFOURS_PROTO_DIR, joins
    (it looked only in ``../../proto`` and died: ENOENT allfours/v1/referee.proto)."""
    require_sample_bot("nodejs")
    mine = tmp_path / "mybot"
    mine.mkdir()
    for name in ("bot.js", "package.json", "package-lock.json"):
        shutil.copy(ROOT / "sample_bots/js" / name, mine / name)
    shutil.copytree(ROOT / "proto", mine / "proto")
    (mine / "node_modules").symlink_to(ROOT / "sample_bots/js/node_modules")
    assert not (mine / ".." / ".." / "proto").exists()  # only the copy's own proto/ can serve
    env = {k: v for k, v in os.environ.items() if k != "ALLFOURS_PROTO_DIR"} | {"PYTHONPATH": str(ROOT)}
    out = run_suite("node", "bot.js", extra=("--only", "join"), cwd=mine, env=env, timeout=120)
    assert statuses(out) == {"join": "pass"}, json.dumps(out, indent=1)


@pytest.mark.slow
def test_the_correct_broken_bot_passes_every_check() -> None:
    """The broken bot without a fault is a correct bot: the faults below are its only difference."""
    out = run_suite(sys.executable, "-m", "tests.bots.broken", extra=("--memory-limit", MEMORY_LIMIT_MIB))
    assert statuses(out) == PER_GAME, json.dumps(out, indent=1)


def _broken_suites(mode: Mode) -> list[tuple[str, list[str], dict[str, object]]]:
    """One suite per fault of tests/bots/broken.py in ``mode``, three at a time (each waits on its bot more
    than it computes): (fault, the checks that did not pass, the JSON)."""
    lobby = ("--lobby",) if mode is Mode.LOBBY else ()

    def one(check: str) -> tuple[str, list[str], dict[str, object]]:
        out = run_suite(sys.executable, "-m", "tests.bots.broken", "--break", check,
                        extra=("--memory-limit", MEMORY_LIMIT_MIB, *lobby))
        return check, sorted(c for c, s in statuses(out).items() if s != "pass"), out

    with ThreadPoolExecutor(3) as pool:
        return list(pool.map(one, [c.name for c in checks_of(mode)]))


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(Mode), ids=lambda m: m.value)
def test_a_bot_broken_for_one_check_fails_exactly_that_check(mode: Mode) -> None:
    """Each fault of tests/bots/broken.py (per game: its process; lobby mode: the worker of one lobby run)
    fails its check and no other; every mismatch is reported at once."""
    results = _broken_suites(mode)
    wrong = [f"--break {check}: failed {failed}" for check, failed, _ in results if failed != [check]]
    assert not wrong, "\n".join(wrong)
    for check, _, out in results:
        assert out["failure"] == "" and out["mode"] == mode.value
        assert out["summary"] == f"conformance: {len(checks_of(mode)) - 1} passed, 1 failed ({check}), 0 skipped"
    if mode is Mode.LOBBY:  # a worker that does not come back after the referee dropped its stream lives
        # on: the match ends after the grace period (it used to play on without the seat, 2 s a request)
        resume = next(out for check, _, out in results if check == "resume")
        did = next(c["did"] for c in resume["checks"] if c["check"] == "resume")  # type: ignore[attr-defined]
        assert did.endswith("no new stream came within 5 s"), did
        # a worker that stays but never dials the lobby again is told so after a bounded wait
        redial = next(out for check, _, out in results if check == "lobby-redial")
        did = next(c["did"] for c in redial["checks"] if c["check"] == "lobby-redial")  # type: ignore[attr-defined]
        assert did == ("no new Register within 12 s of the lobby listening again (it closed the worker's stream "
                       "with UNAVAILABLE and was down 1 s): a worker must dial again with back-off until the lobby "
                       "is back"), did


def test_the_per_game_suite_is_unchanged_by_lobby_mode() -> None:
    """The lobby checks are not part of per-game mode (neither run, failed nor skipped there), and
    ``exit`` is not part of lobby mode (a worker stays for its next Assignment)."""
    assert list(PER_GAME) == [
        "join", "phases", "deadline", "retry", "seq-echo", "resend", "unknown-messages", "pack-runs-dry",
        "kick-ends-game", "multi-game", "players-2", "players-4", "rules-deal-in-ones", "rules-target-21",
        "rules-hang-jack-off", "rules-undertrump-ban", "rules-void-may-discard", "resume", "exit", "limits"]
    assert list(LOBBY) == [c for c in PER_GAME if c != "exit"] + ["lobby-register", "lobby-ready", "lobby-redial"]
    for mode, other in ((Mode.PER_GAME, LOBBY), (Mode.LOBBY, PER_GAME)):
        chosen, skips = selected_checks([], 4, mode)
        assert [c.name for c in chosen] == list(PER_GAME if mode is Mode.PER_GAME else LOBBY) and skips == []
        for name in set(other) - {c.name for c in chosen}:
            with pytest.raises(ValueError, match=f"{name}: not a check of {mode.value} mode"):
                selected_checks([name], 4, mode)
            with pytest.raises(ValueError, match=f"{name}: not a check of {mode.value} mode"):  # before any launch
                asyncio.run(run_checks(["/nonexistent/bot"], [c for c in CHECKS if c.name == name], 4, {}, Limits(),
                                       mode=mode))


LOBBY_BOTS = {"random": SAMPLE_BOTS["random"], "nodejs": SAMPLE_BOTS["nodejs"], "cpp": SAMPLE_BOTS["cpp"],
              "broken-but-correct": (sys.executable, "-m", "tests.bots.broken")}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOBBY_BOTS))
def test_workers_pass_every_check_in_lobby_mode(name: str) -> None:
    """One worker process plays every scenario as an Assignment from the scripted lobby."""
    require_sample_bot(name)
    out = run_suite(*LOBBY_BOTS[name], extra=("--lobby",))
    assert statuses(out) == LOBBY, json.dumps(out, indent=1)
    assert out["mode"] == "lobby" and out["failure"] == "" and out["passed"] is True
    assert out["summary"] == f"conformance: {len(LOBBY)} passed, 0 failed, 0 skipped"


@pytest.mark.slow
def test_a_worker_that_sends_its_ready_before_the_match_end_fails_lobby_ready() -> None:
    """A Ready sent with the Assignment, before the seat is played, then another after MatchEnd: the
    arena's lobby takes the first as the seat played (it may give the worker a second seat meanwhile)
    and refuses the second (INVALID_ARGUMENT, the worker's stream ends). The check passed it: the suite
    took the early Ready, still queued at MatchEnd, for one sent after it."""
    out = run_suite(sys.executable, "-m", "tests.bots.broken", "--break", "lobby-ready-early",
                    extra=("--lobby", "--only", "lobby-ready"), timeout=120)
    assert statuses(out) == {"lobby-ready": "fail"}, json.dumps(out, indent=1)
    did = out["checks"][0]["did"]  # type: ignore[index]
    assert did.startswith("sent the Ready naming conformance-multi-game before its MatchEnd"), did


@pytest.mark.slow
def test_a_worker_that_leaves_when_its_lobby_goes_away_fails_lobby_redial_quoting_its_last_words() -> None:
    """An arena that restarts (``arena serve`` after an upgrade or a crash) closes every worker's stream with
    UNAVAILABLE and comes back on the same address: a worker that leaves then (the C++ sample bot did,
    with status 1) plays nothing more. Nothing told its author: the suite never dropped the lobby. The
    check fails it at once (no waiting), with the worker's own last line, and judges nothing else
    differently."""
    out = run_suite(sys.executable, "-m", "tests.bots.broken", "--break", "lobby-redial-exit",
                    extra=("--lobby", "--only", "lobby-redial", "--only", "lobby-ready"), timeout=120)
    assert statuses(out) == {"lobby-ready": "pass", "lobby-redial": "fail"}, json.dumps(out, indent=1)
    did = next(c["did"] for c in out["checks"] if c["check"] == "lobby-redial")  # type: ignore[attr-defined]
    assert did == ("the worker's process ended with status 1 when the lobby closed its stream with UNAVAILABLE "
                   "(an arena restarting) instead of dialling again (its last output: 'broken: the lobby stream "
                   "ended: leaving')"), did
    assert out["failure"] == "", out["failure"]  # the run was over: no "stopped:" line


@pytest.mark.slow
def test_a_worker_that_dials_again_at_once_fails_lobby_redial() -> None:
    """lobby-redial passed any worker that registered again within 12 s, one dialling again every 10 ms
    as well: a worker without back-off floods a lobby that refuses it (an arena restarting, a full pool;
    every stream a handler at the lobby), and docs/protocol.md asks for back-off. Now the lobby, back,
    refuses the worker's first new stream (UNAVAILABLE) and its next Register must come at least
    MIN_REDIAL_GAP_S later; tests/bots/broken.py's honest worker (0.5 s between dials) still passes, as
    the SDK and sample workers do (their conformance runs)."""
    out = run_suite(sys.executable, "-m", "tests.bots.broken", "--break", "lobby-redial-hammer",
                    extra=("--lobby", "--only", "lobby-redial", "--only", "lobby-ready"), timeout=120)
    assert statuses(out) == {"lobby-ready": "pass", "lobby-redial": "fail"}, json.dumps(out, indent=1)
    did = next(c["did"] for c in out["checks"] if c["check"] == "lobby-redial")  # type: ignore[attr-defined]
    assert did.startswith("dialled again ") and did.endswith(
        " ms after the lobby refused its first new stream with UNAVAILABLE: a worker must back off (at least "
        "0.25 s; from 0.5 s, doubling), or it floods a lobby that refuses it"), did
    honest = run_suite(sys.executable, "-m", "tests.bots.broken", extra=("--lobby", "--only", "lobby-redial"),
                       timeout=120)
    assert statuses(honest) == {"lobby-redial": "pass"}, json.dumps(honest, indent=1)


def test_the_scripted_lobby_closes_a_stream_in_the_arenas_own_words() -> None:
    """lobby-redial closes the worker's stream as the arena's lobby does when it shuts down: the same
    status and text (a worker may read it)."""
    from sdk.conformance.lobby import SHUTTING_DOWN

    service = (ROOT / "arena/lobby/service.py").read_text()
    assert f'StatusCode.UNAVAILABLE, "{SHUTTING_DOWN}"' in service


#: Workers that fail in the lobby itself: ``python -c SCRIPT ARG`` with ARG one of the keys of DYING.
DYING_WORKER = """
import os, sys, time, grpc
from allfours.v1 import lobby_pb2 as lpb, lobby_pb2_grpc as lpb_grpc
how = sys.argv[1]
print("the worker's last words", file=sys.stderr, flush=True)
if how == "dies-at-once":
    sys.exit(3)
if how == "never-registers":
    time.sleep(60)
reg = lpb.Register(token=os.environ["ALLFOURS_BOT_TOKEN"], bot_name=os.environ["ALLFOURS_BOT_NAME"],
                   protocol_version="allfours.v1")
with grpc.insecure_channel(os.environ["ALLFOURS_LOBBY"]) as channel:
    if how.startswith("garbage"):  # bytes that are not a ConnectRequest, first or after the Register
        sent = [lpb.ConnectRequest(register=reg).SerializeToString(), b"\\xff\\xff\\xff"]
        connect = channel.stream_stream("/allfours.v1.LobbyService/Connect", request_serializer=lambda b: b,
                                        response_deserializer=lpb.ConnectResponse.FromString)
        try:
            for resp in connect(iter(sent[1:] if how == "garbage-first" else sent)):
                pass
        except grpc.RpcError:
            pass  # refused: the suite has stopped the run by now (its one line says why)
        time.sleep(60)
    for resp in lpb_grpc.LobbyServiceStub(channel).Connect(iter([lpb.ConnectRequest(register=reg)])):
        if resp.WhichOneof("msg") == "assignment":
            if how == "dies-at-its-assignment":
                os._exit(4)
            time.sleep(60)  # never joins the referee
"""
DYING = {
    "dies-at-once": "the worker's process ended with status 3 before it registered at the lobby "
                    "(its last output: \"the worker's last words\")",
    "never-registers": "the worker sent no Register to the lobby within 6 s of the launch (is its worker mode "
                       "started by ALLFOURS_LOBBY?) (its last output: \"the worker's last words\")",
    "dies-at-its-assignment": "the worker's process ended with status 4 during conformance-basic "
                              "(its last output: \"the worker's last words\")",
    "garbage-first": "the first message on the lobby stream is not a ConnectRequest (3 bytes that do not decode as "
                     "allfours.v1.ConnectRequest): the arena's lobby refuses it (INVALID_ARGUMENT) and ends the stream "
                     "(its last output: \"the worker's last words\")",
    "garbage-after-register": "a message after Register is not a ConnectRequest (3 bytes that do not decode as "
                              "allfours.v1.ConnectRequest): the arena's lobby refuses it (INVALID_ARGUMENT) and ends "
                              "the stream (its last output: \"the worker's last words\")",
    "never-joins": "the worker did not join the referee of its Assignment conformance-basic: no stream with a "
                   "Hello within 10 s of its Assignment (its last output: \"the worker's last words\")",
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(DYING))
def test_a_worker_that_fails_in_the_lobby_gets_one_line_not_a_hang(how: str) -> None:
    """The run stops at once with one line (JSON ``failure``, and the reason of every check not played);
    the subprocess timeout bounds it: the waits are the start-up limit + 5 s and 10 s per join."""
    limit = ("--startup-limit", "1") if how == "never-registers" else ()
    out = run_suite(sys.executable, "-c", DYING_WORKER, how, extra=("--lobby", *limit), timeout=60)
    assert out["failure"] == DYING[how] and out["passed"] is False
    # registered in time and small: those two checks pass
    registered = how in ("dies-at-its-assignment", "never-joins", "garbage-after-register")
    assert statuses(out) == {c: ("pass" if registered and c in ("lobby-register", "limits") else "fail")
                             for c in LOBBY}
    dids = {c["check"]: c["did"] for c in out["checks"]}  # type: ignore[attr-defined, index]
    assert dids["retry"] == f"not played: {DYING[how]}"
    if not registered:
        assert dids["lobby-register"] == DYING[how]


#: A per-game bot that ends with status 3 at its first decision (``leaves``) or before its Hello (``never-joins``).
LEAVING_BOT = """
import os, sys
from sdk import Bot
from sdk.run import main

class Leaver(Bot):
    def act(self, ctx):
        os._exit(3)

if sys.argv[1] == "never-joins":
    sys.exit(3)
sys.modules["leaver"] = sys.modules["__main__"]
sys.exit(main(["leaver:Leaver"]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("how", "when"), [("leaves", "during the match"),
                                           ("never-joins", "before it joined the match")])
def test_a_bot_that_ends_says_whether_it_was_in_the_match(how: str, when: str) -> None:
    """A competitor reads this line in a rejection: "before the match" for a bot that had joined and
    left at its first decision sent them looking at its start-up."""
    out = run_suite(sys.executable, "-c", LEAVING_BOT, how, extra=("--only", "players-2", "--startup-limit", "3"))
    dids = {c["check"]: c["did"] for c in out["checks"]}  # type: ignore[attr-defined, index]
    assert dids["players-2"].startswith(f"the bot's process ended (status 3) {when}"), dids


#: A bot that says why it cannot start, on stderr, and exits with status 1 before its Hello.
DIES_AT_START = "import sys; print('cannot start: MARKER-no-such-config', file=sys.stderr); sys.exit(1)"


@pytest.mark.slow
def test_the_table_shows_the_bots_own_output_when_a_run_fails() -> None:
    """docs/bot-authors.md: the bot's output is kept and its last 2 KiB shown when a run fails. The table
    said only "the bot's process ended (status 1) before it joined the match", not why (the tail went to
    ``--json`` only)."""
    proc = subprocess.run([sys.executable, "-m", "sdk.conformance", "--only", "join", "--", sys.executable, "-c",
                           DIES_AT_START], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "cannot start: MARKER-no-such-config" in proc.stdout, proc.stdout
    assert "the bot's own output (basic" in proc.stdout, proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "conformance: 0 passed, 1 failed (join), 0 skipped"


#: A bot that writes 32 MiB of output, then reports (to the file named in its argv) how many bytes of it the
#: suite holds on disk (its stdout's size when that is a file, 0 for a pipe), says its last words and
#: exits before its Hello.
FLOODER = """
import os, stat, sys
for _ in range(512):
    os.write(1, b"x" * 65536)
st = os.fstat(1)
with open(sys.argv[1], "w") as f:
    f.write(str(st.st_size if stat.S_ISREG(st.st_mode) else 0))
os.write(2, b"MARKER-last-words")
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", [(), ("--lobby",)], ids=["per-game", "lobby"])
def test_a_bots_flood_of_output_is_not_kept_on_disk(tmp_path: Path, mode: tuple[str, ...]) -> None:
    """The suite wrote all the bot's output to a temporary file and read its last 2 KiB at the end: a bot
    writing without end filled the host's temp folder for as long as its scenarios lasted (the arena's
    validation of a submission runs this suite, `docker run` streaming the container's output into it,
    for up to 900 s). Only the end is kept now, in memory: of 32 MiB written, nothing is held on disk,
    and the tail is its last words."""
    report = tmp_path / "held"
    out = run_suite(sys.executable, "-c", FLOODER, str(report),
                    extra=(*mode, "--startup-limit", "1", "--only", "lobby-register" if mode else "join"), timeout=120)
    assert int(report.read_text()) <= 1 << 20
    tails = out["output_tails"]
    assert isinstance(tails, dict) and tails, out
    assert all(str(t).endswith("MARKER-last-words") and len(str(t)) <= 2048 for t in tails.values()), tails


@pytest.mark.slow
def test_only_and_two_players() -> None:
    out = run_suite(sys.executable, "-m", "tests.bots.broken", extra=("--only", "phases", "--only", "pack-runs-dry",
                                                                      "--players", "2"))
    assert statuses(out) == {"phases": "pass", "pack-runs-dry": "skip"}


def test_the_stacked_decks_stage_their_situations() -> None:
    sc = build_scenarios(4)
    dry = sc["pack-runs-dry"]
    state = deal(new_game(dry.rules, dry.first_dealer), dry.deck(1, 1))
    state = apply(apply(state, Beg()), RunPack())  # the house beggar begs, the house dealer runs
    assert state.phase is Phase.DEAL and state.deals[-1].ran_dry  # the same dealer deals again
    kick = sc["kick-ends-game"]
    state = deal(new_game(kick.rules, kick.first_dealer), kick.deck(1, 1))
    assert state.phase is Phase.OVER and state.points[-1].kind == "kick"
    phases = sc["phases"]
    state = deal(new_game(phases.rules, phases.first_dealer), phases.deck(1, 1))
    assert state.to_act == phases.bot_seat and any(c.suit is state.trump for c in state.hands[1])


def test_the_phases_row_names_the_phases_asked_only_when_there_were_some() -> None:
    """A bot that never joined was shown "(asked in: )", empty parentheses; one asked in some phases but
    answering none of them legally is shown the phases it was asked in."""
    judge = next(c.judge for c in CHECKS if c.name == "phases")
    never = RunLog("phases", "t", failure="the bot's process ended (status 1) before it joined the match")
    assert judge(never, Limits()).did == ("no legal answer in phase(s) beg, dealer, play, call; the bot's process "
                                          "ended (status 1) before it joined the match")
    asked = RunLog("phases", "t", requests=[RequestSent(1, 1, 1, "beg", [], 0.0, 1000, 1)])
    assert judge(asked, Limits()).did == "no legal answer in phase(s) beg, dealer, play, call (asked in: beg)"


def test_unknown_fields_survive_the_wire() -> None:
    """What the unknown-messages check sends really carries a field the stubs do not define."""
    msg = with_unknown_field(pb.PlayResponse())
    assert msg.WhichOneof("msg") is None
    assert len(msg.SerializeToString()) > 0


def test_parse_rules() -> None:
    assert parse_rules("deal_in=ones, hang_jack=false,target=21") == {"deal_in": "ones", "hang_jack": False,
                                                                       "target": 21}
    for bad, words in (("deal_in", "KEY=VALUE"), ("colour=red", "unknown rule option"), ("players=2", "--players"),
                       ("target=0", "target")):
        with pytest.raises(ValueError, match=words):
            parse_rules(bad)
    with pytest.raises(ValueError, match="unknown check"):
        selected_checks(["nope"], 4)


@pytest.mark.parametrize("mode", list(Mode), ids=lambda m: m.value)
def test_an_unknown_check_lists_the_checks_of_its_mode(mode: Mode) -> None:
    """``--only`` with a typo listed every check of both modes, so ``lobby-ready`` was offered to a per-game
    run, where naming it is a usage error of its own."""
    with pytest.raises(ValueError) as e:
        selected_checks(["nope"], 4, mode)
    assert str(e.value) == f"unknown check(s) nope; checks: {', '.join(c.name for c in checks_of(mode))}"


@pytest.mark.parametrize("args, words", [
    ([], "no bot command"),
    (["--only", "nope", "--", "true"], "unknown check"),
    (["--only", "lobby-ready", "--", "true"], "lobby-ready: not a check of per-game mode (add --lobby)"),
    (["--lobby", "--only", "exit", "--", "true"], "exit: not a check of lobby mode (run without --lobby)"),
    (["--rules", "colour=red", "--", "true"], "unknown rule option"),
    (["--", "/nonexistent/bot"], "cannot start the bot"),
    (["--", "{nosuch}"], "unknown placeholder {nosuch}"),
    (["--lobby", "--", "{nosuch}"], "unknown placeholder {nosuch}"),
])
def test_usage_errors_exit_2_with_one_line(args: list[str], words: str) -> None:
    """The usage line and the error line, nothing after them (an unknown placeholder was followed by an
    "Event loop is closed" traceback of the scripted referee's server, started before the bot)."""
    proc = subprocess.run([sys.executable, "-m", "sdk.conformance", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert words in lines[-1] and len(lines) <= 2 and lines[0].startswith("usage:"), proc.stderr


@pytest.mark.parametrize("args", [["--list"], ["--only", "join", "--", sys.executable, "-c", DIES_AT_START]],
                         ids=["list", "table"])
def test_output_into_a_closed_pipe_ends_quietly(args: list[str]) -> None:
    """``allfours-conformance --list | head`` ended in a BrokenPipeError traceback once ``head`` had gone:
    now it stops quietly with status 1, as the table did already (rich's own handling) and as the Python
    docs' note on SIGPIPE does. The reader is gone before the first line is written, so the write always
    fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "sdk.conformance", *args], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")


@pytest.mark.slow
def test_memory_is_sampled_at_the_hello_not_only_every_100_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bot that takes 300 MiB before its Hello and exits right after a short match may live between two
    of the watcher's 100 ms samples on a busy machine (``--break limits`` passed in a full CI run): the
    peak is also taken at the Hello, so the ``limits`` check sees it without the periodic samples."""
    from sdk.conformance import launch

    async def no_periodic_samples(pgid: int, log: object) -> None:
        await asyncio.Event().wait()  # the watcher never samples: only the fixed moments remain

    monkeypatch.setattr(launch, "watch_memory", no_periodic_samples)
    scenario = build_scenarios()["basic"]
    bot = (sys.executable, "-m", "tests.bots.broken", "--break", "limits")
    log = asyncio.run(launch.run_scenario(scenario, bot, Limits()))
    assert log.hellos and log.match_end_sent, log.failure
    assert log.peak_rss_mib >= 300, log.peak_rss_mib


#: A per-game bot written without the SDK (raw bytes on the stream): at its first request it sends 3 bytes
#: that are not a PlayRequest (with the argument ``card``: a Decision playing card "ZZ"), then answers every
#: request with its first legal action (after an ActionRejected naming a request: its last one). No braces in
#: it: the suite expands {placeholders} in a command.
GARBAGE_BOT = """
import os, queue, sys, grpc
from allfours.v1 import referee_pb2 as pb

out = queue.Queue()
out.put(pb.PlayRequest(hello=pb.Hello(ticket=os.environ["ALLFOURS_TICKET"], protocol_version="allfours.v1",
                                      bot_name="garbage")).SerializeToString())

def requests():
    while (b := out.get()) is not None:
        yield b

play = grpc.insecure_channel(os.environ["ALLFOURS_REFEREE"]).stream_stream(
    "/allfours.v1.RefereeService/Play", request_serializer=lambda b: b,
    response_deserializer=pb.PlayResponse.FromString)
answered, legal_of = set(), dict()
for resp in play(requests()):
    if resp.HasField("decision_request") and resp.decision_request.seq not in answered:
        r = resp.decision_request
        if not answered:
            if sys.argv[1:] == ["card"]:  # a malformed Decision: no such card
                out.put(pb.PlayRequest(decision=pb.Decision(seq=r.seq, action=pb.Action(
                    kind=pb.ACTION_KIND_PLAY, card="ZZ"))).SerializeToString())
            else:
                out.put(b"\\x0a\\xff\\x01")
        answered.add(r.seq)
        legal_of[r.seq] = list(r.legal_actions)
        out.put(pb.PlayRequest(decision=pb.Decision(seq=r.seq, action=r.legal_actions[0])).SerializeToString())
    elif resp.HasField("action_rejected") and resp.action_rejected.seq in legal_of:  # retry: another action
        seq = resp.action_rejected.seq
        out.put(pb.PlayRequest(decision=pb.Decision(seq=seq, action=legal_of[seq][-1])).SerializeToString())
    elif resp.HasField("match_end"):
        out.put(None)
"""


@pytest.mark.slow
def test_bytes_that_are_not_a_play_request_are_rejected_as_the_referee_does_and_the_match_goes_on() -> None:
    """A bot in another language that sends undecodable bytes: the real referee answers ActionRejected
    (REASON_PROTOCOL_ERROR, one line naming their size) and plays on. The scripted referee had gRPC's plain
    decoder: the bytes ended its reading of the stream as if the bot had gone, the bot was told nothing and
    every request after them went unanswered (each check's run took minutes, a whole suite looked hung)."""
    from sdk.conformance import launch

    scenario = build_scenarios()["basic"]
    log = asyncio.run(launch.run_scenario(scenario, (sys.executable, "-c", GARBAGE_BOT), Limits()))
    assert log.match_end_sent and not log.failure, (log.failure, log.disconnects, log.stderr_tail)
    assert not log.disconnects, log.disconnects
    # seq 0, as from the real referee: bytes that do not decode name no request (nor does an empty message)
    assert log.rejections[0] == (0, "the message is not a PlayRequest (3 bytes that do not decode as "
                                    "allfours.v1.PlayRequest)"), log.rejections
    assert not any(r.timed_out for r in log.requests), [r.seq for r in log.requests if r.timed_out]


#: A per-game bot without the SDK that leaves its first stream at its first request (unanswered) and comes
#: back at once with the same ticket, then answers every request with its first legal action and comes back
#: again whenever its stream breaks.
REJOINING_BOT = """
import os, queue, grpc
from allfours.v1 import referee_pb2 as pb

hello = pb.PlayRequest(hello=pb.Hello(ticket=os.environ["ALLFOURS_TICKET"], protocol_version="allfours.v1",
                                      bot_name="rejoiner"))
play = grpc.insecure_channel(os.environ["ALLFOURS_REFEREE"]).stream_stream(
    "/allfours.v1.RefereeService/Play", request_serializer=pb.PlayRequest.SerializeToString,
    response_deserializer=pb.PlayResponse.FromString)
left_once = False
while True:
    out = queue.Queue()
    out.put(hello)
    def requests(out=out):
        while (m := out.get()) is not None:
            yield m
    call = play(requests())
    answered = set()
    try:
        for resp in call:
            if resp.HasField("decision_request"):
                r = resp.decision_request
                if not left_once:
                    left_once = True
                    call.cancel()
                    break
                if r.seq not in answered:
                    answered.add(r.seq)
                    out.put(pb.PlayRequest(decision=pb.Decision(seq=r.seq, action=r.legal_actions[0])))
            elif resp.HasField("match_end"):
                out.put(None)
                raise SystemExit(0)
    except grpc.RpcError:
        pass
    out.put(None)
"""


@pytest.mark.slow
def test_resume_judges_the_stream_opened_after_the_drop_not_the_bots_own_earlier_reconnect() -> None:
    """A bot that had already come back once on its own (its stream 2) and, after the staged drop of that
    stream, answered the re-sent request on its stream 3 was failed: the check looked for the answer on
    the first stream after stream 1 ("reconnected but did not answer the re-sent seq 10 on the new stream")."""
    out = run_suite(sys.executable, "-c", REJOINING_BOT, extra=("--only", "resume"), timeout=120)
    dids = {c["check"]: c["did"] for c in out["checks"]}  # type: ignore[attr-defined, index]
    assert statuses(out) == {"resume": "pass"}, dids


@pytest.mark.slow
@pytest.mark.parametrize(("how", "what"), [
    ("bytes", "the message is not a PlayRequest (3 bytes that do not decode as allfours.v1.PlayRequest)"),
    ("card", "malformed action: action.card: not a card: 'ZZ' (expected rank+suit such as 'TH')")])
def test_a_malformed_first_answer_fails_like_an_illegal_one(how: str, what: str) -> None:
    """The real referee forfeits a seat at its 3rd malformed message (max_protocol_errors), so a bot that
    sends one before each answer loses every match; the suite passed it on every check. A malformed
    message while a request is pending is now that request's first answer, and not a legal one."""
    out = run_suite(sys.executable, "-c", GARBAGE_BOT, how, extra=("--only", "phases", "--only", "players-2"),
                    timeout=120)
    dids = {c["check"]: c["did"] for c in out["checks"]}  # type: ignore[attr-defined, index]
    assert statuses(out) == {"phases": "fail", "players-2": "fail"}, dids
    assert dids["players-2"] == f"seq 1 (beg): sent a malformed message ({what}), a protocol error", dids


@pytest.mark.slow
def test_retry_is_judged_on_the_staged_rejection_not_on_one_of_undecodable_bytes() -> None:
    """A rejection of undecodable bytes carries seq 0 (it names no request, as from the real referee); the
    retry check took the first rejection's seq and, a bot's garbage coming before the staged rejection,
    said "no new answer to seq 0 after ActionRejected" of a bot that did retry the staged one."""
    out = run_suite(sys.executable, "-c", GARBAGE_BOT, "bytes", extra=("--only", "retry"), timeout=120)
    dids = {c["check"]: c["did"] for c in out["checks"]}  # type: ignore[attr-defined, index]
    assert statuses(out) == {"retry": "pass"}, dids


def test_the_bots_own_text_is_printed_as_it_is_not_read_as_rich_markup() -> None:
    """What a bot sent (its Hello's protocol_version, quoted in a row) and what it printed (a lobby run's
    ``stopped:`` line and the per-scenario progress line quote its last output) is the bot's text, not
    rich markup: ``[pybot] usage: …`` lost its ``[pybot]``, and a closing tag such as ``[/x]`` raised
    ``MarkupError`` and ended the suite with a traceback instead of the table."""
    from rich.console import Console

    from sdk.conformance.cli import Outcome, _progress, print_table

    console = Console(record=True, width=300)
    did = "Hello carried protocol_version '[/x] [pybot] [bold]v1[/bold]'"
    failure = ("the worker's process ended with status 2 before it registered at the lobby "
               "(its last output: '[/nope] [pybot] usage')")
    print_table([Outcome("join", "fail", "first message a Hello", did, "basic")], console, Mode.LOBBY, failure, {})
    log = RunLog("basic", "t")
    log.failure = failure
    _progress(console)(log)
    text = console.export_text()
    assert "[/x] [pybot] [bold]v1[/bold]" in text, text
    assert "stopped: " + failure in text, text
    assert "scenario basic: 0 requests, exit None, 0.0 s — " + failure in text, text


@pytest.mark.slow
def test_a_bot_whose_own_code_fails_is_told_so_though_its_protocol_passes() -> None:
    """docs/bot-authors.md promised a Python author that a failed check points at ``act``; but the SDK plays
    a fallback for an ``act`` that raises, so a bot that raised at every decision passed all 20 checks and
    heard nothing. The suite now reads the failures the bot reports itself (``Decision.counts``): a line
    under the table and ``bot_counts`` in the JSON. The checks judge the protocol, as before."""
    newcomer = (sys.executable, "-m", "sdk.run", "tests.bots.newcomer:MaxCardBot", "--log-level", "error")
    out = run_suite(*newcomer, extra=("--only", "seq-echo", "--only", "multi-game"))
    assert statuses(out) == {"seq-echo": "pass", "multi-game": "pass"}
    counts = out["bot_counts"]
    assert isinstance(counts, dict) and counts["exceptions"] == counts["fallbacks"] > 0, counts
    assert counts["scenarios"] == ["basic", "multi-game"], counts
    table = subprocess.run([sys.executable, "-m", "sdk.conformance", "--only", "seq-echo", "--", *newcomer], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert table.returncode == 0, table.stderr
    note = [x for x in table.stdout.splitlines() if "its own code failed" in x]
    assert len(note) == 1 and "exceptions" in note[0] and "fallback" in note[0], table.stdout
    clean = run_suite(sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", extra=("--only", "seq-echo"))
    assert clean["bot_counts"] == {"exceptions": 0, "fallbacks": 0, "scenarios": []}


@pytest.mark.slow
def test_a_bot_that_repeats_the_move_refused_on_purpose_is_not_told_its_code_failed() -> None:
    """Seen entering a competition by docs/competition.md: the sample random bot, checked locally, was told
    "note: its own code failed: … 1 fallback moves … (retry)". The retry scenario refuses a legal move on
    purpose; a bot asked again that repeats it (any deterministic one) gets the SDK's other legal move, which
    it counts as a fallback, and no failure of the bot's. That one is not counted; others are."""
    clean = run_suite(sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", extra=("--only", "retry"))
    assert statuses(clean) == {"retry": "pass"}
    assert clean["bot_counts"] == {"exceptions": 0, "fallbacks": 0, "scenarios": []}, clean["bot_counts"]
