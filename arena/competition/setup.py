"""``arena serve`` with a ``[competition]`` table: the desk, the build queue and the Submission service
beside the league (:func:`open_competition`)."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from arena import metrics
from arena.competition.book import CompetitionBook
from arena.competition.desk import INCOMING_PREFIX, Desk, remove_partial_uploads
from arena.competition.pipeline import POLL_S, BuildQueue, submission_tag, warn_missing_bases
from arena.competition.reads import READS_KEY
from arena.competition.service import add_to_server
from arena.config import CompetitionSettings, ConfigError, TournamentConfig
from arena.tournament.league import League


def check_validation_checks(settings: CompetitionSettings, source: str) -> None:
    """:raises ConfigError: naming ``competition.checks`` when it names a check the validation's per-game
    conformance suite does not have (a typo, or a lobby-only check): the suite would refuse its arguments
    and every submission would be rejected at its validation, counted in its competitor's day."""
    import difflib

    from sdk.conformance.checks import Mode, checks_of

    known = [c.name for c in checks_of(Mode.PER_GAME)]
    unknown = [c for c in settings.checks if c not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(source, "competition.checks", f"no per-game conformance check {', '.join(map(repr, unknown))}"
                          f"{hint}; the validation's checks: {', '.join(known)}", list(settings.checks))


def open_competition(config: TournamentConfig, output: Path, league: League,
                     note: Callable[[str], None]) -> Callable[[], None]:
    """Hook the competition into ``league`` before it opens: its accepted entrants join the config (``league.grow``),
    the Submission service joins the lobby's server, each stored game moves its entrants' statuses; an accepted
    submission or a disqualification (:func:`_watch_disqualifications`) re-opens the league at once (no SIGHUP).
    Removes the uploads a killed arena left half taken in (one line to ``note``), starts the build queue (resuming
    what a restart interrupted); returns the closer. Called under the output lock, before the lobby listens."""
    settings = config.competition
    assert settings is not None
    check_validation_checks(settings, config.source)
    book = CompetitionBook(output)
    book.set_meta(READS_KEY, str(settings.reads_per_minute))  # for the /me pages, maybe served by arena web
    queue = BuildQueue(book, settings, output, league.request_reload, note, tournament=config.name)
    house = frozenset(b.name.split("@")[0] for b in config.bots)
    desk = Desk(settings, output, book, queue.wake, league.request_reload, config.players, house=house,
                intake=queue.intake)
    league.grow = desk.grow
    _ask_the_lobby(desk, league)
    league.lobby_services.append(add_to_server(desk))
    league.after_game.append(desk.after_game)

    def reopened(new: TournamentConfig) -> None:
        """SIGHUP: the limits, bases and checks of the [competition] table read again apply from the next
        submission on (both read their settings at each use)."""
        if new.competition is None:
            note("the config has no [competition] table any more: submissions go on with the old one "
                 "until arena serve starts again")
            return
        try:
            check_validation_checks(new.competition, new.source)
        except ConfigError as e:
            note(f"{e}: the old [competition] table stays")
            return
        changed = [f.name for f in dataclasses.fields(new.competition)
                   if getattr(new.competition, f.name) != getattr(desk.settings, f.name)]
        if changed:
            desk.settings = queue.settings = new.competition
            book.set_meta(READS_KEY, str(new.competition.reads_per_minute))
            note(f"[competition] re-read: {', '.join(changed)} changed")
            if {"base_python", "base_node"} & set(changed):
                warn_missing_bases(new.competition, note)

    league.reopened.append(reopened)
    note(f"submissions' images are tagged {submission_tag(settings, output, 'NAME', 'VERSION')} (this folder's own)")
    warn_missing_bases(settings, note)
    folders, size = remove_partial_uploads(output)
    if folders:
        note(f"removed {folders} partial upload(s) ({size} bytes) that a stopped arena serve left in "
             f"{output / 'submissions'}/{INCOMING_PREFIX}*")
    queue.start()
    metrics.watch_submissions(book.count_by_status)
    stop_watching = _watch_disqualifications(book, league, note).set

    return lambda: _close(desk, queue, note, stop_watching)


def _close(desk: Desk, queue: BuildQueue, note: Callable[[str], None], stop_watching: Callable[[], None]) -> None:
    """The competition's closer: no scrape reads the book any more, no watching of disqualifications, the
    uploads the stop cuts short not counted (:meth:`Desk.stop_uploads`, one line to ``note``), the build
    queue stopped, then the book closed."""
    metrics.watch_submissions(None)
    stop_watching()
    cut = desk.stop_uploads()
    if cut:
        note(f"{cut} upload(s) under way when the arena stopped: not counted against their competitors")
    queue.stop()
    desk.book.close()


def _ask_the_lobby(desk: Desk, league: League) -> None:
    """Hook ``desk`` to the league's lobby: whether an entrant's workers came, and a new remote entry's bot
    token, stored and accepted by the lobby in one step as ``RegisterRemote`` answers (not at the league's
    reload, after the games in flight: a worker started at once was refused "unknown or revoked bot token", for
    good), even while the lobby opens (:attr:`League.tokens`, :meth:`arena.lobby.tokens.TokenBook.tell`)."""
    desk.workers_came = lambda name: league.setup is not None and league.setup.lobby.came(name)
    desk.keep_token = league.tokens.tell


def _watch_disqualifications(book: CompetitionBook, league: League, note: Callable[[str], None]) -> threading.Event:
    """Look at the book's disqualifications every :data:`arena.competition.pipeline.POLL_S` seconds (a thread of
    its own: a build under way does not hold it up); when they change (``arena competitor disqualify`` ran),
    say so and have the league reload (the games in flight finish, none of a disqualified entrant starts, its
    entrants leave the config) and publish again; the league bars their games meanwhile (:attr:`League.barred`).
    Returns the event that stops the thread."""
    league.barred = book.disqualified_entrants  # its keys: the entrants of disqualified competitors
    stop = threading.Event()
    seen = book.disqualified_entrants()

    def run() -> None:
        nonlocal seen
        while not stop.wait(POLL_S):
            try:
                now = book.disqualified_entrants()
            except sqlite3.Error as e:  # a busy or closing book: look again next time
                if stop.is_set():
                    return
                note(f"the book's disqualifications could not be read ({e}); looking again in {POLL_S:g} s")
                continue
            if now != seen:
                gone, back = sorted(set(now) - set(seen)), sorted(set(seen) - set(now))
                note("disqualified: " + (", ".join(gone) or "none") + "; reinstated: " + (", ".join(back) or "none")
                     + " (the games in flight finish; the league reloads and its ratings are published again)")
                seen = now
                league.request_reload()
                league.request_republish()

    threading.Thread(target=run, name="competition-disqualifications", daemon=True).start()
    return stop
