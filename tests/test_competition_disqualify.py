"""`arena competitor disqualify CONFIG NAME --reason TEXT` (docs/competition.md, "Disqualifying a competitor").

Before, a host who found a competitor cheating could only `--revoke` them: their entries went on playing
league games and their games stayed in the ratings; only the final left them out. One real `arena serve`
(an embedded referee, three instant house bots, a competitor's submitted bot built and played in its container)
plays its league; the host disqualifies the competitor while its games are being played: from then on none
of its games starts (but the one in flight), the league plays the others' games to the end, the published
ratings are those of the games no disqualified entrant sat in, the board lists the entry as "disqualified:
REASON" (escaped), the competitor's token is refused with that line (submit, submissions, /me), and the
final leaves them out in one line. In-process, a ladder: a served one chooses no pair of a disqualified entrant
before its reload, and no board (the publication's, the web's) ranks it, even one written before.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.docker_helpers import base_image, docker_client

pytestmark = pytest.mark.docker  # drives dockerd: scripts/test.sh runs it beside the other tests

ROOT = Path(__file__).resolve().parent.parent

GAMES_PER_PAIRING = 16
HOUSE = ("one", "two", "three")
CONFIG = """
[tournament]
name = "dq"
players = 2
games_per_pairing = {gpp}
concurrency = 1
output = "out"
lobby = "127.0.0.1:{port}"
[tournament.rules]
target = 3
[tournament.time_control]
join_ms = 30000
grace_ms = 1000

[competition]
base_python = "{base}"
base_node = "x"
image_prefix = "{prefix}"
checks = ["join", "players-2"]
"""
PREFIX = "allfours-disqualify-test"
BOT = '[[bots]]\nname = "{name}"\nsandbox = "none"\ncommand = ["{{python}}", "-m", "arena.testing.instant_bot"]\n' \
      'cwd = "{root}"\n'
REASON = "colluding <b>entries</b> & a second account"


def arena(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(folder: Path, port: int = 0, base: str = "x") -> Path:
    cfg = folder / "c.toml"
    cfg.write_text(CONFIG.format(gpp=GAMES_PER_PAIRING, port=port, base=base, prefix=PREFIX)
                   + "".join(BOT.format(name=n, root=ROOT) for n in HOUSE))
    return cfg


def sides(out: Path) -> list[tuple[str, str]]:
    """The sides of every stored game, read while the league runs."""
    with contextlib.closing(sqlite3.connect(f"file:{out / 'arena.sqlite'}?mode=ro", uri=True, timeout=10)) as con:
        return [(str(a), str(b)) for a, b in con.execute("SELECT side0, side1 FROM games")]


def wait(what: str, ok: object, proc: subprocess.Popen[str], log: Path, timeout: float = 300) -> None:
    """Wait until ``ok()`` holds (``proc`` alive), else fail naming ``what`` and the log's end."""
    deadline = time.monotonic() + timeout
    while not ok():  # type: ignore[operator]
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"{what}: {log.read_text()[-3000:]}"
        time.sleep(0.2)


def test_a_bad_name_or_a_missing_reason_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    none = arena("competitor", "disqualify", str(cfg), "mal", "--reason", "x")
    assert none.returncode == 2 and not (tmp_path / "out").exists(), none  # a look at nothing makes nothing
    assert none.stderr.startswith("error: no competitor 'mal'") and len(none.stderr.splitlines()) == 1, none.stderr
    assert arena("competitor", "add", str(cfg), "ann").returncode == 0
    for args, said in ((("mal", "--reason", "x"), "no competitor 'mal' (competitors: ann)"),
                       (("ann",), 'give --reason "TEXT"'),
                       (("ann", "--reason", " \n\t"), "--reason: give the reason"),
                       (("ann", "--reason", "x" * 201), "--reason: 201 characters, at most 200"),
                       (("a/b", "--reason", "x"), "competitor name 'a/b'")):
        r = arena("competitor", "disqualify", str(cfg), *args)
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.splitlines()) == 1, (args, r.stderr)
    listed = arena("competitor", "list", str(cfg))
    assert listed.stdout.split() == ["ann", "live"]  # nothing was done to ann


