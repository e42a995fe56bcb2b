"""The bot interface: a class with one required method, ``act(ctx) -> action``.

A bot sees exactly what its seat may see (``referee.rules.Observation``) and the legal actions the
referee sends; it never re-checks legality (docs/architecture.md). The same bot runs unchanged in local
mode (:mod:`sdk.local`, in-process through the engine) and against a referee over gRPC
(:mod:`sdk.run`).

Minimal bot::

    from sdk import Bot, Context

    class Lowest(Bot):
        def act(self, ctx: Context):
            return ctx.legal[0]          # an Action, or its notation: "TH", "beg", "call 5C"

Optional hooks (all default to doing nothing): :meth:`Bot.on_welcome`, :meth:`Bot.on_event`,
:meth:`Bot.on_deal_end`, :meth:`Bot.on_game_end`, :meth:`Bot.on_match_end`. A bot need not subclass
:class:`Bot`: any object with an ``act`` method works, and hooks it lacks are skipped.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Re-exported: the SDK's event type is the referee's (one definition, referee/events.py).
from referee.events import EVENT_KINDS as EVENT_KINDS
from referee.events import Event as Event
from referee.rules import (
    Action,
    Card,
    Observation,
    Phase,
    Play,
    PointEvent,
    RuleSet,
    Suit,
    Trick,
    parse_action,
    side_of,
)

#: What ``act`` may return: one of ``ctx.legal``, its notation string, or a :class:`Card` (= play it).
Choice = Action | str | Card


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """Who and where the bot is, given once per match to :meth:`Bot.on_welcome`.

    - ``match_id``: the referee's match id (``"local-…"`` in local mode).
    - ``seat``: this bot's seat, ``0..players-1`` in play order; ``side`` is ``seat % 2``.
    - ``rules``: the rule options of every game in the match (``rules.players`` is 2 or 4).
    - ``games``: number of games in the match (0 if the referee did not say).
    - ``commitment``: SHA-256 hex of the match seed, published before play ("" if unknown).
    - ``seat_names``: the names given to the seats at match creation, seat order.
    - ``decision_ms``: the per-decision limit, ``bank_ms``: the seat's time bank for the whole match,
      both in milliseconds (0 in local mode: not enforced).
    """

    match_id: str
    seat: int
    rules: RuleSet
    games: int = 0
    commitment: str = ""
    seat_names: tuple[str, ...] = ()
    decision_ms: int = 0
    bank_ms: int = 0

    @property
    def side(self) -> int:
        """This bot's side (team), 0 or 1."""
        return side_of(self.seat)


@dataclass(frozen=True, slots=True)
class DealEnd:
    """The end of one deal (one deck), given to :meth:`Bot.on_deal_end`.

    - ``game`` and ``deal``: 1-based numbers; ``scores``: points per side after the deal.
    - ``points``: the points scored during this deal, in order.
    - ``tricks``: the deal's completed tricks (empty if the pack ran dry or the game ended on a kick).
    - ``ran_dry``: the pack ran dry and the same dealer deals again (docs/rules.md, The deal 4).
    """

    game: int
    deal: int
    scores: tuple[int, int]
    points: tuple[PointEvent, ...] = ()
    tricks: tuple[Trick, ...] = ()
    ran_dry: bool = False


@dataclass(frozen=True, slots=True)
class GameEnd:
    """The end of one game, given to :meth:`Bot.on_game_end`.

    ``game``: 1-based number; ``scores``: final points per side; ``winner``: the side that reached
    the target or was awarded the game (``None`` if the game was aborted); ``forfeited``: the game
    ended because a seat forfeited.
    """

    game: int
    scores: tuple[int, int]
    winner: int | None
    forfeited: bool = False


