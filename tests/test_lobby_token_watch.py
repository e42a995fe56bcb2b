"""The lobby's token watcher (LobbySetup.watch_tokens) and a reload against the tokens they look at: a worker
whose token is revoked between its Register's token look-up and its being listed
survives the token watcher for good (the watcher drops workers only when a sync changed something)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc

from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from arena.lobby.service import Lobby
from arena.lobby.setup import TOKEN_POLL_S, LobbySetup
from arena.lobby.tokens import TokenBook, new_token, token_digest
from arena.tournament.store import Store
from tests.test_arena_lobby import register


def test_a_worker_registering_as_its_token_is_revoked_is_dropped(tmp_path: Path) -> None:
    book = TokenBook()
    lob = Lobby("t", book)
    lob.start()
    setup = LobbySetup(lob, {})
    notes: list[str] = []
    synced = threading.Event()
    token, bot = new_token(), "far@1"
    store = Store(tmp_path / "arena.sqlite")
    book.tell(bot, token_digest(token), lambda: store.add_token(bot, token_digest(token)))
    bot_for = book.bot_for
    raced = threading.Event()

    def late_bot_for(tok: str) -> str | None:
        found = bot_for(tok)
        if tok == token and not raced.is_set():  # looked up valid; revoked now, before the worker is listed
            raced.set()
            with Store(tmp_path / "arena.sqlite") as other:  # as `arena token --revoke`
                other.revoke_tokens(bot)
            assert synced.wait(30)  # the watcher took the revocation (and dropped nobody: not listed yet)
        return found

    book.bot_for = late_bot_for  # type: ignore[method-assign]

    def note(line: str) -> None:
        notes.append(line)
        synced.set()

    setup.watch_tokens(store.path, note)
    stop = threading.Event()
    ended = threading.Event()

    def requests():
        yield register(token, bot)
        stop.wait(60)

    def stream() -> None:
        with grpc.insecure_channel(lob.address) as ch:
            try:
                for _ in lpb_grpc.LobbyServiceStub(ch).Connect(requests(), timeout=60):
                    pass
            except grpc.RpcError:
                pass
        ended.set()

    t = threading.Thread(target=stream, daemon=True)
    t.start()
    try:
        assert raced.wait(30)
        time.sleep(5 * TOKEN_POLL_S)  # five more looks of the watcher
        with lob._lock:
            left = [w for w in lob._workers.values() if w.bot == bot]
        assert not book.valid(token_digest(token))
        assert not left and ended.is_set(), f"revoked token's worker still connected: {left}, notes {notes}"
    finally:
        stop.set()
        setup.stop()
        store.close()
        t.join(30)



def test_an_entry_retired_before_the_reload_that_drops_it_has_its_token_refused(tmp_path: Path) -> None:
    """erin registers a remote entry and, before the league reloads, a newer one that retires it (in_play 1). The
    reload's config (read after the retirement) has only the new one. The old one's token was told since the
    last reload, so it was carried as "too late for this config" and stayed accepted until the next reload
    (which a quiet competition may not see for days): its worker registered, held lobby slots. Now a bot told
    before the reload read its config, and not in it, has left: its token goes."""
    from arena.config import load_config
    from tests.test_arena_lobby import _league, connect, refusal

    league, desk, cfg = _league(tmp_path)
    league.grow = desk.grow  # as open_competition hooks them
    try:
        league.open(load_config(cfg))  # as arena serve opens: the lobby on the league's token book
        assert league.setup is not None
        old, old_token = desk.register_remote("erin", "erinbot", "next")
        new, new_token = desk.register_remote("erin", "erinbot", "next")  # in_play 1: the old one retires
        league.open(load_config(cfg))  # the reload (a new entry's, or SIGHUP): its config drops the retired one
        lob = league.setup.lobby
        assert connect(lob, register(new_token, new.entrant))[0].WhichOneof("msg") == "registered"
        assert refusal(lob, register(old_token, old.entrant)) == (grpc.StatusCode.UNAUTHENTICATED,
                                                                 "unknown or revoked bot token")
    finally:
        league.close()
        desk.book.close()


def test_the_token_watcher_outlives_a_store_of_another_schema(tmp_path: Path) -> None:
    """The store's file replaced by one of another storage schema (SchemaMismatch, no sqlite3.Error nor OSError)
    ended the watcher's thread with a traceback and no line: the tokens were never looked at again. It says so
    in one line and looks again; once the file is a store again, a token revoked there is refused."""
    import sqlite3

    path = tmp_path / "arena.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema', '999')")
    db.commit()
    db.close()
    book = TokenBook()
    lob = Lobby("t", book)
    lob.start()
    setup = LobbySetup(lob, {})
    notes: list[str] = []
    said = threading.Event()

    def note(line: str) -> None:
        notes.append(line)
        said.set()

    setup.watch_tokens(path, note)
    try:
        assert said.wait(30) and "could not be read" in notes[0], notes
        assert setup._watcher is not None and setup._watcher.is_alive()
    finally:
        setup.stop()
        lob.stop()


def _stored_with(path: Path, bot: str) -> int:
    """The games stored in the store at ``path`` that seat ``bot`` (0 while the store cannot be read yet)."""
    import sqlite3

    from arena.tournament.store import StorageError

    try:
        with Store(path) as store:
            return sum(bot in r.sides for r in store.results())
    except (OSError, sqlite3.Error, StorageError):
        return 0


def test_arena_token_revoke_is_refused_by_a_running_arena_run(tmp_path: Path) -> None:
    """`arena serve` had its test of the token watcher, `arena run` none: a host revoking a leaked token while a run
    plays expects it refused there too. A real `arena run`, a real remote bot over a socket: once it has played, its
    token revoked with `arena token --revoke` (another process) drops its worker, whose dial again is refused and
    which exits; a fresh dial with that token is refused; the run says so in one line, no signal sent."""
    import signal
    import subprocess
    import sys

    from tests.test_arena_lobby import ROOT, arena, free_port, remote_worker, worker_bot, write_config

    port = free_port()
    bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=400, extra=f'lobby = "127.0.0.1:{port}"')
    token = arena("token", str(cfg), "far").stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker = remote_worker(port, token, "far")
    try:
        deadline = time.monotonic() + 180
        while _stored_with(tmp_path / "out" / "arena.sqlite", "far") < 1:  # it played
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the remote bot played no game within 180 s"
            time.sleep(0.2)
        assert worker.poll() is None and proc.poll() is None
        revoked = arena("token", str(cfg), "far", "--revoke")
        assert revoked.returncode == 0, revoked.stderr
        _, err = worker.communicate(timeout=120)  # dropped, it dials again and is refused: it exits
        assert worker.returncode == 1 and "UNAUTHENTICATED: unknown or revoked bot token" in err, err
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            try:
                list(lpb_grpc.LobbyServiceStub(ch).Connect(iter([register(token, "far")]), timeout=30))
                refused: tuple[object, object] = (None, None)
            except grpc.RpcError as e:
                refused = (e.code(), e.details())
        assert refused == (grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
        assert proc.poll() is None, proc.communicate()  # still running: refused while it played
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out = proc.communicate(timeout=120)[0]
        finally:
            proc.kill()
            worker.kill()
            worker.wait(10)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in out, out
    assert "remote bots' tokens changed in the store: taken; 1 worker(s) of a revoked token dropped" in out, out


def test_a_worker_token_gone_leaves_no_digest_behind() -> None:
    """``TokenBook._issued`` kept the digest of every token :meth:`TokenBook.issue` ever made (one per worker
    start, each worker revoking its own as it ends): a league that ran long grew it without bound. A token's
    digest now goes with the token (revoked, or its bot's tokens set anew), and a live one outlives a sync."""
    book = TokenBook()
    for _ in range(50):
        token = book.issue("heuristic")
        assert book.issued(token)
        book.revoke(token_digest(token))
        assert not book.issued(token) and book.bot_for(token) is None
    assert book._issued == set()
    live, dropped = book.issue("heuristic"), book.issue("random")
    book.set_bot("random", [])
    book.sync(dict, named=())
    assert book.issued(live) and book.bot_for(live) == "heuristic" and not book.issued(dropped)
    assert book._issued == {token_digest(live)}
