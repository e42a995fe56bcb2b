"""One game's result as the arena stores, rates and shows it: :class:`GameResult` (typed from the
game runner to the store, games.jsonl, the ratings, the failure tally, the metrics and the web),
each seat's :class:`Failures`, and :func:`forfeit_result`, the one builder of a game decided without
a match.

The store keeps the details beside the columns as one JSON object (``games.extra``: ``status``,
``terminations``, ``think_ms``, ``referee``, ``failures``, ``phases_ms``, ``workers``, ``attempt``;
:meth:`GameResult.details` / :meth:`GameResult.from_stored`); rows written by older arenas are read
the same way (their statuses ``MATCH_STATUS_COMPLETED``, ``FORFEITED_BEFORE_START``, …).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TypedDict

from arena.tournament.schedule import ScheduledGame
from referee.outcome import MatchStatus, Termination
from referee.rules.seats import side_of

_SINGULAR = {
    "forfeits": "forfeit",
    "exceptions": "exception",
    "fallbacks": "fallback",
    "rejections": "rejection",
    "timeouts": "timeout",
    "crashes": "crash",
}
#: JSON as the store and games.jsonl hold it.
Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


class SeatDetails(TypedDict, total=False):
    """The per-seat details a game has, in games.jsonl and the store alike: ``terminations``
    (:class:`Termination` values), and for a game on a referee ``referee`` (``host:port``) and
    ``failures`` (:meth:`Failures.to_dict`), ``workers`` (the lobby's worker id, None at a per-game seat)."""

    terminations: list[str]
    referee: str
    failures: list[dict[str, int]]
    workers: list[str | None]


class StoredDetails(SeatDetails, total=False):
    """The store's ``extra`` column (:meth:`GameResult.details`): the seats' details, the match's
    ``status`` (:class:`MatchStatus` value), and for a game on a referee ``think_ms``, ``phases_ms``
    (create / play / record) and ``attempt`` (when not the first)."""

    status: str
    think_ms: int
    phases_ms: dict[str, float]
    attempt: int


#: A bot's last output as a reason quotes it (:func:`arena.play.environment.log_tail`, which keeps no
#: parenthesis of the bot's text, so the quote ends at the first ``)``).
_LAST_OUTPUT = re.compile(r" \(last output: [^()]*\)")
#: Where a reason stored before log_tail kept no parenthesis quotes the bot (cut from there to the end).
_LAST_OUTPUT_START = " (last output: "


def public_reason(reason: str) -> str:
    """``reason`` as the public pages show it: without the bot's last output it may quote. That output is
    its author's log, private to them as every bot log is (another competitor's log is refused), and during
    a game a bot may print its cards, whose deal stays secret until its duplicate twin is played (the
    host's games.jsonl and terminal keep it). E.g. ``seat 1 (x) crash: process exited with status 1 before
    the match ended (last output: 4H TH) (the referee saw disconnect: …)`` -> ``… before the match ended
    (the referee saw disconnect: …)``."""
    line = _LAST_OUTPUT.sub("", reason)
    return line.split(_LAST_OUTPUT_START)[0]


class GameFacts(SeatDetails):
    """A game as games.jsonl and the web show it, but its deal ``seed`` (:class:`GameRow`): the ratings'
    input ``a``, ``b``, ``score`` (``a``'s: 1 or 0; ``None`` for a game without a winner, which is not
    rated: :attr:`GameResult.score_a`) and ``pair``; the game's ids, ``scores`` per
    side, ``winner`` (side or None), ``reasons``, ``record`` (path in the output folder),
    ``first_dealer``, ``duration_s``; and the details the game has: ``terminations`` (per seat,
    :class:`Termination` values), ``referee``, ``failures`` (per seat, :meth:`Failures.to_dict`),
    ``workers`` (per seat)."""

    a: str
    b: str
    score: float | None
    pair: str
    game_id: str
    match_id: str
    scores: list[int]
    winner: int | None
    reasons: list[str]
    record: str | None
    first_dealer: int
    duration_s: float


class GameRow(GameFacts):
    """One line of games.jsonl (:meth:`GameResult.rating_row`): the :class:`GameFacts` and the deal
    ``seed`` (hex; public once the master seed is)."""

    seed: str


@dataclass(frozen=True, slots=True)
class Unplayed:
    """Why a bot's side forfeits a game without a match: its seats' ``termination`` (``not_started``,
    ``broken``, ``no_show``) and ``why``, the reason's text (one line, e.g. ``"broken: its workers
    died 3 times in a row"``, ``"the bot failed its check before the first game: …"``)."""

    termination: Termination
    why: str


@dataclass(slots=True)
class Failures:
    """Counts of one seat in one game, or of one bot over a tournament (all ``int``, default 0); see
    :mod:`arena.report.failures`."""

    forfeits: int = 0
    exceptions: int = 0
    fallbacks: int = 0
    rejections: int = 0
    timeouts: int = 0
    crashes: int = 0

    def add(self, other: Failures | Mapping[str, Json]) -> None:
        """Add ``other`` (a :class:`Failures` or its dict; unknown keys ignored) to these counts."""
        for f in fields(self):
            # read a Failures' counts as they are (asdict deep-copies: a publication adds every game's seats)
            n = getattr(other, f.name) if isinstance(other, Failures) else other.get(f.name, 0)
            setattr(self, f.name, getattr(self, f.name) + (int(n) if isinstance(n, int | float) else 0))

    def to_dict(self) -> dict[str, int]:
        """JSON-ready."""
        return asdict(self)

    def summary(self) -> str:
        """The non-zero counts, e.g. ``"2 forfeits, 14 exceptions, 14 fallbacks"``; ``""`` when none."""
        counts = [(f.name, getattr(self, f.name)) for f in fields(self)]
        return ", ".join(f"{n} {name if n != 1 else _SINGULAR[name]}" for name, n in counts if n)


@dataclass(frozen=True, slots=True)
class GameResult:
    """The result of one scheduled game as the arena stores it.

    ``sides``: bot names on side 0 and side 1; ``scores``: game points of side 0 and side 1 (``(0, 0)``
    for a game decided without a match: no point was played); ``winner``: 0, 1, or ``None`` (no winner:
    both sides failed, not rated, :attr:`score_a`); ``reasons``: human-readable, the failing seat's cause
    first (e.g. ``"side 0 (a) reached 14"``, ``"seat 1 (b) crash: process exited with status 1 …"``);
    ``record_path``: the match record, relative to the output folder, if any; ``duration_s``: wall time
    of the game in seconds.

    Details (absent for a simulated game): ``status``; ``terminations`` (one per seat); and for a game
    played on a referee ``think_ms`` (time banks used, all seats), ``referee`` (``host:port``),
    ``failures`` (per seat), ``phases_ms`` (create / play / record), ``workers`` (the lobby's worker id
    per seat, None at a per-game seat; None when no seat had a worker), ``attempt`` (1: the first
    referee played it).

    ``stored_at``: when the store wrote it (Unix seconds; ``None`` until then: :meth:`Store.results
    <arena.tournament.store.Store.results>` fills it, and so does the run loop in the result it reports as
    written; the ladder's per-day budget counts by it); the
    store's, not the game's, so not part of equality.
    """

    game_id: str
    match_id: str
    pair_id: str
    sides: tuple[str, str]
    scores: tuple[int, int]
    winner: int | None
    reasons: tuple[str, ...]
    record_path: str | None
    seed_hex: str
    first_dealer: int
    duration_s: float = 0.0
    status: MatchStatus | None = None
    terminations: tuple[Termination, ...] = ()
    think_ms: int | None = None
    referee: str | None = None
    failures: tuple[Failures, ...] = ()
    phases_ms: Mapping[str, float] | None = None
    workers: tuple[str | None, ...] | None = None
    attempt: int = 1
    stored_at: float | None = field(default=None, compare=False)  # the store's, not the game's

    @property
    def score_a(self) -> float | None:
        """Side 0's score for ratings: 1 win, 0 loss; ``None`` without a winner. A stored game has no
        winner only when both sides forfeited and nothing was played (both bots broken or failing their
        check, or neither side's seats showing up): that says nothing about which bot is stronger, so it
        is not a rating input (it used to count as a draw, pulling the two ratings together). Both
        bots' forfeits still count."""
        return None if self.winner is None else 1.0 - float(self.winner)

    def rating_row(self) -> GameRow:
        """The games.jsonl line (:class:`GameRow`): the ratings input (``a``, ``b``, ``score``, ``pair``)
        plus details; ``terminations`` (per seat, e.g. ``["normal", "timeout"]``), ``referee``,
        ``failures`` and ``workers`` when the game has them (see the class)."""
        row: GameRow = {
            "a": self.sides[0],
            "b": self.sides[1],
            "score": self.score_a,
            "pair": self.pair_id,
            "game_id": self.game_id,
            "match_id": self.match_id,
            "scores": list(self.scores),
            "winner": self.winner,
            "reasons": list(self.reasons),
            "record": self.record_path,
            "seed": self.seed_hex,
            "first_dealer": self.first_dealer,
            "duration_s": round(self.duration_s, 4),
            **self.seat_details(),
        }
        return row

    def seat_details(self) -> SeatDetails:
        """The per-seat details this game has (see :class:`SeatDetails`)."""
        out: SeatDetails = {}
        if self.terminations:
            out["terminations"] = [t.value for t in self.terminations]
        if self.referee is not None:
            out["referee"] = self.referee
            out["failures"] = [f.to_dict() for f in self.failures]
        if self.workers is not None:
            out["workers"] = list(self.workers)
        return out

    def details(self) -> StoredDetails:
        """The details as the store's ``extra`` column holds them (only those the game has)."""
        out: StoredDetails = {}
        if self.status is not None:
            out["status"] = self.status.value
        if self.referee is not None:
            out["think_ms"] = self.think_ms or 0
        if self.phases_ms is not None:
            out["phases_ms"] = dict(self.phases_ms)
        if self.attempt != 1:
            out["attempt"] = self.attempt
        return {**self.seat_details(), **out}

    @classmethod
    def from_stored(
        cls, columns: Sequence[object], details: Mapping[str, Json], stored_at: float | None = None
    ) -> GameResult:
        """A result from the store's columns (game_id … duration_s, in :class:`GameResult`'s field
        order, ``reasons`` decoded), its ``extra`` JSON object (old rows' spellings included) and,
        when read, its ``stored_at`` column."""
        gid, mid, pair, side0, side1, score0, score1, winner, reasons, record, seed, dealer, duration = columns
        status = _stored_status(details.get("status"))
        terms = tuple(_stored_termination(t) for t in _list(details.get("terminations")))
        scores = (int(str(score0)), int(str(score1)))
        if details.get("status") == "FORFEITED_BEFORE_START":  # an older arena's second forfeit builder
            scores, terms = (0, 0), _unplayed_terminations(Termination.NOT_STARTED, (str(side0), str(side1)),
                                                           winner, len(terms))
        phases = details.get("phases_ms")
        workers = details.get("workers")
        return cls(
            str(gid), str(mid), str(pair), (str(side0), str(side1)), scores,
            None if winner is None else int(str(winner)), tuple(str(r) for r in _list(reasons)),
            None if record is None else str(record), str(seed), int(str(dealer)), float(str(duration)),
            status=status,
            terminations=terms,
            think_ms=_int_or_none(details.get("think_ms")),
            referee=None if details.get("referee") is None else str(details.get("referee")),
            failures=tuple(_failures(f) for f in _list(details.get("failures"))),
            phases_ms={str(k): float(str(v)) for k, v in phases.items()} if isinstance(phases, dict) else None,
            workers=tuple(None if w is None else str(w) for w in workers) if isinstance(workers, list) else None,
            attempt=_int_or_none(details.get("attempt")) or 1,
            stored_at=stored_at,
        )


def forfeit_reason(side: int, label: str, why: str) -> str:
    """The reason line of side ``side`` (0 or 1, its entrant ``label``) forfeiting a game decided without a match
    (:func:`forfeit_result`), e.g. ``side 1 (x@1) forfeited: its bot could not start``."""
    return f"side {side} ({label}) forfeited: {why}"


def forfeit_result(game: ScheduledGame, failed: Mapping[str, Unplayed]) -> GameResult:
    """The result of a game decided without a match: the sides of the bots in ``failed`` (bot name ->
    its :class:`Unplayed`: ``not_started``, ``broken`` or ``no_show``, and why) forfeit; no winner
    when both do. Their seats end with that termination, the others ``other_seat_forfeited``.

    Scores are ``(0, 0)``: no point was played, as a referee reports a match forfeited before its
    first point; the winner alone decides the rating. The match id is ``"forfeit-<game id>"`` (no
    referee was involved); there is no record.
    """
    lost = [side for side in (0, 1) if game.sides[side] in failed]
    winner = None if len(lost) != 1 else 1 - lost[0]
    reasons = tuple(forfeit_reason(side, game.sides[side], failed[game.sides[side]].why) for side in lost)
    terminations = tuple(failed[b].termination if b in failed else Termination.OTHER_SEAT_FORFEITED for b in game.seats)
    return GameResult(
        game_id=game.game_id,
        match_id=f"forfeit-{game.game_id}",
        pair_id=game.pair_id,
        sides=game.sides,
        scores=(0, 0),
        winner=winner,
        reasons=reasons,
        record_path=None,
        seed_hex=game.seed.hex(),
        first_dealer=game.first_dealer,
        duration_s=0.0,
        status=MatchStatus.FORFEITED,
        terminations=terminations,
    )


def _unplayed_terminations(
    why: Termination, sides: tuple[str, str], winner: object, seats: int
) -> tuple[Termination, ...]:
    """Per seat of an old unplayed forfeit: ``why`` on the losing side(s), ``other_seat_forfeited`` on the winner's."""
    return tuple(
        Termination.OTHER_SEAT_FORFEITED if winner is not None and side_of(seat) == winner else why
        for seat in range(seats)
    )


def _stored_status(value: Json) -> MatchStatus | None:
    """A stored status: this arena's (``"completed"``) or an older one's (``"MATCH_STATUS_COMPLETED"``,
    ``"FORFEITED_BEFORE_PLAY"``, ``"FORFEITED_BEFORE_START"``)."""
    if not isinstance(value, str):
        return None
    name = value.lower().removeprefix("match_status_")
    if name.startswith("forfeited"):
        return MatchStatus.FORFEITED
    try:
        return MatchStatus(name)
    except ValueError:
        return MatchStatus.UNSPECIFIED


def _stored_termination(value: Json) -> Termination:
    """A stored termination (``""`` from an older arena: a value it did not know)."""
    try:
        return Termination(str(value))
    except ValueError:
        return Termination.UNSPECIFIED


def _list(value: object) -> Iterable[Json]:
    return value if isinstance(value, list) else ()


def _int_or_none(value: Json) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def _failures(value: Json) -> Failures:
    counts = Failures()
    if isinstance(value, dict):
        counts.add(value)
    return counts