@dataclass(frozen=True, slots=True)
class MatchEnd:
    """The end of the match, given to :meth:`Bot.on_match_end` and returned by the runners.

    - ``games``: each game's end in order; ``wins``: games won per side; ``winner``: the side that
      won the match (more games won, or the side that did not forfeit), ``None`` on a tie or abort.
    - ``status``: ``"completed"``, ``"forfeited"`` or ``"aborted"``.
    - ``termination``: how this seat's part ended (``"normal"``, ``"timeout"``, ``"illegal"``,
      ``"disconnect"``, ``"protocol_error"``, ``"no_show"``, ``"aborted"``,
      ``"other_seat_forfeited"``); ``detail``: the referee's explanation ("" when normal).
    """

    games: tuple[GameEnd, ...]
    wins: tuple[int, int]
    winner: int | None
    status: str = "completed"
    termination: str = "normal"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Context:
    """Everything a bot may use to decide one action. Frozen; built fresh for every decision.

    - ``observation``: what this seat may see (``referee.rules.Observation``: hand, trump, trick,
      tricks of this deal, scores, exposed cards, points so far …).
    - ``legal``: the legal actions; ``act`` returns one of them (or its notation string).
    - ``time_left_ms``: milliseconds left for this decision (per-move limit plus bank);
      ``bank_ms``: the seat's remaining overtime bank in milliseconds. Local mode does not enforce
      them.
    - ``seat``: this bot's seat (``0..players-1``); ``side``: its team (``seat % 2``).
    - ``rules``: the rule options; ``match_id``; ``game``: 1-based game number in the match;
      ``decision``: the referee's sequence number of this request.
    - ``rng``: a ``random.Random`` seeded from (the match's seed commitment, seat, decision), so a
      bot that draws only from it replays the same moves for the same match seed (:func:`decision_rng`).
    - ``rejected``: on a second ask after the referee refused this seat's answer, the refusal
      (``"<reason>: <message>"``); otherwise ``""``.
    """

    observation: Observation
    legal: tuple[Action, ...]
    time_left_ms: int
    bank_ms: int
    seat: int
    side: int
    rules: RuleSet
    rng: random.Random
    match_id: str = ""
    game: int = 1
    decision: int = 0
    rejected: str = ""

    @property
    def phase(self) -> Phase:
        """What is being decided: BEG (stand or beg), DEALER (give or run), PLAY, CALL."""
        return self.observation.phase

    @property
    def hand(self) -> tuple[Card, ...]:
        """This seat's cards now."""
        return self.observation.hand

    @property
    def trump(self) -> Suit | None:
        """The trump suit (the kick's suit)."""
        return self.observation.trump

    @property
    def trick(self) -> tuple[Card, ...]:
        """Cards played to the trick in progress, in play order from ``observation.trick_leader``."""
        return self.observation.trick

    @property
    def legal_cards(self) -> tuple[Card, ...]:
        """The cards among ``legal`` (empty outside the PLAY phase)."""
        return tuple(a.card for a in self.legal if isinstance(a, Play))


