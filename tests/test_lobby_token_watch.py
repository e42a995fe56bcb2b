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