def test_undo_takes_a_disqualification_back_and_the_record_stays(tmp_path: Path) -> None:
    from arena.competition.book import CompetitionBook

    cfg = write_config(tmp_path)
    assert arena("competitor", "add", str(cfg), "ann").returncode == 0
    r = arena("competitor", "disqualify", str(cfg), "ann", "--reason", "a bug exploited\nin the lobby")
    assert r.returncode == 0 and "ann: disqualified (a bug exploited in the lobby); token revoked" in r.stderr
    assert arena("competitor", "list", str(cfg)).stdout.split() == ["ann", "revoked"]
    with CompetitionBook(tmp_path / "out") as book:
        [(name, gone)] = book.disqualified().items()
        assert (name, gone.reason) == ("ann", "a bug exploited in the lobby") and gone.at > 0
    undo = arena("competitor", "disqualify", str(cfg), "ann", "--undo")
    assert undo.returncode == 0 and "ann: disqualification undone" in undo.stderr, undo.stderr
    again = arena("competitor", "disqualify", str(cfg), "ann", "--undo")
    assert again.returncode == 0 and "ann: not disqualified" in again.stderr
    with CompetitionBook(tmp_path / "out") as book:
        assert book.disqualified() == {}
    with contextlib.closing(sqlite3.connect(tmp_path / "out" / "competition.sqlite")) as con:
        rows = con.execute("SELECT competitor, reason, undone_at IS NOT NULL FROM disqualifications").fetchall()
    assert rows == [("ann", "a bug exploited in the lobby", 1)]  # the record of what was done stays


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, int, subprocess.Popen[str], Path]:
    client = docker_client()  # submitted bots play in containers (or skip without dockerd)
    port = free_port()
    cfg = write_config(tmp_path, port, base_image("python"))
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "20", "--web", "0"],
                            cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    try:
        yield cfg, port, proc, log
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        for image in client.images.list(filters={"reference": f"{PREFIX}/*/*"}):
            for tag in image.tags:
                client.images.remove(tag, force=True)