def decision_rng(seed_commitment: str, seat: int, decision: int) -> random.Random:
    """A ``random.Random`` seeded from SHA-256 of ``"<seed_commitment>/<seat>/<decision>"``.

    ``seed_commitment`` is the match's public seed commitment (Welcome.seed_commitment), fixed by the
    match seed, and ``decision`` the request's sequence number. So a match replayed from the same
    seed (e.g. a tournament with a fixed master seed) draws the same numbers; deterministic across
    runs and processes (unlike ``hash()``); independent per decision, so a reconnect or a re-asked
    decision draws the same numbers. Local mode uses the same seeding, so a bot plays the same moves
    locally and against a referee for the same seed.
    """
    digest = hashlib.sha256(f"{seed_commitment}/{seat}/{decision}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


class IllegalChoice(ValueError):
    """A bot returned something that is not one of its legal actions.

    ``choice`` is what it returned; ``legal`` the legal actions; the message names both in notation.
    """

    def __init__(self, choice: object, legal: tuple[Action, ...], why: str = "") -> None:
        self.choice = choice
        self.legal = legal
        self.why = why
        legal_text = " ".join(str(a) for a in legal)
        super().__init__(f"bot chose {choice!r}{': ' + why if why else ''}; legal: {legal_text}")


def resolve_choice(choice: object, legal: tuple[Action, ...]) -> Action:
    """The legal action a bot's ``choice`` names: an action, its notation (``"TH"``, ``"beg"``,
    ``"call 5C"``) or a :class:`Card` (= play it).

    :raises IllegalChoice: if the choice cannot be read or is not among ``legal``.
    """
    action: object = choice
    if isinstance(choice, str):
        try:
            action = parse_action(choice)
        except ValueError as e:
            raise IllegalChoice(choice, legal, str(e)) from None
    elif isinstance(choice, Card):
        action = Play(choice)
    if action not in legal:
        raise IllegalChoice(choice, legal, "not a legal action now")
    return action


@runtime_checkable
class BotLike(Protocol):
    """Anything with ``act(ctx) -> action`` can play; :class:`Bot` adds the optional hooks."""

    def act(self, ctx: Context) -> Choice:
        """Return one of ``ctx.legal`` (or its notation string)."""
        ...


class Bot:
    """Base class for bots: override :meth:`act`; override any hook you need.

    ``name`` and ``version`` are sent to the referee in Hello (default: the class name, ``"0"``).
    """

    name: str = ""
    version: str = "0"

    def act(self, ctx: Context) -> Choice:
        """Choose an action for this decision: one of ``ctx.legal``, or its notation string.

        :raises NotImplementedError: unless a subclass overrides it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement act(ctx)")

    def on_welcome(self, info: MatchInfo) -> None:
        """Called once when the match starts (seat, rules, match id)."""

    def on_event(self, event: Event) -> None:
        """Called for each public table event (:class:`Event`), in order."""

    def on_deal_end(self, deal: DealEnd) -> None:
        """Called after each deal is counted (or ran dry, or ended the game)."""

    def on_game_end(self, game: GameEnd) -> None:
        """Called after each game of the match."""

    def on_match_end(self, result: MatchEnd) -> None:
        """Called once when the match is over."""


class HookDispatcher:
    """Turns the event stream of one seat into hook calls; shared by local and remote play.

    Feed every :class:`Event` to :meth:`event`: the bot's ``on_event`` gets it, and ``on_deal_end``
    / ``on_game_end`` are called on ``deal_ended`` / ``game_ended`` with the deal's points and tricks
    collected from the events. Hooks a bot lacks are skipped. ``games`` collects each :class:`GameEnd`.
    ``call``: how a hook is called (default :func:`call_hook`, which lets the bot's exception out; the
    remote runner's logs and counts it instead).
    """

    def __init__(self, bot: object, players: int, call: Callable[[object, str, object], None] | None = None) -> None:
        self.bot = bot
        self.players = players
        self._call = call or call_hook
        self.games: list[GameEnd] = []
        self._points: list[PointEvent] = []
        self._tricks: list[Trick] = []
        self._leader = 0

    def event(self, ev: Event) -> None:
        """Deliver ``ev`` and any deal or game end it completes."""
        self._call(self.bot, "on_event", ev)
        if ev.kind == "deal_started":
            self._points, self._tricks = [], []
            self._leader = ((ev.dealer or 0) + 1) % self.players
        elif ev.kind == "points_scored" and ev.side is not None:
            self._points.append(PointEvent(deal=ev.deal, side=ev.side, kind=ev.points_kind, value=ev.value))
        elif ev.kind == "trick_won" and ev.seat is not None:
            self._tricks.append(Trick(leader=self._leader, cards=ev.cards, winner=ev.seat))
            self._leader = ev.seat
        elif ev.kind == "deal_ended":
            self._call(self.bot, "on_deal_end", DealEnd(
                game=ev.game, deal=ev.deal, scores=_two(ev.scores), points=tuple(self._points),
                tricks=tuple(self._tricks), ran_dry=ev.ran_dry))
        elif ev.kind == "game_ended":
            end = GameEnd(game=ev.game, scores=_two(ev.scores), winner=ev.winner, forfeited=ev.forfeited)
            self.games.append(end)
            self._call(self.bot, "on_game_end", end)


def _two(scores: tuple[int, ...]) -> tuple[int, int]:
    return (scores[0], scores[1]) if len(scores) >= 2 else (0, 0)


def bot_name(bot: object) -> str:
    """A bot's display name: its ``name`` attribute if set, else its class name."""
    return str(getattr(bot, "name", "") or type(bot).__name__)


def call_hook(bot: object, hook: str, arg: object) -> None:
    """Call ``bot.<hook>(arg)`` if the bot has that hook (duck-typed bots may lack it)."""
    fn = getattr(bot, hook, None)
    if callable(fn):
        fn(arg)


def load_bot(spec: str) -> BotLike:
    """Import ``"package.module:ClassName"`` and return a new instance (constructed with no arguments).

    :raises ValueError: if ``spec`` is not ``module:Class``, the module or class cannot be found, it is
        not a class (or other callable), it cannot be made with no arguments, or what it makes has no
        ``act`` method.
    """
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a bot is named module:Class, e.g. sample_bots.random_bot:RandomBot, not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import bot module {module_name!r} ({spec!r}): {e}") from e
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no {attr!r} ({spec!r})") from None
    if not callable(factory):
        raise ValueError(f"{spec!r} is not a class (it is a {type(factory).__name__})")
    try:
        bot: object = factory()
    except TypeError as e:
        raise ValueError(f"{spec!r} cannot be made with no arguments ({e})") from e
    if not isinstance(bot, BotLike) or not callable(bot.act):
        raise ValueError(f"{spec!r} made a {type(bot).__name__}, which has no act(ctx) method")
    return bot
