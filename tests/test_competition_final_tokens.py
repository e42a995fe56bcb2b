"""A final already written, then a disqualification, its undo or a revoke (docs/competition.md, "Disqualifying a
competitor"): `arena competition final` copies the remote finalists' bot token digests into the final's own store
(``OUTPUT/final/arena.sqlite``), whose lobby accepts them; the host's commands revoked (and gave back) the
league's only, so a competitor disqualified after the final was written still played it with their remote bot.
Each test writes a real final (``final_run_args``, as `arena competition final` does before it plays it) from a
real book and league store, runs the host's commands as real CLI processes, and asks the final's store as the
final's lobby does (:class:`arena.lobby.tokens.TokenBook`, synced with the final's remote bots)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_competition_disqualify import REASON, ROOT, _register, arena, write_config


def _final(cfg: Path) -> Path:
    """Write the final of ``cfg``'s competition as `arena competition final` does before it plays it; its config."""
    from rich.console import Console

    from arena.cli.competing import final_run_args

    err = io.StringIO()
    run = final_run_args(argparse.Namespace(config=str(cfg), output=None, games_per_pairing=None, bootstrap=20),
                         Console(file=err, width=400))
    assert isinstance(run, argparse.Namespace), err.getvalue()
    return Path(run.config)


def _lobby_takes(final: Path, token: str) -> str | None:
    """The bot the lobby of the final (``final``: its config) takes a worker presenting ``token`` for, None if it
    refuses it: the final's store's valid tokens of its remote bots, as ``LobbySetup.reload_tokens`` syncs them."""
    from arena.lobby.tokens import TokenBook
    from arena.tournament.store import Store

    remote = [b["name"] for b in tomllib.loads(final.read_text())["bots"] if b.get("remote")]
    book = TokenBook()
    with Store(final.parent / "arena.sqlite") as store:
        book.sync(store.token_digests, remote)
    return book.bot_for(token)


@pytest.fixture
def two_remote_finalists(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A frozen competition with ann's and mal's remote entries (annbot@1, malbot@1): its config and each
    competitor's bot token."""
    from arena.competition.book import CompetitionBook
    from arena.competition.final import freeze

    cfg = write_config(tmp_path)
    out = tmp_path / "out"
    tokens = {}
    for name in ("ann", "mal"):
        assert arena("competitor", "add", str(cfg), name).returncode == 0
        tokens[name] = _register(out, name, f"{name}bot")
    with CompetitionBook(out) as book:
        freeze(book)
    yield cfg, tokens


def test_a_disqualification_after_the_final_was_written_reaches_the_finals_tokens(
        two_remote_finalists: tuple[Path, dict[str, str]]) -> None:
    """Disqualified after the final was written, mal's remote bot was still taken by the final's lobby (its copy
    of the token stayed valid): it played the final. The disqualification now revokes it in the final's store too,
    and its undo gives it back there as in the league's (the same held tokens, no other)."""
    cfg, tokens = two_remote_finalists
    final = _final(cfg)
    assert _lobby_takes(final, tokens["mal"]) == "malbot@1" and _lobby_takes(final, tokens["ann"]) == "annbot@1"
    gone = arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON)
    assert gone.returncode == 0, gone.stderr
    assert "the final already written lists malbot@1: its games not yet started are forfeited" in gone.stderr
    assert "a remote bot's tokens there are revoked too" in gone.stderr
    assert _lobby_takes(final, tokens["mal"]) is None  # before: "malbot@1", it played the final
    assert _lobby_takes(final, tokens["ann"]) == "annbot@1"
    undo = arena("competitor", "disqualify", str(cfg), "mal", "--undo")
    assert undo.returncode == 0, undo.stderr
    assert _lobby_takes(final, tokens["mal"]) == "malbot@1"


def test_a_revoke_after_the_final_was_written_reaches_the_finals_tokens(
        two_remote_finalists: tuple[Path, dict[str, str]]) -> None:
    """`arena competitor add --revoke` revokes the competitor's remote bots' tokens in the final's store too; and
    a disqualification's undo then gives none back there (the host's revoke keeps them revoked, as in the
    league's)."""
    cfg, tokens = two_remote_finalists
    final = _final(cfg)
    revoke = arena("competitor", "add", str(cfg), "mal", "--revoke")
    assert revoke.returncode == 0, revoke.stderr
    assert _lobby_takes(final, tokens["mal"]) is None  # before: "malbot@1"
    for args in (("--reason", REASON), ("--undo",)):
        assert arena("competitor", "disqualify", str(cfg), "mal", *args).returncode == 0
    assert _lobby_takes(final, tokens["mal"]) is None and _lobby_takes(final, tokens["ann"]) == "annbot@1"


