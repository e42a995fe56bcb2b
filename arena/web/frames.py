"""A match record replayed into *frames*: what the replay viewer shows, one frame a step.

A record (docs/record.md, JSON lines) is walked through the rules engine; after each step (a game
starting, a deck dealt, an action, a rejected answer, a game's end, the result) one frame is made.
Every frame is built from :func:`referee.rules.observe` — the observation the referee sent — so a
per-seat view holds exactly what that seat could see at that moment and nothing else:

- ``view="all"`` (all hands): each seat's hand is ``observe(state, seat).hand``;
- ``view=K`` (seat ``K``): only seat ``K``'s hand; the others are ``null`` (the viewer draws
  ``hand_sizes`` card backs), rejected answers of other seats are left out (the referee tells only
  the seat that sent one), and so are other seats' termination details in the result (the record
  keeps the engine's full message, which may name a card the seat held).

The deck orders of the record's ``deal`` lines and its ``seed`` line never reach a frame.

A frame (JSON-ready: :class:`Frame`)::

    {"i": 0, "game": 1, "deal": 1, "kind": "deal" | "game" | "action" | "rejected" | "game_end" | "result",
     "text": "seat 1 (heuristic) begs", "events": ["kick JH", "side 0 scores 3 for kick (3-0)"],
     "trick_done": false, "phase": "beg", "dealer": 0, "to_act": 1, "scores": [0, 0],
     "trump": "H" | null, "kicks": ["JH"], "begged": false,
     "hands": [["TH", ...] | null, ...], "hand_sizes": [6, 6], "exposed": [[seat, "TH"]],
     "called": "TH" | null, "trick_leader": 1, "trick": ["TH"],
     "tricks": [{"leader": 1, "cards": ["TH", "2H"], "winner": 0}],
     "points": [{"side": 0, "kind": "kick", "value": 3}], "games_won": [0, 0]}

``trick_done`` marks the step that completed a trick (the viewer's "next trick"), with ``won_trick``
(``{"winner": seat, "cards": [...]}``); ``kind == "deal"``
starts a deal (its "next deal"). Errors: :class:`RecordReplayError` (one line) for a record whose
lines do not apply (``python -m referee.verify`` says exactly why).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from referee.events import Event, step_events
from referee.rules import (
    Action,
    Observation,
    RuleError,
    RuleSet,
    State,
    apply,
    deal,
    new_game,
    observe,
    parse_action,
    parse_deck,
)

#: ``view`` of the all-hands replay.
ALL = "all"


class RecordReplayError(ValueError):
    """A record line that cannot be replayed (malformed, or an action the engine refuses)."""


class TrickView(TypedDict):
    """A completed trick of the deal: who ``leader`` led, the ``cards`` in play order, the ``winner`` seat."""

    leader: int
    cards: list[str]
    winner: int | None


class PointsView(TypedDict):
    """Points scored in the deal: ``value`` points to ``side`` for ``kind`` (``kick``, ``high``, ...)."""

    side: int
    kind: str
    value: int


class TableView(TypedDict, total=False):
    """The table of a frame, from one observation (:func:`observation_frame` sets every key; a frame
    before the first game has none). Cards in notation (``"TH"``); ``hands`` per seat, ``None`` for a
    hand the view may not see; ``exposed`` as ``[seat, card]``."""

    phase: str
    dealer: int
    to_act: int | None
    scores: list[int]
    trump: str | None
    kicks: list[str]
    begged: bool
    hands: list[list[str] | None]
    hand_sizes: list[int]
    exposed: list[list[int | str]]
    called: str | None
    trick_leader: int
    trick: list[str]
    tricks: list[TrickView]
    points: list[PointsView]


class WonTrick(TypedDict):
    """The trick a step completed: its ``winner`` seat and its ``cards``."""

    winner: int | None
    cards: list[str]


class ResultSeat(TypedDict):
    """One seat of the record's result line, as a frame shows it (``detail`` blank for another seat's
    view of a seat); each value as the record has it, None when absent. ``connected_at_end``: the seat's
    stream was open when the match ended (True), or it had gone before (False); None for a record
    written before the referee recorded it (unknown, not False) or a value that is not a boolean."""

    seat: int | None
    name: str | None
    termination: str | None
    detail: str | None
    strikes: int | None
    illegal: int | None
    connected_at_end: bool | None


class FrameStep(TypedDict, total=False):
    """What a step adds to its frame: ``won_trick`` (a trick completed), ``seat`` (who acted or was
    refused), ``final_scores`` (a game's end), ``result_seats`` and ``winner`` (the match's result)."""

    won_trick: WonTrick
    seat: int
    final_scores: list[int]
    result_seats: list[ResultSeat]
    winner: int | None


class Frame(TableView, FrameStep):
    """One step of the replay (see the module docstring): ``i`` (its index), ``game`` and ``deal``
    numbers, ``kind`` of step, its ``text`` and the ``events`` it caused as text, ``trick_done``,
    ``games_won`` per side, the :class:`TableView` after it and what the :class:`FrameStep` adds."""

    i: int
    game: int
    deal: int
    kind: str
    text: str
    events: list[str]
    trick_done: bool
    games_won: list[int]


class Replay(TypedDict):
    """:func:`replay_frames`: the ``view`` (:data:`ALL` or a seat), ``players``, ``seat_names``,
    ``rules`` (:meth:`RuleSet.to_dict`), the header's ``games`` and the ``frames``."""

    view: str | int
    players: int
    seat_names: list[str]
    rules: dict[str, Any]
    games: int | None
    frames: list[Frame]