def test_a_disqualified_entry_stops_playing_and_its_games_leave_the_ratings(
        served: tuple[Path, int, subprocess.Popen[str], Path], tmp_path: Path) -> None:
    from arena.competition.client import SubmissionClient, pack
    from arena.ratings.fit import rate, read_games

    cfg, port, proc, log = served
    out = tmp_path / "out"
    wait("serving", lambda: "serving:" in log.read_text() and "web: " in log.read_text(), proc, log)
    web = next(ln for ln in log.read_text().splitlines() if ln.startswith("web: ")).split()[1].rstrip("/")
    token = arena("competitor", "add", str(cfg), "mal").stdout.strip()
    folder = tmp_path / "malbot"
    folder.mkdir()
    (folder / "random_bot.py").write_text((ROOT / "sample_bots" / "random_bot.py").read_text())
    mal = SubmissionClient(f"127.0.0.1:{port}", token)
    sub = mal.submit(pack(folder), "malbot", entry="random_bot:RandomBot")  # a container entry: built, validated
    mal.close()
    entry = sub.entrant
    wait("malbot's first game", lambda: any(entry in s for s in sides(out)), proc, log, timeout=900)
    r = arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON)
    assert r.returncode == 0, r.stderr
    assert f"mal: disqualified ({REASON}); token revoked; entries {entry} are no longer scheduled" in r.stderr
    wait("the serve sees it", lambda: f"disqualified: {entry}" in log.read_text(), proc, log)
    seen = sum(entry in s for s in sides(out))
    house = len(HOUSE) * (len(HOUSE) - 1) // 2 * GAMES_PER_PAIRING
    wait("the house bots' games", lambda: sum(entry not in s for s in sides(out)) == house, proc, log, timeout=900)
    board = httpx.get(f"{web}/_board", timeout=30).text
    me = httpx.post(f"{web}/me/login", data={"token": token}, timeout=30)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text()[-3000:]
    played = sum(entry in s for s in sides(out))
    # none of its games started once the serve saw it, but the one in flight (concurrency 1); its other
    # games stay pending, never played
    assert seen <= played <= seen + 1 and played < 2 * len(HOUSE) * GAMES_PER_PAIRING // 2, (seen, played)

    lines = (out / "games.jsonl").read_text().splitlines()
    assert sum(entry in (json.loads(ln)["a"], json.loads(ln)["b"]) for ln in lines) == played  # kept for audit
    published = json.loads((out / "ratings.json").read_text())
    kept = [ln for ln in lines if entry not in (json.loads(ln)["a"], json.loads(ln)["b"])]
    expected = rate(read_games(kept), bootstrap=0, names=list(HOUSE))
    with_it = rate(read_games(lines), bootstrap=0, names=[*HOUSE, entry])
    assert set(published["ratings"]) == set(HOUSE)
    for bot in HOUSE:
        assert published["ratings"][bot]["elo"] == pytest.approx(expected["ratings"][bot]["elo"], abs=1e-6)
        assert published["ratings"][bot]["games"] == expected["ratings"][bot]["games"] == 2 * GAMES_PER_PAIRING
        assert published["ratings"][bot]["score"] == pytest.approx(expected["ratings"][bot]["score"])
    # rated with its games, the house bots would count more games (its opponents'): the check tells them apart
    assert sum(with_it["ratings"][b]["games"] for b in HOUSE) == len(HOUSE) * 2 * GAMES_PER_PAIRING + played
    why = f"disqualified: {REASON}"
    assert published["tournament"]["disqualified"] == [{"bot": entry, "why": why}]
    assert entry not in published["tournament"]["active"]  # the league schedules it no more

    ratings_table, _, rest = board.partition("<h2>Disqualified</h2>")
    assert entry not in ratings_table and all(f'<td class="l bot">{b}</td>' in ratings_table for b in HOUSE)
    assert (f'<td class="l bot">{entry}</td><td class="l reason">disqualified: colluding &lt;b&gt;entries&lt;/b&gt; '
            "&amp; a second account</td>") in rest, rest[:2000]
    leaderboard = (out / "leaderboard.html").read_text()
    assert "colluding &lt;b&gt;entries&lt;/b&gt;" in leaderboard and "<b>entries</b>" not in leaderboard

    told = "competitor mal was disqualified by the host at "
    assert me.status_code == 403 and told in me.text and "colluding &lt;b&gt;entries&lt;/b&gt;" in me.text
    _the_competitor_is_told(cfg, port, token, told)
    assert sum(entry in s for s in sides(out)) == played  # served again, the league leaves it out
    _the_final_leaves_them_out(cfg, out, entry)
    close = arena("competition", "close", str(cfg), "--bootstrap", "20")  # frozen by the final's step
    assert close.returncode == 0, close.stderr
    closed = json.loads((out / "ratings.json").read_text())
    assert closed["tournament"]["league_closed"] is True and set(closed["ratings"]) == set(HOUSE)
    assert closed["tournament"]["disqualified"] == [{"bot": entry, "why": why}]
    for bot in HOUSE:
        assert closed["ratings"][bot]["elo"] == pytest.approx(expected["ratings"][bot]["elo"], abs=1e-6)


def _the_competitor_is_told(cfg: Path, port: int, token: str, told: str) -> None:
    """A served arena refuses the disqualified competitor's token with the disqualification's line."""
    import os

    log = cfg.parent / "again.log"
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--web", "0"], cwd=ROOT,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    try:
        wait("serving again", lambda: "serving:" in log.read_text(), proc, log)
        env = {**os.environ, "ALLFOURS_COMPETITOR_TOKEN": token}
        for args in (("submissions",), ("submit", "--remote", "--name", "malbot2")):
            r = arena(*args, "--arena", f"127.0.0.1:{port}", env=env)
            assert r.returncode == 1 and f"PERMISSION_DENIED: {told}" in r.stderr, (args, r.stderr)
            assert "colluding <b>entries</b> & a second account" in r.stderr and len(r.stderr.splitlines()) <= 2
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]


