"""End to end: `arena run` over real gRPC (embedded referee, one bot process per seat).

Every record the arena writes is audited with ``python -m referee.verify``; a hanging bot loses on
``timeout``; a fixed master seed replays the same games; `arena run` errors are one line, no traceback.
External and several referees: tests/test_arena_referees.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from referee.dealing import verify_commitment
from tests.bots.nasty import live_with_tag
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def arena(
    *args: str, timeout: float = 240, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `arena run ARGS --no-progress` as a real process; returns it finished (output captured).

    ``env`` is added to the environment (a ``None`` value removes that variable)."""
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "run", *args, "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in full.items() if v is not None},
    )


def rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]


def verify_records(out: Path, games: list[dict]) -> None:
    """`python -m referee.verify` on every record file the arena wrote (all at once); each must say OK
    for its own match, and there must be exactly one record per stored game."""
    files = sorted((out / "records").glob("*.jsonl"))
    assert sorted(out / g["record"] for g in games) == files
    procs = [
        (g, subprocess.Popen([sys.executable, "-m", "referee.verify", str(out / g["record"])], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for g in games
    ]
    for g, p in procs:
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0 and stdout.startswith(f"OK match {g['match_id']}:"), (g["game_id"], stdout, stderr)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The error `arena run` printed: exactly one line on stderr, and no traceback anywhere."""
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_small_tournament_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "small"
    done = arena("examples/small.toml", "--output", str(out), "--bootstrap", "200", env={"COLUMNS": None})
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(out)
    assert len(games) == 3 * 4 and len({g["game_id"] for g in games}) == 12
    for g in games:
        assert g["winner"] in (0, 1) and max(g["scores"]) >= 7, g  # target 7, played to the end
        assert g["terminations"] == ["normal", "normal"], g
        assert g["reasons"] and (out / g["record"]).is_file()
        assert g["match_id"] in (out / g["record"]).read_text()
    verify_records(out, games)
    ratings = json.loads((out / "ratings.json").read_text())
    assert set(ratings["ratings"]) == {"random", "heuristic", "instant"}
    assert all(r["games"] == 8 for r in ratings["ratings"].values())
    committed = json.loads((out / "commitment.json").read_text())["master_seed_sha256"]
    assert verify_commitment(bytes.fromhex(ratings["tournament"]["master_seed"]), committed)
    page = (out / "leaderboard.html").read_text()
    assert games[0]["record"] in page and "<svg" in page
    table = [line for line in done.stdout.splitlines() if "│" in line]
    for name, r in ratings["ratings"].items():  # stdout is a pipe: one readable line a bot, not wrapped
        assert sum(name in line and f"[{r['ci'][0]:.0f}, {r['ci'][1]:.0f}]" in line for line in table) == 1, table
    again = arena("examples/small.toml", "--output", str(out), "--bootstrap", "200")
    assert again.returncode == 0 and "12 already played" in again.stdout
    assert rows(out) == games  # a rerun of a finished tournament plays nothing


FAILING = """
[tournament]
name = "failing"
players = 4
games_per_pairing = 2
concurrency = 3
output = "out"
[tournament.time_control]
# Each bot starts as two Python processes under the subreaper shepherd (no writable cgroup v2):
# 3 s was not enough for 12 of them at once on a busy 2-core machine.
join_ms = 10000
grace_ms = 300
[[bots]]
name = "good"
command = ["{python}", "-m", "arena.testing.instant_bot"]
[[bots]]
name = "crasher"
command = ["{python}", "-m", "arena.testing.instant_bot", "--mode", "crash", "--after", "1"]
[[bots]]
name = "missing"
command = ["/nonexistent/bot-binary"]
"""


def test_a_broken_bot_stops_the_run_before_the_first_game(tmp_path: Path) -> None:
    """A bot whose command does not exist fails its check (it must start and join a practice match):
    the run stops with one line naming it, before any game is played."""
    cfg = tmp_path / "failing.toml"
    cfg.write_text(FAILING)
    done = arena(str(cfg), "--bootstrap", "0", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert one_line_error(done) == (
        "error: bot 'missing' failed its check before the first game: could not start '/nonexistent/bot-binary': "
        "No such file or directory (fix it, or pass --skip-broken)"
    )
    assert not (tmp_path / "out" / "games.jsonl").exists()
    assert json.dumps(sorted((tmp_path / "out" / "logs").glob("failing-*"))) == "[]"


#: A bot that counts the bots alive beside it (itself included) before it plays as the instant bot: each
#: holds an exclusive lock on its own file in ``sys.argv[1]`` while it lives (the kernel lets go when it
#: dies), and a file no one can lock is a bot alive (no braces: the config would read them as
#: placeholders). It waits up to 1.5 s for a third (in a 2-player tournament of concurrency 1, never more
#: than two are due at once), and writes the most it saw to ``seen-<pid>``.
COUNTING_BOT = r"""
import fcntl, os, runpy, sys, time
folder = sys.argv.pop(1)
me = open(os.path.join(folder, "slot-%d" % os.getpid()), "w")
fcntl.flock(me, fcntl.LOCK_EX)
def alive():
    n = 0
    for name in os.listdir(folder):
        if name.startswith("slot-"):
            with open(os.path.join(folder, name)) as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: another bot's look is no bot
                except BlockingIOError:
                    n += 1
    return n
most, end = alive(), time.monotonic() + 1.5
while most < 3 and time.monotonic() < end:
    time.sleep(0.05)
    most = max(most, alive())
with open(os.path.join(folder, "seen-%d" % os.getpid()), "w") as f:
    f.write(str(most))
runpy.run_module("arena.testing.instant_bot", run_name="__main__")
"""


def test_bots_are_checked_no_more_at_once_than_games_are_played(tmp_path: Path) -> None:
    """The check before the first game starts every seat of a bot (a practice match): every bot at once,
    it started every seat of the whole field together, and a league of a hundred container bots, started
    again, would see bots that were fine miss ``join_ms``. At most ``concurrency`` bots are checked at
    once: here 1, so no more than one bot's two seats (then one game's two) are ever alive together."""
    folder = tmp_path / "alive"
    folder.mkdir()
    command = f'["{{python}}", "-c", {json.dumps(COUNTING_BOT)}, "{folder}"]'
    bots = "".join(f'[[bots]]\nname = "b{k}"\nsandbox = "none"\ncommand = {command}\n' for k in range(3))
    cfg = tmp_path / "t.toml"
    cfg.write_text('[tournament]\nname = "t"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 1\noutput = "out"\n'
                   f"[tournament.time_control]\njoin_ms = 20000\n{bots}")
    done = arena(str(cfg), "--bootstrap", "0", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [int(f.read_text()) for f in sorted(folder.glob("seen-*"), key=lambda f: f.stat().st_mtime_ns)]
    assert len(seen) == 3 * 2 + 6 * 2 and max(seen) == 2, seen  # 3 checks and 6 games, two seats each


def test_bot_failures_are_results(tmp_path: Path) -> None:
    """With --skip-broken the bot that fails its check forfeits its games at once (no join timeout);
    a bot that crashes mid-game loses that game on disconnect."""
    cfg = tmp_path / "failing.toml"
    cfg.write_text(FAILING)
    done = arena(str(cfg), "--bootstrap", "0", "--skip-broken", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: bot 'missing' failed its check: could not start '/nonexistent/bot-binary'" in done.stdout
    assert "its 4 games are forfeited (--skip-broken)" in done.stdout
    games = rows(tmp_path / "out")
    assert len(games) == 6
    for g in games:
        sides = (g["a"], g["b"])
        reasons = " | ".join(g["reasons"])
        loser = sides[1 - g["winner"]]
        if "missing" in sides:
            assert loser == "missing"
            assert reasons.startswith(
                f"side {sides.index('missing')} (missing) forfeited: the bot failed its check before the first "
                "game: could not start '/nonexistent/bot-binary': No such file or directory"
            ), reasons
            assert g["record"] is None and g["scores"] == [0, 0], g  # no point was played
            assert g["terminations"] == ["not_started" if (g["a"], g["b"])[seat % 2] == "missing"
                                         else "other_seat_forfeited" for seat in range(4)], g
        else:
            assert loser == "crasher"
            assert "disconnect" in reasons and "exited with status 1" in reasons
    ratings = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert ratings["ranking"] == ["good", "crasher", "missing"]
    # the matches played (the crasher's forfeits included) are audited; the check's forfeits had none
    verify_records(tmp_path / "out", [g for g in games if g["record"] is not None])


CRASH_BEFORE_DISCONNECT = """
[tournament]
name = "crashing"
players = 2
games_per_pairing = 2
concurrency = 2
output = "out"
[tournament.time_control]
join_ms = 10000
decision_ms = 200
max_strikes = 2
grace_ms = 60000
[[bots]]
name = "good"
command = ["{python}", "-m", "arena.testing.instant_bot"]
[[bots]]
name = "crasher"
command = ["{python}", "-m", "arena.testing.instant_bot", "--mode", "crash", "--after", "1"]
"""


def test_a_crash_reads_crash_whatever_the_time_control(tmp_path: Path) -> None:
    """A process that crashes mid-game while strikes come faster than the reconnection grace: the
    referee sees a timeout first, the arena says what happened: ``crash`` with its exit status, first
    in the seat's reason (issue 24, "Reasons come first")."""
    cfg = tmp_path / "crashing.toml"
    cfg.write_text(CRASH_BEFORE_DISCONNECT)
    done = arena(str(cfg), "--bootstrap", "0", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(tmp_path / "out")
    assert len(games) == 2
    for g in games:
        crasher = (g["a"], g["b"]).index("crasher")
        assert g["winner"] == 1 - crasher, g
        assert g["terminations"][crasher] == "crash" and g["terminations"][1 - crasher] == "other_seat_forfeited", g
        seat_line = next(r for r in g["reasons"] if r.startswith(f"seat {crasher} (crasher)"))
        assert seat_line.startswith(f"seat {crasher} (crasher) crash: process exited with status 1 before the match "
                                    "ended"), seat_line
        assert "the referee saw timeout" in seat_line, seat_line
        assert g["failures"][crasher]["crashes"] == 1, g
    verify_records(tmp_path / "out", games)


HANGING = """
[tournament]
name = "hanging"
players = 2
games_per_pairing = 2
concurrency = 2
output = "out"
[tournament.rules]
target = 7
[tournament.time_control]
decision_ms = 250             # short: the hanging bot's two strikes cost half a second
max_strikes = 2
join_ms = 10000
grace_ms = 300
[[bots]]
name = "good"
command = ["{python}", "-m", "arena.testing.instant_bot"]
[[bots]]
name = "hang"
command = ["{python}", "-m", "arena.testing.instant_bot", "--mode", "hang", "--after", "2"]
[[bots]]
name = "other"
command = ["{python}", "-m", "arena.testing.instant_bot"]
"""


def test_hanging_bot_loses_on_timeout(tmp_path: Path) -> None:
    """A bot that stops answering (but stays connected) forfeits on `timeout`; the tournament finishes."""
    cfg = tmp_path / "hanging.toml"
    cfg.write_text(HANGING)
    done = arena(str(cfg), "--bootstrap", "0", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    games = rows(out)
    assert len(games) == 6
    page = (out / "leaderboard.html").read_text()
    hung = [g for g in games if "hang" in (g["a"], g["b"])]
    assert len(hung) == 4
    for g in hung:
        side = (g["a"], g["b"]).index("hang")
        assert g["winner"] == 1 - side, g
        # 2 players: seat k is side k; the hanging seat's termination is timeout, the other's normal
        assert g["terminations"][side] == "timeout" and g["terminations"][1 - side] == "other_seat_forfeited", g
        reason = f"seat {side} (hang) timeout: seat {side} timed out 2 times"
        assert reason in g["reasons"] and f"side {side} (hang) forfeited" in g["reasons"], g
        assert f"{g['game_id']}: {reason}" in done.stdout  # reported as it happens (--no-progress)
        assert reason in page and g["game_id"] in page
    for g in games:
        if g not in hung:
            assert g["terminations"] == ["normal", "normal"] and g["winner"] in (0, 1), g
    ratings = json.loads((out / "ratings.json").read_text())
    assert ratings["ranking"][-1] == "hang" and ratings["ratings"]["hang"]["score"] == 0
    verify_records(out, games)


# "envdump" writes its whole environment (JSON) to its log, then plays; "quitter" is the command the
# config docs once showed (sample_bots.heuristic has no __main__: it exits 0 at once); "noisy" dies
# before joining with a message on stderr.
EARLY = """
[tournament]
name = "early"
players = 2
games_per_pairing = 2
concurrency = 6
output = "out"
admin_token_env = "CUP_ADMIN_TOKEN"
[tournament.rules]
target = 7
[tournament.time_control]
join_ms = 15000
[[bots]]
name = "envdump"
command = ["{python}", "-c", @ENVDUMP@]
[[bots]]
name = "quitter"
command = ["{python}", "-m", "sample_bots.heuristic"]
[[bots]]
name = "noisy"
command = ["{python}", "-c", "import sys; print('loading model', file=sys.stderr); sys.exit('boom: no weights')"]
[[bots]]
name = "instant"
command = ["{python}", "-m", "arena.testing.instant_bot"]
""".replace("@ENVDUMP@", json.dumps(
    "import json, os, sys; print(json.dumps(dict(os.environ)), file=sys.stderr); "
    "from arena.testing.instant_bot import main; sys.exit(main([]))"
))


def test_bots_never_see_admin_tokens_and_early_exits_are_explained(tmp_path: Path) -> None:
    cfg = tmp_path / "early.toml"
    cfg.write_text(EARLY)
    secrets = {"ALLFOURS_ADMIN_TOKEN": "adm-default-7f3a", "CUP_ADMIN_TOKEN": "adm-configured-9c1e",
               "COPY_OF_TOKEN": "adm-configured-9c1e",
               # a host's own credential: before, everything but the tokens reached a sandboxed bot
               "AWS_SECRET_ACCESS_KEY": "host-cloud-3b7d"}
    done = arena(str(cfg), "--bootstrap", "0", "--skip-broken", timeout=120, env=secrets)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    games = rows(out)
    assert len(games) == 12
    check = "forfeited: the bot failed its check before the first game: its process exited with status"
    logs = list((out / "logs" / "check" / "bot0").glob("seat*.log"))  # envdump's check: both seats
    for g in games:
        if g["record"] is not None:  # only envdump v instant is played: the other two bots are broken
            assert sorted((g["a"], g["b"])) == ["envdump", "instant"], g
            logs.append(out / "logs" / g["game_id"] / f"seat{(g['a'], g['b']).index('envdump')}.log")
        reasons = " | ".join(g["reasons"])
        for side, name in enumerate((g["a"], g["b"])):
            if name == "quitter":
                assert f"side {side} (quitter) {check} 0 before joining" in reasons, reasons
            if name == "noisy":
                assert f"side {side} (noisy) {check} 1 before joining" in reasons, reasons
                assert "(last output: loading model | boom: no weights)" in reasons, reasons
    assert len(logs) == 4
    for log in logs:
        env = json.loads(log.read_text().splitlines()[0])
        assert env["ALLFOURS_TICKET"] and env["ALLFOURS_REFEREE"] and env["PATH"] and env["HOME"] == "/tmp"
        assert not set(secrets) & set(env), sorted(set(secrets) & set(env))
        assert not set(secrets.values()) & set(env.values())
    # the output folder and the database (it holds the master seed) are the arena user's alone
    assert (out.stat().st_mode & 0o777) == 0o700
    assert ((out / "arena.sqlite").stat().st_mode & 0o777) == 0o600


SEEDED = """
[tournament]
name = "seeded"
players = 2
games_per_pairing = 4
concurrency = 2
master_seed = "c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4"
[tournament.rules]
target = 7
[tournament.time_control]
decision_ms = 10000           # generous: no decision may time out under load (that would change a game)
join_ms = 30000
[[bots]]
name = "heuristic"
command = ["{python}", "-m", "sdk.run", "sample_bots.heuristic:HeuristicBot", "--log-level", "warning"]
[[bots]]
name = "instant"
command = ["{python}", "-m", "arena.testing.instant_bot"]
[[bots]]
name = "random"
command = ["{python}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"]
"""


def _actions(out: Path, game: dict) -> list[tuple[int, str]]:
    lines = (out / game["record"]).read_text().splitlines()
    return [(o["seat"], o["action"]) for o in map(json.loads, lines) if o.get("type") == "action"]


@pytest.fixture(scope="module")
def seeded_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same config with a fixed master seed, run twice into two output folders."""
    base = tmp_path_factory.mktemp("seeded")
    cfg = base / "seeded.toml"
    cfg.write_text(SEEDED)
    outs = (base / "run1", base / "run2")
    for out in outs:
        done = arena(str(cfg), "--output", str(out), "--bootstrap", "0")
        assert done.returncode == 0, done.stdout + done.stderr
    return outs


def test_fixed_master_seed_replays_the_same_games(seeded_runs: tuple[Path, Path]) -> None:
    """Same config (master seed fixed) → same schedule, deals and, for deterministic bots, the same
    moves and per-game scores. (heuristic and instant never draw random numbers.)"""
    out1, out2 = seeded_runs
    g1, g2 = rows(out1), rows(out2)
    assert [g["game_id"] for g in g1] == [g["game_id"] for g in g2] and len(g1) == 12
    for a, b in zip(g1, g2, strict=True):
        assert (a["seed"], a["first_dealer"], a["a"], a["b"]) == (b["seed"], b["first_dealer"], b["a"], b["b"])
        assert a["match_id"] != b["match_id"]  # two real runs
    for r in (out1, out2):
        assert json.loads((r / "ratings.json").read_text())["tournament"]["master_seed"] == "c4" * 32
    deterministic = [(a, b) for a, b in zip(g1, g2, strict=True) if "random" not in (a["a"], a["b"])]
    assert len(deterministic) == 4
    for a, b in deterministic:
        assert (a["scores"], a["winner"], a["reasons"]) == (b["scores"], b["winner"], b["reasons"]), a["game_id"]
        assert _actions(out1, a) == _actions(out2, b) and _actions(out1, a)


def test_random_bot_replays_too(seeded_runs: tuple[Path, Path]) -> None:
    """RandomBot draws from ctx.rng, seeded from the match's seed commitment: same master seed, same moves."""
    out1, out2 = seeded_runs
    pairs = [(a, b) for a, b in zip(rows(out1), rows(out2), strict=True) if "random" in (a["a"], a["b"])]
    assert len(pairs) == 8
    assert [_actions(out1, a) for a, _ in pairs] == [_actions(out2, b) for _, b in pairs]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    """Missing config, bad TOML, bad referee arguments: exit status 2 and one clear line, no traceback."""
    missing = one_line_error(arena(str(tmp_path / "nope.toml")))
    assert missing == f"config error: {tmp_path / 'nope.toml'}: cannot read the file: No such file or directory"
    bad = tmp_path / "bad.toml"
    bad.write_text('[tournament]\nname = "x"\nplayers = \n')
    done = arena(str(bad))
    assert done.returncode == 2
    assert one_line_error(done).startswith(f"config error: {bad}: not valid TOML: ") and "line 3" in done.stderr
    latin = tmp_path / "latin.toml"
    latin.write_bytes(FAILING.replace('name = "failing"', 'name = "f\u00e9"').encode("latin-1"))
    done = arena(str(latin))
    assert done.returncode == 2
    assert one_line_error(done).startswith(f"config error: {latin}: cannot read the file: not UTF-8 text")
    for old, new, key in [
        ("grace_ms = 300", "decision_ms = 99999999999", "tournament.time_control.decision_ms"),
        ('"{python}", "-m", "arena.testing.instant_bot"]', '"{pyhton}", "-m", "arena.testing.instant_bot"]',
         "bots[0].command[0]"),
        ('command = ["/nonexistent/bot-binary"]', 'command = ["true"]\ncwd = "out/bot"', "bots[2].cwd"),
    ]:
        typo = tmp_path / "typo.toml"
        typo.write_text(FAILING.replace(old, new))
        done = arena(str(typo))
        assert done.returncode == 2 and one_line_error(done).startswith(f"config error: {typo}: {key}: "), done.stderr
    good = tmp_path / "good.toml"
    good.write_text(FAILING)
    for args, expected in [
        (["--referee", "127.0.0.1"], "error: --referee '127.0.0.1': must be host:port"),
        (["--referee", "127.0.0.1:1"], "error: external referees need their admin token: pass --admin-token or set"),
    ]:
        done = arena(str(good), *args, env={"ALLFOURS_ADMIN_TOKEN": ""})
        assert done.returncode == 2 and one_line_error(done).startswith(expected), done.stderr
    assert not (tmp_path / "out").exists()  # nothing was written for any of them


NASTY = """
[tournament]
name = "nasty"
players = 2
games_per_pairing = 20
concurrency = 2
bot_log_bytes = 65536
output = "out"
[tournament.rules]
target = 3
[[bots]]
name = "nasty"
command = ["{python}", "-m", "tests.bots.nasty", "TAG", "8"]
[[bots]]
name = "instant"
command = ["{python}", "-m", "arena.testing.instant_bot"]
"""


def test_nothing_a_bot_starts_outlives_its_game_and_its_log_is_capped(tmp_path: Path) -> None:
    """20 games against a bot that starts a plain child, a setsid child and a double-forked daemon
    each game, and writes 8 MiB: after the run no such process is left, and each of its logs holds
    64 KiB and says it was truncated."""
    import signal
    import uuid

    tag = f"nasty-{uuid.uuid4().hex}"
    cfg = tmp_path / "nasty.toml"
    cfg.write_text(NASTY.replace("TAG", tag))
    try:
        done = arena(str(cfg), "--bootstrap", "0", timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        time.sleep(0.5)
        leftovers = live_with_tag(tag + "-child")
        assert leftovers == [], f"{len(leftovers)} processes outlived their games"
    finally:
        for pid in live_with_tag(tag):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    out = tmp_path / "out"
    games = rows(out)
    assert len(games) == 20 and all(g["terminations"] == ["normal", "normal"] for g in games), games
    marker = b"\n[arena: output truncated at 65536 bytes; the rest is discarded]\n"
    for g in games:
        seat = [g["a"], g["b"]].index("nasty")
        log = (out / "logs" / g["game_id"] / f"seat{seat}.log").read_bytes()
        assert log.startswith(b"x" * 65536 + marker), log[65530:65700]
        assert log.endswith(f"[arena: {8 * 2**20 - 65536} bytes discarded]\n".encode()), log[-200:]


FAILURES = """
[tournament]
name = "failures"
players = 2
games_per_pairing = 2
concurrency = 3
output = "out"
[tournament.rules]
target = 7                    # above a kick's 3 points: every seat acts in every game
[tournament.time_control]
grace_ms = 300
[[bots]]
name = "newcomer"
command = ["{python}", "-m", "sdk.run", "tests.bots.newcomer:MaxCardBot", "--log-level", "error"]
[[bots]]
name = "crasher"
command = ["{python}", "-m", "arena.testing.instant_bot", "--mode", "crash", "--after", "0"]
[[bots]]
name = "instant"
command = ["{python}", "-m", "arena.testing.instant_bot"]
"""


def test_bot_failures_are_counted_and_shown_while_the_progress_bar_runs(tmp_path: Path) -> None:
    """A bot whose act raises every time (the SDK plays fallbacks) and one that crashes: their counts
    reach games.jsonl, ratings.json, the terminal's failures table and the leaderboard; the forfeits
    are printed, and the running tally is on the progress bar, without --no-progress."""
    cfg = tmp_path / "failures.toml"
    cfg.write_text(FAILURES)
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "run", str(cfg), "--bootstrap", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    games = rows(out)
    crasher_games = [g for g in games if "crasher" in (g["a"], g["b"])]
    assert len(crasher_games) == 4
    for g in crasher_games:  # each forfeit printed as it happened, above the bar
        assert f"{g['game_id']}: " in done.stdout and "(crasher) crash: process exited with status 1" in done.stdout
    facts = json.loads((out / "ratings.json").read_text())["tournament"]["failures"]
    newcomer, crasher, instant = facts["newcomer"], facts["crasher"], facts["instant"]
    assert newcomer["exceptions"] == newcomer["fallbacks"] > 4 and newcomer["crashes"] == 0
    assert crasher["crashes"] == crasher["forfeits"] == 4 and crasher["exceptions"] == 0
    assert instant == {k: 0 for k in instant}
    per_seat = sum(g["failures"][(g["a"], g["b"]).index("newcomer")]["exceptions"]
                   for g in games if "newcomer" in (g["a"], g["b"]))
    assert per_seat == newcomer["exceptions"]
    bar = [line for line in done.stdout.splitlines() if line.startswith("games")]
    assert bar and f"{newcomer['exceptions']} exceptions" in bar[-1] and "4 forfeits" in bar[-1], bar
    table = done.stdout[done.stdout.index("bot failures"):]
    assert any(line.split("│")[1:3] == [" newcomer ", "        0 "] for line in table.splitlines()), table
    page = (out / "leaderboard.html").read_text()
    assert "<h2>Bot failures</h2>" in page and f'<td class="loss">{newcomer["exceptions"]}</td>' in page


def test_a_node_stack_trace_shows_its_error_line_in_the_last_output(tmp_path: Path) -> None:
    """issue 24, item 9: the last output of a Node.js bot that dies of a missing module names the cause
    (its first error line), not only the trace's last two lines (``}`` and ``Node.js v20``)."""
    require(shutil.which("node") is not None, "node is not installed (scripts/setup.sh installs it)")
    reasons, _ = _reasons_of_a_broken_bot(tmp_path, """["node", "-e", "require('allfours-no-such-module')"]""")
    assert "(last output: Error: Cannot find module 'allfours-no-such-module' | … | " in reasons, reasons
    assert "Node.js v" in reasons, reasons


def test_a_bots_last_output_cannot_reorder_or_colour_the_pages_text(tmp_path: Path) -> None:
    """A bot's last output goes into its games' stored reasons (games.jsonl, the terminal; the public pages
    leave it out: arena.tournament.result.public_reason). Its control and format characters went too: a
    right-to-left override (U+202E) made the browser draw the rest of the reason backwards (``…(last output:
    ‮boom: tuptuo tsal)`` showed as ``(last output :moob``, a spoofed text), and an escape sequence reached the
    terminal. They are dropped, as from any other text of a bot's (``referee.wire.plain_text``)."""
    reasons, done = _reasons_of_a_broken_bot(
        tmp_path, r"""["sh", "-c", "printf '\\342\\200\\256boom: tuptuo tsal\\n\\033[31mred\\033[0m\\a\\n'; exit 1"]""")
    assert "(last output: boom: tuptuo tsal | [31mred[0m)" in reasons, reasons
    assert not any(unicodedata.category(ch).startswith("C") for ch in reasons + done.stderr.replace("\n", "")), (
        ascii(reasons), ascii(done.stderr))


def test_two_versions_of_one_bot_play_as_name_at_version_entrants(tmp_path: Path) -> None:
    """issue 24, item 9: one name with two versions is two entrants, ``name@version`` (the SPRT's
    candidate and baseline, a league's old and new version); one name twice with one version is refused."""
    head = """[tournament]
name = "versions"
players = 2
games_per_pairing = 2
output = "out"
"""
    bot = '\n[[bots]]\nname = "instant"\nversion = "{v}"\ncommand = ["{{python}}", "-m", "arena.testing.instant_bot"]\n'
    cfg = tmp_path / "v.toml"
    cfg.write_text(head + bot.format(v="1") + bot.format(v="2"))
    done = arena(str(cfg), "--bootstrap", "0", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(tmp_path / "out")
    assert len(games) == 2 and {(g["a"], g["b"]) for g in games} == {("instant@1", "instant@2"),
                                                                      ("instant@2", "instant@1")}
    assert all(g["terminations"] == ["normal", "normal"] for g in games), games
    assert "instant@1" in done.stdout and "instant@2" in done.stdout
    cfg.write_text(head + bot.format(v="1") + bot.format(v="1"))
    again = arena(str(cfg), "--bootstrap", "0", timeout=120)
    assert again.returncode == 2 and "bots[1].name" in again.stderr and "duplicate" in again.stderr, again.stderr


def test_a_busy_lobby_port_is_a_config_error_not_an_unexpected_failure(tmp_path: Path) -> None:
    """`tournament.lobby` on a port another process holds (a running `arena serve`, when the host starts
    `arena competition final` too early): `config error: FILE: tournament.lobby: cannot listen there: …`
    and exit status 2, as docs/arena.md promises for a bad config (before: `error: ConfigError: …
    (--verbose shows the traceback)` and exit status 1)."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = tmp_path / "busy.toml"
        cfg.write_text(f'[tournament]\nname = "busy"\nplayers = 2\noutput = "out"\nlobby = "127.0.0.1:{port}"\n'
                       '[[bots]]\nname = "a"\nremote = true\n[[bots]]\nname = "b"\nremote = true\n')
        done = arena(str(cfg))
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]  # gRPC's core may log its own bind failure above it
    assert done.returncode == 2, done.stderr
    assert last.startswith(f"config error: {cfg}: tournament.lobby: cannot listen there: "), done.stderr


def _reasons_of_a_broken_bot(tmp_path: Path, command: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Play 2 games of a bot run as ``command`` (a TOML array) against the instant bot with
    ``--skip-broken``; returns the games' reasons joined by `` | `` and the run."""
    cfg = tmp_path / "broken.toml"
    cfg.write_text(f"""[tournament]
name = "broken"
players = 2
games_per_pairing = 2
output = "out"
[[bots]]
name = "broken"
command = {command}
[[bots]]
name = "instant"
command = ["{{python}}", "-m", "arena.testing.instant_bot"]
""")
    done = arena(str(cfg), "--bootstrap", "0", "--skip-broken", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return " | ".join(r for g in rows(tmp_path / "out") for r in g["reasons"]), done


BLIND = """
[tournament]
name = "blind"
players = 2
games_per_pairing = 2
output = "out"
@BLIND@
[tournament.rules]
target = 7
[[bots]]
name = "alice"
command = ["{python}", "-m", "sdk.run", "tests.bots.namer:NamerBot", "--log-level", "error"]
[[bots]]
name = "bob"
command = ["{python}", "-m", "sdk.run", "tests.bots.namer:NamerBot", "--log-level", "error"]
"""


@pytest.mark.parametrize("blind", [True, False])
def test_blind_seats_tell_the_bots_no_names(tmp_path: Path, blind: bool) -> None:
    """``tournament.blind_seats = true``: each bot is told "seat 0", "seat 1" (a bot cannot recognise a
    friend to throw games to); false: the entrants' names. The stored games keep the names either way."""
    cfg = tmp_path / "blind.toml"
    cfg.write_text(BLIND.replace("@BLIND@", f"blind_seats = {str(blind).lower()}"))
    done = arena(str(cfg), "--bootstrap", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    games = rows(out)
    assert len(games) == 2 and all(sorted((g["a"], g["b"])) == ["alice", "bob"] for g in games)
    told = []
    for g in games:
        for seat in (0, 1):
            log = (out / "logs" / g["game_id"] / f"seat{seat}.log").read_text()
            told += [json.loads(x.removeprefix("seat_names: "))
                     for x in log.splitlines() if x.startswith("seat_names: ")]
    assert len(told) == 4
    if blind:
        assert told == [["seat 0", "seat 1"]] * 4
    else:
        assert sorted(map(sorted, told)) == [["alice", "bob"]] * 4
