"""Local mode's table: play bots against each other in-process through the engine, no referee, no network.

The engine of ``sdk.local`` (whose command line, ``python -m sdk.local``, also spars through
``sdk.spar``, which plays through this module: hence two modules, no import cycle). The decks come
from the match seed exactly as the referee derives them (``referee.dealing``: ``deck_for(seed, game,
deal)``; the first dealer of the match by ``first_dealer_by_cut(seed, players)``), so a local match
with a seed deals the same cards as a refereed one with that seed, and bots get the same events. Bots
see only ``observe(state, seat)`` and ``legal_actions(state)``. Import it as ``from sdk.local import
play_local`` (sdk/local.py names it too).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from referee.dealing import check_seed, commitment, deck_for, first_dealer_by_cut, fresh_seed
from referee.events import step_events
from referee.rules import (
    Phase,
    RuleSet,
    apply,
    deal,
    legal_actions,
    new_game,
    next_seat,
    observe,
    side_of,
)
from sdk.bot import (
    BotLike,
    Context,
    Event,
    HookDispatcher,
    IllegalChoice,
    MatchEnd,
    MatchInfo,
    bot_name,
    call_hook,
    decision_rng,
    resolve_choice,
)

#: Nominal per-decision time reported to bots in local mode (milliseconds; not enforced).
LOCAL_TIME_MS = 10_000


class BotFailed(RuntimeError):
    """A bot raised (or called ``sys.exit``) in ``act`` or a hook during :func:`play_local`.

    One line: ``seat S (module:Class) failed in game G, WHERE: Kind: message``, where WHERE is
    ``decision N (phase)`` or the hook's name. ``seat``, ``bot`` (``module:Class``) and ``where`` are
    attributes; the bot's own exception is ``__cause__`` (its traceback, for the bot's author).
    """

    def __init__(self, seat: int, bot: str, game: int, where: str, error: BaseException, at: str = "") -> None:
        from referee.wire import plain_text  # here, not at the top: it loads protobuf, and only a failure needs it

        self.seat, self.bot, self.where = seat, bot, where
        text = plain_text(" ".join(str(error).split()), 300)  # one line, bounded, no control characters
        place = f", in {plain_text(at, 300)}" if at else ""
        super().__init__(f"seat {seat} ({bot}) failed in game {game}, {where}{place}: {type(error).__name__}"
                         f"{': ' + text if text else ''}")


def raised_at(error: BaseException, bot: object) -> str:
    """Where in the bot's own module ``error`` was raised, its deepest frame there: ``act at
    mybot.py:12`` (the path relative to the working folder when it is below it), or ``""`` when no frame
    of the traceback is in that module (an inherited method, a builtin)."""
    module = sys.modules.get(type(_unwrapped(bot)).__module__)
    file = getattr(module, "__file__", None)
    if not file:
        return ""
    own = [f for f in traceback.extract_tb(error.__traceback__) if os.path.abspath(f.filename) == os.path.abspath(file)]
    if not own:
        return ""
    path = os.path.relpath(own[-1].filename)
    return f"{own[-1].name} at {own[-1].filename if path.startswith('..') else path}:{own[-1].lineno}"


def _unwrapped(bot: object) -> object:
    """The bot inside a wrapper that names it as a ``wrapped`` property (``sdk.spar``'s timer), else ``bot``."""
    while isinstance(getattr(type(bot), "wrapped", None), property):
        bot = getattr(bot, "wrapped")  # noqa: B009 (bot is an object: mypy knows no such attribute)
    return bot


def bot_spec(bot: object) -> str:
    """``module:Class`` of a bot object (what ``load_bot`` takes); of the bot inside a wrapper that
    names it as a ``wrapped`` property (``sdk.spar``'s timer)."""
    bot = _unwrapped(bot)
    return f"{type(bot).__module__}:{type(bot).__qualname__}"


def blamed(error: BaseException, bot: object, seat: int, game: int, where: str) -> Exception:
    """What to raise for ``error``, raised by ``bot`` in ``seat`` (``raise blamed(...) from error`` in an
    ``except (Exception, SystemExit)``, so a ``KeyboardInterrupt`` stays the user's): an
    :class:`IllegalChoice` stays one with the seat and place added; anything else is a :class:`BotFailed`.
    A plain ``try`` at each call, not a context manager: the hooks run for every event at every seat."""
    if isinstance(error, IllegalChoice):
        return IllegalChoice(error.choice, error.legal, f"{error.why} (seat {seat}, {bot_spec(bot)}, "
                                                        f"game {game}, {where})")
    return BotFailed(seat, bot_spec(bot), game, where, error, raised_at(error, bot))


def rules_option(text: str | None, players: int | None) -> RuleSet:
    """The rule set of a command line's ``--rules JSON`` and ``--players N`` (either may be absent).

    The table size is ``--players``, else the JSON's ``players``, else 4.

    :raises ValueError: one line naming ``--rules``: not JSON, not a JSON object, a ``players`` that
        differs from ``--players``, or a bad option (``RuleSet.from_dict``'s message).
    """
    options: object = {}
    if text:
        try:
            options = json.loads(text)
        except ValueError as e:
            raise ValueError(f"--rules is not JSON ({e}); give rule options like '{{\"target\": 7}}'") from None
    if not isinstance(options, dict):
        raise ValueError(f"--rules must be a JSON object of rule options like '{{\"target\": 7}}', "
                         f"not a {type(options).__name__}")
    if players is not None and options.get("players", players) != players:
        raise ValueError(f"--rules says players {options['players']!r} but --players {players}: give the "
                         f"table size once")
    return RuleSet.from_dict({**options, "players": players or options.get("players", 4)})


@dataclass(frozen=True, slots=True)
class LocalResult:
    """The outcome of :func:`play_local`.

    - ``seed``: the match seed (64 hex digits) — rerun with it to replay every deal.
    - ``rules``: the rule options; ``bots``: each seat's bot name, seat order.
    - ``match``: the :class:`~sdk.bot.MatchEnd` (per-game scores and winners, games won per side).
    - ``decisions``: number of decisions the bots made in all.
    """

    seed: str
    rules: RuleSet
    bots: tuple[str, ...]
    match: MatchEnd
    decisions: int

    def summary(self) -> str:
        """A few human-readable lines: the seats, each game's score, games won per side."""
        lines = [f"seed {self.seed}", f"rules {json.dumps(self.rules.to_dict(), sort_keys=True)}"]
        for seat, name in enumerate(self.bots):
            lines.append(f"seat {seat} (side {seat % 2}): {name}")
        for g in self.match.games:
            won = "no winner" if g.winner is None else f"{self.side(g.winner)} wins"
            lines.append(f"game {g.game}: {g.scores[0]}-{g.scores[1]}, {won}")
        w = self.match.wins
        who = "a tie" if self.match.winner is None else f"{self.side(self.match.winner)} wins the match"
        lines.append(f"games won: {self.side(0)} {w[0]}, {self.side(1)} {w[1]}: {who}")
        return "\n".join(lines)

    def side(self, side: int) -> str:
        """``side 0 (HeuristicBot)``: a side and the bots in its seats (``A & B`` when partners differ)."""
        names = dict.fromkeys(n for seat, n in enumerate(self.bots) if seat % 2 == side)
        return f"side {side} ({' & '.join(names)})"


def seed_bytes(seed: bytes | str | int | None) -> bytes:
    """A 32-byte match seed from ``seed``.

    ``None``: a fresh random seed; 32 ``bytes``: itself; a ``str`` of 64 hex digits: those bytes;
    any other ``str`` or an ``int``: SHA-256 of its text (so ``"1"`` and ``1`` are handy short seeds).
    """
    if seed is None:
        return fresh_seed()
    if isinstance(seed, bytes | bytearray):
        return check_seed(bytes(seed))
    text = str(seed).strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    return hashlib.sha256(text.encode()).digest()


def play_local(
    bots: Sequence[BotLike],
    rules: RuleSet | None = None,
    seed: bytes | str | int | None = None,
    games: int = 1,
) -> LocalResult:
    """Play a match of ``games`` games between ``bots`` (one per seat, seat order) in-process.

    Like the referee: game 1's first dealer is chosen by the cut, each later game starts with the
    deal passing to the right of the previous game's last dealer (docs/rules.md, Match); deal ``d`` of
    game ``g`` uses ``deck_for(seed, g, d)``. Bots get the same events and hooks as over gRPC.

    :param bots: ``rules.players`` bot objects (each with ``act(ctx)``); seat ``s`` is ``bots[s]``,
        side ``s % 2``. The same object may not sit in two seats (bots may keep per-seat memory).
    :param rules: rule options; default ``RuleSet(players=len(bots))``.
    :param seed: the match seed (see :func:`seed_bytes`); the result records it.
    :param games: number of games (each to the target), 1 or more.
    :returns: a :class:`LocalResult`.
    :raises ValueError: on a wrong number of bots, a repeated bot object or ``games < 1``.
    :raises sdk.bot.IllegalChoice: if a bot returns an action that is not legal (a bug to fix); the
        message names the seat, the bot and the decision.
    :raises BotFailed: if a bot raises (or exits) in ``act`` or a hook; its exception is the cause.
    """
    rules = rules if rules is not None else RuleSet(players=len(bots))
    if len(bots) != rules.players:
        raise ValueError(f"{rules.players} players need {rules.players} bots, got {len(bots)}")
    if len({id(b) for b in bots}) != len(bots):
        raise ValueError("give each seat its own bot object (bots may remember things per seat)")
    if games < 1:
        raise ValueError(f"games must be at least 1, not {games}")
    key = seed_bytes(seed)
    table = _Table(bots, rules, "local-" + key.hex()[:16], commitment(key))
    for seat, bot in enumerate(bots):
        try:
            call_hook(bot, "on_welcome", MatchInfo(match_id=table.match_id, seat=seat, rules=rules, games=games,
                                                   commitment=table.commitment,
                                                   seat_names=tuple(bot_name(b) for b in bots)))
        except (Exception, SystemExit) as e:
            raise blamed(e, bot, seat, 1, "on_welcome") from e
    dealer = first_dealer_by_cut(key, rules.players)
    for game in range(1, games + 1):
        dealer = next_seat(table.play_game(key, game, dealer), rules.players)
    ends = tuple(table.hooks[0].games)
    wins = (sum(1 for g in ends if g.winner == 0), sum(1 for g in ends if g.winner == 1))
    winner = None if wins[0] == wins[1] else (0 if wins[0] > wins[1] else 1)
    match = MatchEnd(games=ends, wins=wins, winner=winner)
    for seat, bot in enumerate(bots):
        try:
            call_hook(bot, "on_match_end", match)
        except (Exception, SystemExit) as e:
            raise blamed(e, bot, seat, games, "on_match_end") from e
    return LocalResult(seed=key.hex(), rules=rules, bots=tuple(bot_name(b) for b in bots), match=match,
                       decisions=table.decision)


class _Table:
    """One local match in progress: the bots, their hook dispatchers and the decision counter."""

    def __init__(self, bots: Sequence[BotLike], rules: RuleSet, match_id: str, seed_commitment: str) -> None:
        self.bots = bots
        self.rules = rules
        self.match_id = match_id
        self.commitment = seed_commitment
        self.hooks = [HookDispatcher(b, rules.players) for b in bots]
        self.decision = 0

    def emit(self, events: Sequence[Event], game: int) -> None:
        for ev in events:
            for seat, h in enumerate(self.hooks):
                try:
                    h.event(ev)
                except (Exception, SystemExit) as e:
                    raise blamed(e, self.bots[seat], seat, game, "on_event") from e

    def play_game(self, key: bytes, game: int, dealer: int) -> int:
        """Play game ``game`` from ``dealer``; returns the dealer of its last deal."""
        rules = self.rules
        state = new_game(rules, dealer)
        self.emit([Event("game_started", game=game, deal=0, dealer=dealer)], game)
        while state.phase is not Phase.OVER:
            prev = state
            if state.phase is Phase.DEAL:
                state = deal(state, deck_for(key, game, state.deal_number + 1))
                self.emit(step_events(game, prev, state, None, None), game)
                continue
            seat = state.to_act
            assert seat is not None
            legal = legal_actions(state)
            self.decision += 1
            ctx = Context(observation=observe(state, seat), legal=legal, time_left_ms=LOCAL_TIME_MS, bank_ms=0,
                          seat=seat, side=side_of(seat), rules=rules,
                          rng=decision_rng(self.commitment, seat, self.decision), match_id=self.match_id,
                          game=game, decision=self.decision)
            try:
                action = resolve_choice(self.bots[seat].act(ctx), legal)
            except (Exception, SystemExit) as e:
                raise blamed(e, self.bots[seat], seat, game, f"decision {self.decision} ({state.phase.value})") from e
            state = apply(state, action, seat)
            self.emit(step_events(game, prev, state, action, seat), game)
        self.emit([Event("game_ended", game=game, deal=state.deal_number, scores=state.scores,
                         winner=state.winner)], game)
        return state.dealer