def _the_final_leaves_them_out(cfg: Path, out: Path, entry: str) -> None:
    """Two more competitors with accepted entries, the freeze: the final's config is theirs, and one line says
    why mal's entry is not in it."""
    import tomllib

    from rich.console import Console

    from arena.cli.competing import final_run_args
    from arena.competition.book import CompetitionBook
    from arena.competition.final import freeze

    with CompetitionBook(out) as book:
        for name in ("ann", "cid"):
            book.add_competitor(name)
            sub = book.add_submission(name, f"{name}bot", "1", "python", "m:C")
            book.set_status(sub.id, "accepted", image=f"example/{name}bot:1")
        freeze(book)
    err = io.StringIO()
    run = final_run_args(argparse.Namespace(config=str(cfg), output=None, games_per_pairing=None, bootstrap=20),
                         Console(file=err, width=400))
    assert isinstance(run, argparse.Namespace), err.getvalue()
    final = tomllib.loads(Path(run.config).read_text())
    assert [b["name"] for b in final["bots"]] == ["annbot@1", "cidbot@1"]
    left = [ln for ln in err.getvalue().splitlines() if ln.startswith("not in the final")]
    assert left == [f"not in the final: mal ({entry}), disqualified: {REASON}"], err.getvalue()


LADDER = ('[tournament]\nname = "dql"\nplayers = 2\nformat = "ladder"\nconcurrency = 2\noutput = "out"\n'
          'master_seed = "' + "00" * 32 + '"\n[tournament.ladder]\ntotal = 40\n')
ENTRANT = "malbot@1"  # a competitor's entry, as the league names it


def _ladder_config(folder: Path) -> Path:
    cfg = folder / "ladder.toml"
    cfg.write_text(LADDER + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in (*HOUSE, ENTRANT)))
    return cfg


def _disqualify_malbot(output: Path) -> None:
    from arena.competition.book import CompetitionBook

    with CompetitionBook(output) as book:
        book.add_competitor("mal")
        book.add_submission("mal", "malbot", "1", "python", "bot:Bot")
        book.disqualify("mal", REASON, "host")


def test_a_served_ladder_chooses_no_pair_of_a_disqualified_entrant_and_does_not_rank_it(tmp_path: Path) -> None:
    """A competition's league bars a disqualified competitor's entrants at once (``League.barred``, read before
    each round) until its reload drops them. A round robin's games were filtered so; a ladder chose their pairs
    all the same (a new entrant's first) and its board ranked them. Now the ladder leaves them out of its
    choices and its standings, as it does a broken bot."""
    from rich.console import Console

    from arena.tournament.league import League
    from arena.tournament.result import GameResult
    from arena.tournament.runner import LADDER_KEY, SimulatedRunner, Tournament
    from tests.league_helpers import serve_until_stopped

    cfg = _ladder_config(tmp_path)
    stored: list[GameResult] = []
    boards: list[dict[str, object]] = []
    league = League(str(cfg), tmp_path / "out", Console(file=io.StringIO()), lambda t: None,
                    lambda _: SimulatedRunner(), publish_spacing=0)
    league.barred = lambda: {ENTRANT: REASON}

    def after(result: GameResult, t: Tournament) -> None:
        stored.append(result)
        boards.append(json.loads(t.store.get_meta(LADDER_KEY) or "{}"))
        if len(stored) == 8:
            league.request_stop()

    serve_until_stopped(league, cfg, after)
    assert len(stored) == 8 and [r.sides for r in stored if ENTRANT in r.sides] == []
    for board in boards:
        assert [s["name"] for s in board["standings"]] and ENTRANT not in {s["name"] for s in board["standings"]}
        assert all(ENTRANT not in (c["a"], c["b"]) for c in board["plan"]), board["plan"]