def _has_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (its ``/proc/PID/fd``)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fds / fd) == str(path.resolve()) for fd in os.listdir(fds))
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_disqualification_during_the_finals_writing_reaches_its_tokens(
        two_remote_finalists: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The final reads the book (mal live: a finalist), writes its config, reads the league's valid tokens, then
    copies them into its store. A disqualify run as it copies (a real process, started as the final stores mal's
    token) found none of mal's tokens in the final's store yet and revoked the league's; the final then stored
    the copy, valid. The final's writing now takes its turn on the folder's competition.lock as the host's changes
    do: the disqualify runs as far as it can (to its end, or to its wait for that turn while the final holds it),
    and mal's bot is refused by the final's lobby either way."""
    from arena.lobby.tokens import token_digest
    from arena.tournament.lock import CHANGES_LOCK, _flock_pids
    from arena.tournament.store import Store

    cfg, tokens = two_remote_finalists
    lock = cfg.parent / "out" / CHANGES_LOCK
    started: list[subprocess.Popen[str]] = []
    add_token = Store.add_token

    def disqualified_meanwhile(self: Store, bot: str, digest: str) -> None:
        if digest == token_digest(tokens["mal"]) and not started:
            started.append(subprocess.Popen([sys.executable, "-m", "arena.cli", "competitor", "disqualify", str(cfg),
                                             "mal", "--reason", REASON], cwd=ROOT, text=True,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            ours = lock.exists() and os.getpid() in _flock_pids(lock.stat().st_dev, lock.stat().st_ino)
            deadline = time.monotonic() + 120  # a hang's bound, not a duration asserted
            while started[0].poll() is None and not (ours and _has_open(started[0].pid, lock)):
                assert time.monotonic() < deadline, "the disqualify neither ended nor waited for its turn"
                time.sleep(0.02)
        add_token(self, bot, digest)

    monkeypatch.setattr(Store, "add_token", disqualified_meanwhile)
    try:
        final = _final(cfg)
        _, said = started[0].communicate(timeout=120)
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert started[0].returncode == 0, said
    assert [b["name"] for b in tomllib.loads(final.read_text())["bots"]] == ["annbot@1", "malbot@1"]
    assert _lobby_takes(final, tokens["mal"]) is None  # before: "malbot@1"
    assert _lobby_takes(final, tokens["ann"]) == "annbot@1"


def test_arena_token_names_the_command_that_revokes_a_competitors_remote_entry(
        two_remote_finalists: tuple[Path, dict[str, str]]) -> None:
    """`arena token CONFIG NAME --revoke` changes the store of CONFIG's output alone, but it names only CONFIG's
    own [[bots]] (the house bots, which play no final): a competitor's remote entry, whose tokens the final copies,
    is none of them, so it cannot leave a copy valid. A host revoking a leaked entry's token that way was told only
    "no bot named 'malbot@1'"; the line now names the command that revokes it everywhere (the final's copies too),
    and that command does."""
    cfg, tokens = two_remote_finalists
    final = _final(cfg)
    refused = arena("token", str(cfg), "malbot@1", "--revoke")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert f"`arena competitor add {cfg} COMPETITOR --revoke`" in refused.stderr, refused.stderr
    assert _lobby_takes(final, tokens["mal"]) == "malbot@1"  # nothing was revoked by the refused command
    assert arena("competitor", "add", str(cfg), "mal", "--revoke").returncode == 0
    assert _lobby_takes(final, tokens["mal"]) is None


def test_an_undo_keeps_a_finals_copy_the_host_revoked_in_the_final(
        two_remote_finalists: tuple[Path, dict[str, str]]) -> None:
    """An undo gives back in the final's store only what the disqualification took there: a copy the host had
    revoked in the final before (`arena token FINAL.toml NAME --revoke`, the final's own command) stays revoked."""
    cfg, tokens = two_remote_finalists
    final = _final(cfg)
    revoked = arena("token", str(final), "malbot@1", "--revoke")
    assert revoked.returncode == 0, revoked.stderr
    assert _lobby_takes(final, tokens["mal"]) is None  # revoked in the final, by hand
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    undo = arena("competitor", "disqualify", str(cfg), "mal", "--undo")
    assert undo.returncode == 0, undo.stderr
    assert _lobby_takes(final, tokens["mal"]) is None  # the undo gives back only what the disqualification took


def _stored_in_order(final: Path, bot: str) -> list[tuple[tuple[str, str], str | None, list[str]]]:
    """The final's stored games of ``bot`` in the order they were stored: each one's sides, the side that won (its
    label, None for none) and its reasons."""
    with contextlib.closing(sqlite3.connect(f"file:{final.parent / 'arena.sqlite'}?mode=ro", uri=True)) as con:
        rows = con.execute("SELECT side0, side1, winner, reasons FROM games WHERE ? IN (side0, side1) "
                           "ORDER BY stored_at, rowid", (bot,)).fetchall()
    return [((a, b), None if w is None else (a, b)[int(w)], json.loads(r)) for a, b, w, r in rows]


def _played(reasons: list[str]) -> bool:
    """Whether a stored game's ``reasons`` are those of a game played (no side forfeited it)."""
    return not any("forfeited" in r for r in reasons)


def _log_has(log: Path, text: str) -> bool:
    """Whether ``log`` (a process's output, written as it runs) says ``text``."""
    return text in log.read_text(errors="replace")


def test_a_connected_remote_finalist_disqualified_during_the_final_is_dropped_and_its_games_forfeited(
        tmp_path: Path) -> None:
    """End to end, real processes over real sockets: the final's `arena run` (its own lobby), mal's and ann's
    remote workers (``sdk.run`` with their bot tokens, as docs/bot-authors.md says), cal's never started (so
    cal's games wait, keeping the run going). Once malbot@1 has played, the host disqualifies mal (the CLI):
    its connected worker is dropped and, dialling again, refused in one line (UNAUTHENTICATED: unknown or
    revoked bot token), and exits 1; it plays no further game (at most the one in flight when the bar came);
    every other game of it is forfeited with the disqualification's line. After ``--undo`` its token is taken
    by the final's lobby again: a worker started with it registers (the games forfeited meanwhile stay so)."""
    from arena.competition.book import CompetitionBook
    from arena.competition.final import freeze
    from tests.test_arena_lobby import remote_worker
    from tests.test_competition_disqualify import free_port, wait
    from tests.test_competition_final_bar import _games

    port = free_port()
    cfg = write_config(tmp_path, port)
    out = tmp_path / "out"
    tokens = {}
    for name in ("ann", "cal", "mal"):
        assert arena("competitor", "add", str(cfg), name).returncode == 0
        tokens[name] = _register(out, name, f"{name}bot")
    with CompetitionBook(out) as book:
        freeze(book)
    final = _final(cfg)
    gpp = tomllib.loads(final.read_text())["tournament"]["games_per_pairing"]
    log = tmp_path / "final.log"
    with log.open("w") as sink:
        run = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(final), "--no-progress", "--bootstrap",
                                "0"], cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True)
    workers = [remote_worker(port, tokens[n], f"{n}bot@1") for n in ("ann", "mal")]
    mal = workers[1]

    def mal_played() -> bool:
        assert mal.poll() is None, mal.communicate()[1][-2000:]
        return any("malbot@1" in sides and _played(reasons) for sides, _, reasons in _games(final))

    try:
        wait("malbot@1's first game of the final", mal_played, run, log)
        gone = arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON)
        assert gone.returncode == 0, gone.stderr
        _, err = mal.communicate(timeout=120)  # dropped; dialling again it is refused, and it exits
        assert mal.returncode == 1, err
        said = [line for line in err.splitlines() if "UNAUTHENTICATED" in line]
        assert len(said) == 1 and said[0].endswith("UNAUTHENTICATED: unknown or revoked bot token"), err
        wait("every game of malbot@1 decided", lambda: len(_stored_in_order(final, "malbot@1")) == 2 * gpp, run, log)

        def barred(sides: tuple[str, str]) -> list[str]:
            return [f"side {sides.index('malbot@1')} (malbot@1) forfeited: disqualified by the host: {REASON}"]

        mine = _stored_in_order(final, "malbot@1")
        first = next(i for i, (sides, _, reasons) in enumerate(mine) if reasons == barred(sides))
        # from the first look that saw the bar on, every game of it is forfeited with the disqualification's
        # line, but the one in flight then (concurrency 1: at most one), which finishes
        assert len([g for g in mine[first:] if g[2] != barred(g[0])]) <= 1, mine[first:]
        forfeited = [g for g in mine if g[2] == barred(g[0])]
        assert len(forfeited) >= gpp  # cal-mal's games at least: none had started (cal never came)
        assert all(won == s[1 - s.index("malbot@1")] for s, won, _ in forfeited)
        assert _log_has(log, "1 worker(s) of a revoked token dropped"), log.read_text()[-3000:]

        undo = arena("competitor", "disqualify", str(cfg), "mal", "--undo")
        assert undo.returncode == 0, undo.stderr
        wait("the final's lobby takes the token back", lambda: "remote bots' tokens changed in the store: taken" in
             log.read_text().partition("worker(s) of a revoked token dropped")[2], run, log)
        back = remote_worker(port, tokens["mal"], "malbot@1", "--log-level", "info")
        workers.append(back)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(back.stderr or ()), daemon=True)
        reader.start()

        def registered() -> bool:
            assert back.poll() is None, "".join(lines)[-2000:]
            return any("registered at" in line for line in lines)

        wait("mal's worker registered again", registered, run, log)
    finally:
        for w in workers:
            w.kill()
            w.wait(60)
            for pipe in (w.stdout, w.stderr):
                if pipe is not None:
                    pipe.close()
        run.terminate()
        run.wait(120)