def _cards(cards: Iterable[object]) -> list[str]:
    return [str(c) for c in cards]


def describe_event(ev: Event, names: Sequence[str]) -> str:
    """One line of text for a public event (e.g. ``side 0 scores 1 for high (5-3)``); '' for the
    events the step's own text already says (the action itself)."""
    k = ev.kind
    if k == "kick":
        return f"kick {ev.card}"
    if k == "trick_won":
        return f"seat {ev.seat} ({names[ev.seat or 0]}) wins the trick {' '.join(_cards(ev.cards))}"
    if k == "points_scored":
        what = ev.points_kind.replace("_", " ")
        return f"side {ev.side} scores {ev.value} for {what} ({ev.scores[0]}-{ev.scores[1]})"
    if k == "deal_ended":
        if ev.ran_dry:
            return "the pack ran dry: deal again"
        return f"deal {ev.deal} counted ({ev.scores[0]}-{ev.scores[1]})"
    return ""  # deal_started: the deal step's own text says it


_VERBS = {"stand": "stands", "beg": "begs", "give": "gives one", "run": "runs the pack", "pass": "passes"}


def describe_action(action: Action, seat: int, names: Sequence[str], out_of_turn: bool, by: str) -> str:
    """``seat 1 (heuristic) plays TH`` and the like; a timeout and a play out of turn say so."""
    text = str(action)
    if text in _VERBS:
        verb = _VERBS[text]
    elif text.startswith("call "):
        verb = f"calls {text[5:]}"
    else:
        verb = f"exposes {text} (out of turn)" if out_of_turn else f"plays {text}"
    who = f"seat {seat} ({names[seat]})"
    return f"{who} {verb}" + (" (timed out: the first legal action)" if by == "timeout" else "")


def observation_frame(obs: Observation, hands: Sequence[Sequence[object] | None]) -> TableView:
    """The table of a frame from one observation (the public part) and the ``hands`` to show."""
    return {
        "phase": obs.phase.value,
        "dealer": obs.dealer,
        "to_act": obs.to_act,
        "scores": list(obs.scores),
        "trump": None if obs.trump is None else str(obs.trump),
        "kicks": _cards(obs.kicks),
        "begged": obs.begged,
        "hands": [None if h is None else _cards(h) for h in hands],
        "hand_sizes": list(obs.hand_sizes),
        "exposed": [[s, str(c)] for s, c in obs.exposed],
        "called": None if obs.called is None else str(obs.called),
        "trick_leader": obs.trick_leader,
        "trick": _cards(obs.trick),
        "tricks": [{"leader": t.leader, "cards": _cards(t.cards), "winner": t.winner} for t in obs.tricks],
        "points": [{"side": p.side, "kind": p.kind, "value": p.value} for p in obs.points],
    }