def test_a_ladders_board_written_before_a_disqualification_shows_the_entrant_unranked(tmp_path: Path) -> None:
    """A ladder's board (standings, the pairs chosen last) is kept in the store as the league last wrote it. A
    competitor disqualified while the league was stopped (or before it reloaded) kept their rank in its standings
    and their pairs in its plan: on the web's board and /api, in ratings.json and leaderboard.html, and in what
    ``arena competition close`` published. Now every publication and page shows the board without them (listed
    under "Disqualified" instead); the ratings leave their games out as before."""
    from arena.config import load_config
    from arena.formats.ladder_run import LadderRun
    from arena.report.publish import publish_tournament
    from arena.tournament.runner import LADDER_KEY, SimulatedRunner, open_tournament, run_games
    from arena.web.data import WebData

    out = tmp_path / "out"
    t = open_tournament(load_config(_ladder_config(tmp_path)), out)
    try:
        run, now = LadderRun(t), time.time()
        for _ in range(3):
            run_games(run.next_games(2, now), SimulatedRunner(), t.store, on_result=lambda r, ok: ok and run.add(r))
        run.next_games(2, now)  # the pairs chosen next, not played: the league stopped
        board = run.board(now)
        t.store.set_meta(LADDER_KEY, json.dumps(board))  # as the league writes it
        assert ENTRANT in [s["name"] for s in board["standings"]]
        assert any(ENTRANT in (c["a"], c["b"]) for c in board["plan"]), board["plan"]  # the new entrant's first
        _disqualify_malbot(out)
        publish_tournament(t, out, 0, None, reveal=False)
    finally:
        t.store.close()
    web = WebData(out, bootstrap=0)
    shown = {"ratings.json": json.loads((out / "ratings.json").read_text())["tournament"],
             "the web": web.facts(), "/api/ratings": web.ratings()["tournament"]}
    kept = [c for c in board["plan"] if ENTRANT not in (c["a"], c["b"])]
    for where, facts in shown.items():
        ladder = facts["ladder"]
        assert [s["name"] for s in ladder["standings"]] == [s["name"] for s in board["standings"]
                                                             if s["name"] != ENTRANT], where
        assert ladder["plan"] == kept and ladder["reasons"] == list(dict.fromkeys(c["reason"] for c in kept)), where
        assert facts["disqualified"] == [{"bot": ENTRANT, "why": f"disqualified: {REASON}"}], where
    page = (out / "leaderboard.html").read_text()
    standings = page.split('<table id="ladder">')[1].split("</table>")[0]
    assert ENTRANT not in standings and all(f'<td class="l bot">{b}</td>' in standings for b in HOUSE)
    assert f'<td class="l bot">{ENTRANT}</td><td class="l reason">' in page  # listed under "Disqualified"


def _valid_tokens(out: Path) -> dict[str, list[str]]:
    """The league store's valid remote bot token digests, per entrant."""
    from arena.tournament.store import Store

    with Store(out / "arena.sqlite") as store:
        return store.token_digests()


def _register(out: Path, competitor: str, name: str) -> str:
    """A remote entry ``name@1`` of ``competitor``, as RegisterRemote makes it (in-process); returns its bot token."""
    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk
    from arena.config import CompetitionSettings

    with CompetitionBook(out) as book:
        return Desk(CompetitionSettings(), out, book, lambda: None).register_remote(competitor, name, "1")[1]


def test_undo_gives_back_the_remote_tokens_the_disqualification_revoked_and_only_those(tmp_path: Path) -> None:
    """The disqualification revoked the competitor's remote entries' bot tokens and its undo left them revoked: an
    undone competitor could not play remotely until the host made new tokens by hand. The undo now gives back
    the ones the disqualification revoked (held in the book: each command here is a process of its own), not
    one the host revoked by hand before it, nor those the host revoked by hand while they were disqualified."""
    from arena.lobby.tokens import token_digest

    cfg = write_config(tmp_path)
    out = tmp_path / "out"
    assert arena("competitor", "add", str(cfg), "mal").returncode == 0
    _register(out, "mal", "oldbot")
    assert arena("competitor", "add", str(cfg), "mal", "--revoke").returncode == 0  # by hand, before
    assert arena("competitor", "add", str(cfg), "mal").returncode == 0
    token = _register(out, "mal", "newbot")
    gone = arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON)
    assert gone.returncode == 0 and "mal's remote bots (newbot@1): 1 token(s) revoked; " in gone.stderr, gone.stderr
    assert "`--undo` gives these back" in gone.stderr and _valid_tokens(out) == {}
    undo = arena("competitor", "disqualify", str(cfg), "mal", "--undo")
    assert undo.returncode == 0, undo.stderr
    assert "mal's remote bots (newbot@1): 1 token(s) the disqualification revoked are valid again" in undo.stderr
    assert _valid_tokens(out) == {"newbot@1": [token_digest(token)]}  # oldbot's stays revoked: the host's doing
    assert token not in undo.stdout + undo.stderr

    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    assert arena("competitor", "add", str(cfg), "mal", "--revoke").returncode == 0  # by hand, while disqualified
    again = arena("competitor", "disqualify", str(cfg), "mal", "--undo")
    assert again.returncode == 0 and "valid again" not in again.stderr, again.stderr
    assert _valid_tokens(out) == {}


