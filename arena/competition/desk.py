"""The competition desk: what the Submission service decides, without gRPC (docs/competition.md).

:class:`Desk` checks a competitor's limits and freeze (:class:`Refused` with a kind and one line),
takes an uploaded archive in (:mod:`arena.competition.intake`, then ``arena bots build``'s
:func:`arena.hosting.bots_build.plan_build` finds the kind and entry), keeps the submission in the
book and wakes the build queue; :meth:`Desk.grow` adds the accepted entrants to the league's config
(``name@version``, container bots with the competition's limits); :meth:`Desk.after_game` moves an
entrant to ``playing``, then ``rated`` once none of its scheduled games is pending.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from arena.competition.book import (
    DAY_S,
    IN_PLAY,
    BookError,
    CompetitionBook,
    Disqualified,
    Revoked,
    Submission,
    name_key,
)
from arena.competition.intake import IntakeError, IntakeLimits, copy_image_archive, unpack
from arena.competition.pipeline import IMAGE_ARCHIVE, RECEIPT, prune_submission_files, submission_folder, tree_bytes
from arena.competition.reads import ReadAllowance, wait_line
from arena.config import BotSpec, CompetitionSettings, TournamentConfig
from arena.hosting.sandbox import Limits
from arena.lobby.tokens import new_token, token_digest
from arena.tournament.result import GameResult
from arena.tournament.runner import Tournament
from referee.dealing import commitment

#: The name of an upload being taken in (``OUTPUT/submissions/incoming-<hex>``), moved to its
#: submission's folder once kept (:meth:`Desk.receive`).
INCOMING_PREFIX = "incoming-"
#: The book's meta key set by ``arena competition freeze``.
FROZEN_KEY = "frozen_at"
#: The book's meta key of the final's master seed (hex), drawn at the freeze (arena/competition/final.py).
SEED_KEY = "final_seed"
#: What a "version" of "next" or empty asks for.
NEXT = ("", "next")
#: The note on a remote entry in play none of whose workers has connected to the lobby since ``arena serve``
#: started (:meth:`Desk.note`): its games are passed over, not forfeited, until the first one comes.
WAITING_NOTE = "its games wait for its workers: none has connected yet (no game is forfeited for that meanwhile)"


def note_of(sub: Submission, waiting: bool) -> str:
    """What the competitor is told of ``sub`` beside its status (``arena submissions``, the wire's ``reason``,
    ``/me``): its book's reason, or :data:`WAITING_NOTE` for a remote entry in play whose games wait for its
    first worker (``waiting``: the live lobby's word, or the store's list the web reads,
    :data:`arena.tournament.runner.WAITING_KEY`)."""
    if sub.kind == "remote" and sub.status in IN_PLAY and not sub.retired and not sub.reason and waiting:
        return WAITING_NOTE
    return sub.reason


class Refused(Exception):
    """A request the desk refuses: ``kind`` is ``invalid``, ``exhausted``, ``frozen``, ``exists``,
    ``not_found``, ``stopping``, ``disqualified`` or ``revoked``; ``str(e)`` is one line."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Header:
    """A submission's header: the bot's ``name``, ``version`` (or ``next``), ``kind`` (``""``: found
    from the files; ``python``, ``node``) and ``entry``."""

    name: str
    version: str
    kind: str
    entry: str


