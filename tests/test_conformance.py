"""The conformance suite (sdk/conformance) end to end: real bot processes over real gRPC streams.

- every sample bot (random, heuristic, Node.js, C++) passes every check;
- a bot with one deliberate fault per check (tests/bots/broken.py) fails exactly that check;
- in lobby mode (one long-lived worker, a scripted lobby) the Python SDK and Node.js workers pass
  every check, and the two lobby faults fail exactly their checks;
- the scripted decks stage what their checks need (checked through the engine);
- usage errors are one line and exit status 2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from referee.rules import Beg, Phase, RunPack, apply, deal, new_game
from sdk.conformance.checks import CHECKS, LOBBY_ONLY, PER_GAME_ONLY
from sdk.conformance.cli import parse_rules, selected_checks
from sdk.conformance.referee import with_unknown_field
from sdk.conformance.scenarios import build_scenarios
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
ALL = [c.name for c in CHECKS]
#: What each mode runs: every check but the other mode's own (those are skipped with a reason).
PER_GAME = {c: ("skip" if c in LOBBY_ONLY else "pass") for c in ALL}
LOBBY = {c: ("skip" if c in PER_GAME_ONLY else "pass") for c in ALL}
#: The broken bot's memory fault holds 300 MiB; the suite runs it with this limit.
MEMORY_LIMIT_MIB = "200"


def run_suite(*bot: str, extra: tuple[str, ...] = ()) -> dict[str, object]:
    """``python -m sdk.conformance --json … -- BOT…``: the parsed JSON (the exit status is checked)."""
    proc = subprocess.run([sys.executable, "-m", "sdk.conformance", "--json", *extra, "--", *bot], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
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


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLE_BOTS))
def test_sample_bot_passes_every_check(name: str) -> None:
    if name == "nodejs":
        require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
                "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    if name == "cpp":
        require((ROOT / SAMPLE_BOTS["cpp"][0]).is_file(),
                "the C++ bot is not built (scripts/setup.sh runs sample_bots/cpp/build.sh)")
    out = run_suite(*SAMPLE_BOTS[name])
    assert statuses(out) == PER_GAME, json.dumps(out, indent=1)


@pytest.mark.slow
def test_the_correct_broken_bot_passes_every_check() -> None:
    """The broken bot without a fault is a correct bot: the faults below are its only difference."""
    out = run_suite(sys.executable, "-m", "tests.bots.broken", extra=("--memory-limit", MEMORY_LIMIT_MIB))
    assert statuses(out) == PER_GAME, json.dumps(out, indent=1)


@pytest.mark.slow
def test_a_bot_broken_for_one_check_fails_exactly_that_check() -> None:
    """One suite per fault of tests/bots/broken.py, three suites at a time (each waits on its bot more
    than it computes); every mismatch is reported at once."""
    def one(check: str) -> tuple[str, list[str], str]:
        out = run_suite(sys.executable, "-m", "tests.bots.broken", "--break", check,
                        extra=("--memory-limit", MEMORY_LIMIT_MIB))
        failed = sorted(c for c, s in statuses(out).items() if s != "pass")
        return check, failed, str(out["summary"])

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(one, [c for c, status in PER_GAME.items() if status == "pass"]))
    wrong = [f"--break {check}: failed {failed}" for check, failed, _ in results if failed != [check]]
    assert not wrong, "\n".join(wrong)
    skipped = len(LOBBY_ONLY)
    for check, _, text in results:
        assert text == f"conformance: {len(ALL) - skipped - 1} passed, 1 failed ({check}), {skipped} skipped"


LOBBY_BOTS = {"random": SAMPLE_BOTS["random"], "nodejs": SAMPLE_BOTS["nodejs"],
              "broken-but-correct": (sys.executable, "-m", "tests.bots.broken")}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOBBY_BOTS))
def test_workers_pass_every_check_in_lobby_mode(name: str) -> None:
    """One worker process plays every scenario as an Assignment from the scripted lobby."""
    if name == "nodejs":
        require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
                "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    out = run_suite(*LOBBY_BOTS[name], extra=("--lobby",))
    assert statuses(out) == LOBBY, json.dumps(out, indent=1)


@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(LOBBY_ONLY))
def test_a_worker_broken_for_a_lobby_check_fails_exactly_that_check(check: str) -> None:
    out = run_suite(sys.executable, "-m", "tests.bots.broken", "--break", check, extra=("--lobby",))
    failed = sorted(c for c, s in statuses(out).items() if s == "fail")
    assert failed == [check], json.dumps(out, indent=1)


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
    chosen, skips = selected_checks([], 4, lobby=True)
    assert {s.check for s in skips} == set(PER_GAME_ONLY) and not set(PER_GAME_ONLY) & {c.name for c in chosen}


@pytest.mark.parametrize("args, words", [
    ([], "no bot command"),
    (["--only", "nope", "--", "true"], "unknown check"),
    (["--rules", "colour=red", "--", "true"], "unknown rule option"),
    (["--", "/nonexistent/bot"], "cannot start the bot"),
])
def test_usage_errors_exit_2_with_one_line(args: list[str], words: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "sdk.conformance", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert words in proc.stderr.strip().splitlines()[-1]