@dataclass
class FrameBuilder:
    """Walks record lines (:meth:`line`) and collects :attr:`frames` for one ``view``.

    ``view`` is :data:`ALL` or a seat number. ``rules`` and ``names`` come from the header.
    """

    rules: RuleSet
    names: list[str]
    view: str | int = ALL
    frames: list[Frame] = field(default_factory=list)
    state: State | None = None
    game: int = 0
    games_won: list[int] = field(default_factory=lambda: [0, 0])

    def _frame(self, kind: str, text: str, events: Sequence[Event] = (), **step: Unpack[FrameStep]) -> None:
        state = self.state
        won: FrameStep = {}
        for e in events:
            if e.kind == "trick_won":  # the table may already be cleared for the next deal
                won = {"won_trick": {"winner": e.seat, "cards": _cards(e.cards)}}
        frame: Frame = {
            "i": len(self.frames),
            "game": self.game,
            "deal": 0 if state is None else state.deal_number,
            "kind": kind,
            "text": text,
            "events": [t for t in (describe_event(e, self.names) for e in events) if t],
            "trick_done": bool(won),
            "games_won": list(self.games_won),
            **self._table(state),
            **won,
            **step,
        }
        self.frames.append(frame)

    def _table(self, state: State | None) -> TableView:
        """The table as :attr:`view` sees it after the step (none before the first game)."""
        if state is None:
            return {}
        n = self.rules.players
        if self.view == ALL:
            hands: list[tuple[object, ...] | None] = [observe(state, s).hand for s in range(n)]
            obs = observe(state, 0)
        else:
            obs = observe(state, int(self.view))
            hands = [obs.hand if s == self.view else None for s in range(n)]
        return observation_frame(obs, hands)

    def line(self, o: Mapping[str, Any]) -> None:
        """Apply one record line (see docs/record.md) and add its frame.

        :raises RecordReplayError: when the line does not apply.
        """
        t = o.get("type")
        try:
            handler = getattr(self, f"_on_{t}", None)
            if handler is not None:
                handler(o)
        except (RuleError, ValueError, KeyError, TypeError, IndexError) as e:
            raise RecordReplayError(f"a {t} line does not replay: {type(e).__name__}: {e}") from None

    def _on_game(self, o: Mapping[str, Any]) -> None:
        self.game = int(o["game"])
        self.state = new_game(self.rules, int(o["dealer"]))
        self._frame("game", f"game {self.game}: seat {o['dealer']} ({self.names[int(o['dealer'])]}) deals first")

    def _on_deal(self, o: Mapping[str, Any]) -> None:
        before = self._playing()
        self.state = deal(before, parse_deck(o["deck"]))
        events = step_events(self.game, before, self.state, None, None)
        self._frame("deal", f"deal {self.state.deal_number}: seat {self.state.dealer} deals", events)

    def _on_action(self, o: Mapping[str, Any]) -> None:
        before = self._playing()
        seat = int(o["seat"])
        action = parse_action(str(o["action"]))
        self.state = apply(before, action, seat)
        events = step_events(self.game, before, self.state, action, seat)
        text = describe_action(action, seat, self.names, bool(o.get("out_of_turn")), str(o.get("by", "bot")))
        self._frame("action", text, events, seat=seat)

    def _on_rejected(self, o: Mapping[str, Any]) -> None:
        seat = int(o["seat"])
        if self.view != ALL and seat != self.view:
            return  # only the seat that sent it was told
        what = o.get("action")
        self._frame(
            "rejected",
            f"seat {seat} ({self.names[seat]}) tried {what if what is not None else 'a malformed answer'}: "
            f"refused ({o.get('reason')}: {o.get('message', '')})",
            seat=seat,
        )

    def _on_game_end(self, o: Mapping[str, Any]) -> None:
        winner = o.get("winner")
        if winner in (0, 1):
            self.games_won[winner] += 1
        s0, s1 = o["scores"]
        how = " (forfeited)" if o.get("forfeited") else ""
        who = "no winner" if winner is None else f"side {winner} wins"
        self._frame("game_end", f"game {o['game']} over{how}: {s0}-{s1}, {who}", final_scores=[s0, s1])

    def _on_result(self, o: Mapping[str, Any]) -> None:
        seats: list[ResultSeat] = [
            {
                "seat": s.get("seat"),
                "name": s.get("name"),
                "termination": s.get("termination"),
                "detail": s.get("detail"),
                "strikes": s.get("strikes"),
                "illegal": s.get("illegal"),
                "connected_at_end": connected if isinstance(connected := s.get("connected_at_end"), bool) else None,
            }
            for s in o.get("seats", [])
        ]
        if self.view != ALL:  # the record keeps the engine's full message, which may name a held card
            for s in seats:
                if s["seat"] != self.view:
                    s["detail"] = ""
        winner = o.get("winner")
        who = "no winner" if winner is None else f"side {winner} wins the match"
        self._frame("result", f"match {o.get('status')}: {who}", result_seats=seats, winner=winner)

    def _playing(self) -> State:
        if self.state is None:
            raise ValueError("no game started")
        return self.state