@dataclass
class Desk:
    """See the module docstring. ``wake`` tells the build queue a submission arrived; ``house``: the
    host's bots' names (before any ``@version``), which no competitor may submit under, nor under a
    name too like one (:func:`arena.competition.book.name_key`). ``intake``: held while a submission is
    kept and its files moved in (the build queue's :attr:`arena.competition.pipeline.BuildQueue.intake`:
    it waits on it before calling a submission's files lost)."""

    settings: CompetitionSettings
    output: Path
    book: CompetitionBook
    wake: Callable[[], None]
    enroll: Callable[[], None] = lambda: None
    players: int = 2
    games: dict[str, int] = dataclasses.field(default_factory=dict)
    house: frozenset[str] = frozenset()
    _counted: bool = False
    intake: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    reads: ReadAllowance = dataclasses.field(default_factory=ReadAllowance)
    #: Whether a worker of a bot (its entrant's name) has connected to the league's lobby since it started
    #: (:meth:`arena.lobby.service.Lobby.came`); None: not known (no note, :meth:`note`).
    workers_came: Callable[[str], bool] | None = None
    #: Keeps a new remote entry's bot token (its entrant's name, the token's SHA-256 hex, and ``keep``, which
    #: stores it in the league's store) as :meth:`register_remote` answers: the league's lobby stores it and
    #: accepts it in one step (:meth:`arena.lobby.tokens.TokenBook.tell`), so a worker started at once is not
    #: refused until the league reloads. By default only stored (no lobby in this process).
    keep_token: Callable[[str, str, Callable[[], None]], None] = lambda entrant, digest, keep: keep()
    #: The uploads under way (their refusal's id: the competitor), from :meth:`begin_upload` until
    #: :meth:`settle`; those left when the arena stops are forgiven (:meth:`stop_uploads`).
    _under_way: dict[int, str] = dataclasses.field(default_factory=dict)
    #: The time now (UNIX seconds): injected by tests that cross a midnight.
    clock: Callable[[], float] = time.time
    _uploads_stopped: bool = False
    _uploads_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def note(self, sub: Submission) -> str:
        """What the competitor is told of ``sub`` beside its status (the wire's ``reason``): :func:`note_of`,
        from the live lobby."""
        return note_of(sub, self.workers_came is not None and not self.workers_came(sub.entrant))

    def limits(self, kind: str = "") -> IntakeLimits:
        """The intake's limits of ``[competition]`` for a submission of ``kind`` (an ``image``'s upload
        limit is ``image_upload_bytes``)."""
        s = self.settings
        upload = s.image_upload_bytes if kind == "image" else s.upload_bytes
        return IntakeLimits(upload, s.unpacked_bytes, s.files)

    def check_open(self, competitor: str, now: float, under_way: int = 0, charged: float | None = None) -> None:
        """:raises Refused: submissions frozen (naming the final's seed commitment: every competitor who tries
        learns it before the final is played, so the host cannot draw another unseen), or ``competitor`` at
        the per-day limit (with when to retry), or at ``refused_per_day`` (not counting ``under_way`` refusals:
        their uploads' own, :meth:`begin_upload`). The limits are those of the UTC day of ``charged`` (UNIX
        seconds; ``now`` by default): an upload is charged to the day it began, whenever it ends."""
        frozen = self.book.get_meta(FROZEN_KEY)
        if frozen is not None:
            seed = self.book.get_meta(SEED_KEY)
            committed = f" (its master seed's SHA-256: {commitment(bytes.fromhex(seed))})" if seed else ""
            raise Refused("frozen", f"submissions are frozen since {_utc(float(frozen))}: the final evaluation is "
                                    f"on{committed}")
        at = now if charged is None else charged
        day = at - at % DAY_S
        retry = day + DAY_S
        made = self.book.count_since(competitor, day, until=retry)
        if made >= self.settings.submissions_per_day:
            raise Refused("exhausted", f"{made} submissions today, the limit of a day: try again after "
                                       f"{_utc(retry)} (in {max(0, int(retry - now))} s)")
        refused = self.book.refusals_since(competitor, day, until=retry) - under_way
        if refused >= self.settings.refused_per_day:
            raise Refused("exhausted", f"{refused} uploads of yours refused today, the limit of a day (check a bot "
                                       f"with arena bots build and python -m sdk.conformance first): try again "
                                       f"after {_utc(retry)} (in {max(0, int(retry - now))} s)")

    def begin_upload(self, competitor: str, now: float) -> int:
        """An upload of ``competitor`` begins (its header came): :meth:`check_open`, then count it as refused
        (``refused_per_day``) until :meth:`receive` keeps it. So an upload whose call ends before it is taken in
        (its client cancelled it while sending, its connection broke, the arena stopped), or that is refused
        while it is sent (over the upload limit, a message that is no chunk, too slow), stays counted: each cost
        the server up to ``upload_bytes`` of disk writes, and no later step (a second cancel, a book closed
        at shutdown, a kill) can lose the count; only the arena's own stop forgives it (:meth:`stop_uploads`).
        The upload is charged to the UTC day of ``now`` (UNIX seconds), whenever it ends (:meth:`receive`).
        Returns the refusal's id, for :meth:`receive` and :meth:`settle`.
        :raises Refused: as :meth:`check_open`, or ``stopping`` (nothing counted)."""
        with self._uploads_lock:
            if self._uploads_stopped:
                raise Refused("stopping", "the arena is stopping: upload again once it is back (not counted)")
            self.check_open(competitor, now)
            counted = self.book.add_refusal(competitor, now)
            self._under_way[counted] = competitor
            return counted

    def settle(self, counted: int) -> None:
        """The upload counted by ``counted`` (:meth:`begin_upload`) is under way no more: kept, refused, or
        withdrawn by its client (counted). Called as its call ends, or as its client cancels it."""
        with self._uploads_lock:
            self._under_way.pop(counted, None)

    def stop_uploads(self) -> int:
        """The arena stops: refuse every later upload (``stopping``) and forgive those under way, which the
        stop cuts short through no fault of their competitors (an honest upload was charged to its competitor
        as refused at every restart). Call before the book closes. Returns how many were forgiven."""
        with self._uploads_lock:
            self._uploads_stopped = True
            cut, self._under_way = self._under_way, {}
        for counted, competitor in cut.items():
            self.book.forgive_refusal(competitor, counted)
        return len(cut)

    def check_read(self, competitor: str) -> None:
        """Count one read of ``competitor`` (a listing, a submission, a seat log) against ``reads_per_minute``.
        :raises Refused: ``exhausted``, with the limit and when to try again (nothing counted)."""
        per_minute = self.settings.reads_per_minute
        wait = self.reads.take(competitor, per_minute)
        if wait:
            raise Refused("exhausted", wait_line(per_minute, wait))

    def owned(self, competitor: str, sid: int) -> Submission:
        """Submission ``sid`` if it is ``competitor``'s. :raises Refused: ``not_found``, the same line for
        an id that is no submission and for another competitor's (else a competitor could tell which ids
        exist)."""
        sub = self.book.get(sid)
        if sub is None or sub.competitor != competitor:
            raise Refused("not_found", f"no submission {sid} of yours")
        return sub

    def receive(self, competitor: str, header: Header, archive: IO[bytes], counted: int) -> Submission:
        """Unpack ``archive``, check the bot (kind, entry), keep it as a ``received`` submission with its
        receipt (the archive's SHA-256 and size: :data:`arena.competition.pipeline.RECEIPT`) and wake
        the queue. The freeze and the per-day limit are checked again as the submission is kept (uploads
        that passed :meth:`check_open` together cannot all be kept past the limit). A refusal once the
        archive is taken in (``invalid``, ``exists``) is noted in the book (``refused_per_day``), and so is an
        upload whose call ended meanwhile (``invalid``: the Submission service's ``archive``, made by
        :func:`arena.competition.intake.withdrawable`, raises at its next read). ``counted``: the refusal that
        counts the upload already (:meth:`begin_upload`, the one way an upload is counted): kept if it is refused,
        forgiven if it is kept or fails by the arena's fault. The upload is charged to the UTC day it began
        (:meth:`begin_upload`'s ``now``): the limits checked as it is kept are that day's, and so is the
        submission's ``created_at``, so an upload that spans a midnight counts in one day only.
        :raises Refused: ``invalid`` (one line from the intake or the plan), ``exists``, ``exhausted``,
        ``frozen``."""
        from arena.hosting.bots_build import BuildError, check_image_name

        self._check_not_house(header.name)
        try:  # a name docker cannot tag was taken, the image loaded or built, then `failed` (the arena's fault,
            # not counted): an uploaded image's archive and its loaded image stayed on the host for each one
            self.book.check_name_free(competitor, header.name)  # its line first, as add_submission's
            check_image_name(header.name)
        except BookError as e:
            raise Refused("exists", str(e)) from None
        except BuildError as e:
            raise Refused("invalid", str(e)) from None
        version = self.book.next_version(header.name) if header.version in NEXT else header.version
        incoming = self.output / "submissions" / f"{INCOMING_PREFIX}{secrets.token_hex(8)}"
        try:
            digest, size = archive_digest(archive)
            (self.output / "submissions").mkdir(mode=0o700, parents=True, exist_ok=True)
            incoming.mkdir(mode=0o700)
            kind, entry = self._take(archive, incoming, header, version)
            write_receipt(incoming / RECEIPT, digest, size)
            with self.intake:  # the files are in place before the queue may look (it waits on this lock)
                now = self.clock()
                # its refusal's time, kept in the book until it is forgiven: a settle that came first (its client
                # withdrew it once the archive was read) does not move it to the day it ends
                began = self.book.refusal_at(competitor, counted)
                began = now if began is None else began
                self.check_open(competitor, now, under_way=1, charged=began)
                sub = self.book.add_submission(competitor, header.name, version, kind, entry, at=began)
                final = submission_folder(self.output, sub.id).parent
                shutil.rmtree(final, ignore_errors=True)
                os.replace(incoming, final)  # failing (or a kill before it), the queue marks it failed
        except (IntakeError, BuildError) as e:
            shutil.rmtree(incoming, ignore_errors=True)  # the plan names its folder: the server's path, not theirs
            raise Refused("invalid", str(e).replace(str(incoming / "bot"), "the archive")) from None
        except BookError as e:
            shutil.rmtree(incoming, ignore_errors=True)
            raise Refused("exists", str(e)) from None
        except Exception:  # Refused (frozen, a limit reached meanwhile), or a failure of the arena's: the upload's
            # files go whatever happened, and so does its count (as before an upload was counted as it began)
            shutil.rmtree(incoming, ignore_errors=True)
            self.book.forgive_refusal(competitor, counted)
            raise
        self.book.forgive_refusal(competitor, counted)  # kept: not refused
        self.wake()
        return sub

    def _check_not_house(self, name: str) -> None:
        """:raises Refused: ``exists``, ``name`` is a house bot's (its entrant ``name@version`` could be the
        house bot's own, with its games, logs and token), or too like one (the same :func:`name_key`: on
        the leaderboard ``house2.@1`` passes for the house bot ``house2``)."""
        if name in self.house:
            raise Refused("exists", f"the bot name {name!r} belongs to the host's bots: choose another --name")
        like = sorted(h for h in self.house if name_key(h) == name_key(name))
        if like:
            raise Refused("exists", f"the bot name {name!r} is too like {like[0]!r}, a name of the host's bots: "
                                    "choose another --name")

    def _take(self, archive: IO[bytes], incoming: Path, header: Header, version: str) -> tuple[str, str]:
        """Take the archive into ``incoming``: unpacked to ``bot/`` (its kind and entry found by ``arena bots
        build``'s plan), or a prebuilt image copied to ``image.tar``; returns (kind, entry).
        :raises IntakeError, BuildError: what :meth:`receive` refuses as ``invalid`` (a kind given that is not
        the files' included)."""
        from arena.hosting.bots_build import BuildError, check_name_version, plan_build

        if header.kind == "image":
            check_name_version(header.name, version)
            copy_image_archive(archive, incoming / IMAGE_ARCHIVE, self.settings.image_bytes, self.settings.image_files)
            return "image", ""
        unpack(archive, incoming / "bot", self.limits())
        plan = plan_build(incoming / "bot", header.name, version, header.entry or None)
        if header.kind and header.kind != plan.kind:
            raise BuildError(f"kind {header.kind} was given, but the files make a {plan.kind} bot")
        return plan.kind, plan.entry

    def register_remote(self, competitor: str, name: str, version: str) -> tuple[Submission, str]:
        """Enroll a remote bot of ``competitor`` at once; returns its entry and its bot token (only the
        token's SHA-256 is kept, in the league's store); the freeze and the per-day limit are checked as it
        is kept, and whether they are disqualified in one step with the entry and its token kept
        (:meth:`arena.competition.book.CompetitionBook.add_remote`: a disqualification at that moment refuses
        it, or revokes its token). :raises Refused: as :meth:`receive`, or ``disqualified`` (its line)."""
        from arena.hosting.bots_build import BuildError, check_name_version

        self._check_not_house(name)
        version = self.book.next_version(name) if version in NEXT else version
        try:
            check_name_version(name, version)
        except BuildError as e:
            raise Refused("invalid", str(e)) from None
        token = new_token()
        made: list[Submission] = []
        now = self.clock()  # the day it is checked against is the day it is charged to (created_at)

        def keep() -> None:  # accepted in the same step: a reload that read the book after the tell names it
            kept = self.book.add_remote(competitor, name, version, self._store_token(token_digest(token)), at=now)
            made.append(kept)

        try:
            with self.intake:
                self.check_open(competitor, now)
                self.keep_token(f"{name}@{version}", token_digest(token), keep)
        except Disqualified as e:
            raise Refused("disqualified", str(e)) from None
        except Revoked as e:
            raise Refused("revoked", str(e)) from None
        except BookError as e:
            raise Refused("exists", str(e)) from None
        if self.book.retire_over(competitor, self.settings.in_play):
            # a retired folder bot's unpacked files: nothing needs them now. The registration stands if they
            # cannot be removed (its token is only told here; the build queue's next prune tries again, and says so)
            with self.intake, contextlib.suppress(OSError):
                prune_submission_files(self.book, self.output)
        self.enroll()
        return self.owned(competitor, made[0].id), token

    def _store_token(self, digest: str) -> Callable[[str], None]:
        """What stores the token ``digest`` (SHA-256 hex) of an entrant in the league's store (``arena.sqlite``)."""
        from arena.tournament.runner import DB_NAME
        from arena.tournament.store import Store

        def store_token(entrant: str) -> None:
            with Store(self.output / DB_NAME) as store:
                store.add_token(entrant, digest)
        return store_token

    def select(self, competitor: str, sid: int) -> Submission:
        """Choose ``competitor``'s final entry. :raises Refused: not theirs, or never accepted."""
        sub = self.owned(competitor, sid)
        if sub.status not in IN_PLAY:
            raise Refused("frozen", f"submission {sid} is {sub.status}: only an accepted one can be chosen")
        if sub.removed or not self.book.select(competitor, sid):  # its image removed (perhaps just now)
            raise Refused("frozen", f"submission {sid} is retired and its image removed (past versions_kept): "
                          "choose a version whose image is kept")
        return sub

    def entrants(self, competitor: str) -> set[str]:
        """Every entrant ``competitor`` ever had enrolled (retired ones too: their games stay theirs)."""
        return {s.entrant for s in self.book.submissions(competitor, statuses=IN_PLAY)}

    def grow(self, config: TournamentConfig) -> TournamentConfig:
        """``config`` with every accepted, unretired submission as a container bot ``name@version``
        (:func:`grow_config`)."""
        return grow_config(config, self.book, self.settings)

    def after_game(self, result: GameResult, t: Tournament) -> None:
        """Count the game for its entrants; move them to ``playing``, or ``rated`` when none of their
        scheduled games is pending."""
        if not self._counted:
            self._counted = True
            for r in t.store.results():
                for name in set(r.sides):
                    self.games[name] = self.games.get(name, 0) + 1
        else:
            for name in set(result.sides):
                self.games[name] = self.games.get(name, 0) + 1
        pending = {name for g in t.store.pending(t.schedule) for name in g.seats}
        for sub in self.book.submissions(statuses=("accepted", "playing")):
            if sub.entrant in result.sides or sub.entrant not in pending:
                status = "playing" if sub.entrant in pending else "rated"
                if status != sub.status and self.games.get(sub.entrant, 0) > 0:
                    self.book.set_status(sub.id, status, image=sub.image)