def test_a_remote_registration_racing_the_disqualification_keeps_no_token(tmp_path: Path) -> None:
    """RegisterRemote checked the competitor's standing as the call began, then kept the entry, then stored its
    bot token: an `arena competitor disqualify` between the last two revoked the remote tokens it found (not the
    new entry's, not stored yet), and the new entry's token was stored afterwards, live. The registration now
    checks, keeps the entry and stores its token in one book transaction, one step against the disqualify's.
    The disqualify runs here (a real CLI process) at the registration's last step before its token is kept
    (the lobby's ``tell``, injected): the registration is refused with the disqualification's line, and
    neither the entry nor a token is kept."""
    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk, Refused
    from arena.config import CompetitionSettings

    cfg = write_config(tmp_path)
    out = tmp_path / "out"
    assert arena("competitor", "add", str(cfg), "mal").returncode == 0
    raced: list[subprocess.CompletedProcess[str]] = []

    def disqualified_meanwhile(entrant: str, digest: str, keep: Callable[[], None]) -> None:
        raced.append(arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON))
        keep()

    with CompetitionBook(out) as book:
        desk = Desk(CompetitionSettings(), out, book, lambda: None, keep_token=disqualified_meanwhile)
        with pytest.raises(Refused) as e:
            desk.register_remote("mal", "malbot", "1")
        assert e.value.kind == "disqualified", e.value
        assert str(e.value).startswith("competitor mal was disqualified by the host at ") and REASON in str(e.value)
        assert book.submissions("mal") == []
    assert raced[0].returncode == 0, raced[0].stderr
    assert not (out / "arena.sqlite").exists() or _valid_tokens(out) == {}


def test_a_remote_entry_plays_with_its_token_once_its_disqualification_is_undone(tmp_path: Path) -> None:
    """End to end, one real `arena serve` (house bots and a competitor's remote entry, no container): the entry
    registered through `arena submit --remote`, its competitor disqualified and the disqualification undone
    with the CLI while the arena runs; a worker started then with the token the registration gave plays a
    league game (before, its token stayed revoked: the worker was refused "unknown or revoked bot token")."""
    import os

    port = free_port()
    cfg = write_config(tmp_path, port)
    out = tmp_path / "out"
    token = arena("competitor", "add", str(cfg), "mal").stdout.strip()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--web", "0"], cwd=ROOT,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    worker: subprocess.Popen[str] | None = None
    try:
        wait("serving", lambda: "serving:" in log.read_text(), proc, log)
        env = {**os.environ, "ALLFOURS_COMPETITOR_TOKEN": token}
        made = arena("submit", "--remote", "--name", "malbot", "--arena", f"127.0.0.1:{port}", env=env)
        assert made.returncode == 0, made.stderr
        assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
        wait("the serve sees it", lambda: "disqualified: malbot@1" in log.read_text(), proc, log)
        undo = arena("competitor", "disqualify", str(cfg), "mal", "--undo")
        assert "1 token(s) the disqualification revoked are valid again" in undo.stderr, undo.stderr
        back = "reinstated: malbot@1"
        wait("the league reloaded with it", lambda: "dq: 4 bots" in log.read_text().partition(back)[2], proc, log)
        worker = subprocess.Popen(
            [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena", f"127.0.0.1:{port}",
             "--name", "malbot@1", "--log-level", "warning", "--reconnect", "60"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "ALLFOURS_BOT_TOKEN": made.stdout.strip()})
        playing = worker

        def played() -> bool:
            assert playing.poll() is None, f"the worker left: {playing.communicate()[1][-2000:]}"
            return any("malbot@1" in s for s in sides(out))

        wait("malbot@1's first game", played, proc, log)
    finally:
        if worker is not None:
            worker.terminate()
            worker.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