def header_info(header: Mapping[str, Any]) -> tuple[RuleSet, list[str]]:
    """The rules and seat names of a record's header line.

    :raises RecordReplayError: for a header without valid rules and one name a seat.
    """
    if header.get("type") != "header":
        raise RecordReplayError("the record does not start with its header line")
    try:
        rules = RuleSet.from_dict(header["rules"])
        names = [str(n) for n in header["seat_names"]]
    except (KeyError, TypeError, ValueError) as e:
        raise RecordReplayError(f"bad header: {e}") from None
    if len(names) != rules.players:
        raise RecordReplayError(f"the header names {len(names)} seats for {rules.players} players")
    return rules, names


def replay_frames(lines: Sequence[Mapping[str, Any]], view: str | int = ALL) -> Replay:
    """The viewer's data for a record given as parsed lines (header first): ``{"view", "players",
    "seat_names", "rules", "games", "frames"}``. The header's other fields (commitment, time control)
    are public; the seed line and decks are never included.

    :raises RecordReplayError: for a record that does not replay, or a seat that does not exist.
    """
    if not lines:
        raise RecordReplayError("the record is empty")
    rules, names = header_info(lines[0])
    if view != ALL and not (isinstance(view, int) and 0 <= view < rules.players):
        raise RecordReplayError(f"seat {view} does not exist at a table of {rules.players}")
    b = FrameBuilder(rules, names, view)
    for o in lines[1:]:
        b.line(o)
    return {
        "view": view,
        "players": rules.players,
        "seat_names": names,
        "rules": rules.to_dict(),
        "games": lines[0].get("games"),
        "frames": b.frames,
    }


#: Keys of a compact frame (:func:`compact_frames`) that no frame has: the keys its frame drops, and the
#: lists its frame extends.
GONE, MORE = "_gone", "_more"


def compact_frames(frames: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``frames`` as a page carries them: each frame as its changes from the frame before (the first
    against an empty one), which :func:`expand_frames` and ``viewer.js`` undo.

    A compact frame holds the keys whose values changed; ``"_gone"``: the keys the frame no longer has;
    ``"_more"``: for a list that only grew (the deal's ``tricks``, ``points``, ``kicks``), the items
    added. A whole game's frames repeat most of the table every step, so this is 43-50% of their JSON
    (``tests/test_arena_web_frames.py`` checks at most three fifths); only the pages use it, the JSON
    API sends whole frames.

    :raises ValueError: a frame with a key named ``"_gone"`` or ``"_more"`` (no frame has one).
    """
    out: list[dict[str, Any]] = []
    before: Mapping[str, Any] = {}
    for frame in frames:
        if GONE in frame or MORE in frame:
            raise ValueError(f"a frame may not have a key {GONE!r} or {MORE!r}")
        change: dict[str, Any] = {}
        more: dict[str, list[Any]] = {}
        for key, value in frame.items():
            old = before.get(key, _ABSENT)
            if old == value:
                continue
            if isinstance(value, list) and isinstance(old, list) and len(old) < len(value) \
                    and value[:len(old)] == old:
                more[key] = value[len(old):]
            else:
                change[key] = value
        gone = [key for key in before if key not in frame]
        if gone:
            change[GONE] = gone
        if more:
            change[MORE] = more
        out.append(change)
        before = frame
    return out


def expand_frames(compact: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The frames :func:`compact_frames` was given (what ``viewer.js`` does on a page)."""
    out: list[dict[str, Any]] = []
    before: dict[str, Any] = {}
    for change in compact:
        frame = {k: v for k, v in before.items() if k not in change.get(GONE, ())}
        frame.update({k: [*before[k], *items] for k, items in change.get(MORE, {}).items()})
        frame.update({k: v for k, v in change.items() if k not in (GONE, MORE)})
        out.append(frame)
        before = frame
    return out


_ABSENT = object()