def grow_config(config: TournamentConfig, book: CompetitionBook, settings: CompetitionSettings) -> TournamentConfig:
    """``config`` with every accepted, unretired submission of ``book`` as a bot ``name@version`` (a container
    bot with ``settings``' limits, or a remote one), but those of a disqualified competitor: the league
    ``arena serve`` plays (:meth:`Desk.grow`), and the one ``arena competition close`` publishes."""
    taken = {b.name for b in config.bots} | set(book.disqualified_entrants())
    limits = Limits(cpus=settings.cpus, memory_mb=settings.memory_mb)
    extra = tuple(
        BotSpec(sub.entrant, sub.version, (), mode="remote") if sub.kind == "remote" else
        BotSpec(sub.entrant, sub.version, (), image=sub.image, limits=limits)
        for sub in book.submissions(statuses=IN_PLAY)
        if not sub.retired and sub.entrant not in taken
    )
    return dataclasses.replace(config, bots=config.bots + extra)


def archive_digest(archive: IO[bytes]) -> tuple[str, int]:
    """The SHA-256 (hex) and size of what is left of ``archive`` (a seekable file), which is then read
    again from where it was."""
    start = archive.tell()
    h, size = hashlib.sha256(), 0
    while chunk := archive.read(1 << 20):
        h.update(chunk)
        size += len(chunk)
    archive.seek(start)
    return h.hexdigest(), size


def write_receipt(path: Path, digest: str, size: int) -> None:
    """Write an upload's receipt (``{"sha256": …, "bytes": …}``) to ``path``, 0600 (a new file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"sha256": digest, "bytes": size}, f)
        f.write("\n")


def remove_partial_uploads(output: Path) -> tuple[int, int]:
    """Remove every upload an arena left half taken in (``OUTPUT/submissions/incoming-*``: killed during
    :meth:`Desk.receive`); returns (folders, bytes) removed. Only at ``arena serve``'s start, under its
    output lock, before the Submission service takes an upload: none is in use then."""
    folders = size = 0
    for d in (output / "submissions").glob(f"{INCOMING_PREFIX}*"):
        if d.is_dir() and not d.is_symlink():
            size += tree_bytes(d)
            shutil.rmtree(d, ignore_errors=True)
            folders += 1
    return folders, size


def _utc(t: float) -> str:
    """UNIX seconds as ``2026-12-03T00:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
