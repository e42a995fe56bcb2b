"""How good the search bot's choices are, judged by what the game then scored.

    python benchmarks/choice_outcomes.py [--games 20] [--first-game 0] [--ms 200] [--play-share 0.25]
                                         [--continue-ms MS] [--seed outcomes] [--out points.jsonl]
    python benchmarks/choice_outcomes.py --read points.jsonl [more.jsonl ...]

A study of issue 21's table of four, not a bot. It plays 4-player games of the search bot
(``SearchBot(ms)``, one side; the side alternates by game) against the heuristic bot, one game to the
target each, on decks from SHA-256 of ``"<seed>/<game>"``. At every choice of the search side before
play (beg or stand; as dealer, give one or run the pack) and at a share (``--play-share``) of its card
choices with two or more legal cards, it records a :class:`Point`: the search's mean value of each
action, the action chosen, the heuristic bot's choice in the same seat, and each action's **outcome**:
the deal played to its end from the true state after that action, with the same bots and the same
random draws (``sdk.bot.decision_rng``) as the game itself, valued for the search side by
``fast.win_probability`` at the deal's final score (1 or 0 when the game ends). So the outcome of the
chosen action is what the game scored, and the others are what it would have scored. One outcome is
one continuation: noisy per point, unbiased over many.

``--read`` (or the end of a run) compares ways of choosing on the same points, phase by phase
(``beg``, ``dealer``, ``play``): for each, the mean gain in outcome over the bot's own choice, its
standard error and how many points it changed; and, before play, how well the search's difference
of means ``d`` (beg minus stand; run the pack minus give one) predicts the outcomes' difference ``D``
(a least-squares line; a calibrated search has slope 1 and intercept 0; ``BINS`` groups by ``d``).
Ways of choosing (``--policies``): ``bot``; ``heuristic``; ``margin:M`` (before play, the second action
— beg, run the pack — only when its mean beats the first's by more than ``M``; cards as the bot);
``ties:EPS`` (the heuristic bot's choice when the search values it within ``EPS`` of the bot's).
``room`` bounds them all: what choosing with hindsight (the action whose continuation scored best)
would gain a point, and on what share of points some other action did better.

Reading the figures: a gain ``g`` a point is about ``2.5 g`` of a duplicate pair's score a phase (the
search side makes about 2.7 beg and 2.5 dealer choices a game), and near the bot's pair score of 0.64,
+0.01 of pair score is about +8 Elo. ``--out`` writes each point as a JSON line as soon as it is made,
so a run cut short still leaves its points to ``--read``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TextIO

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.dealing import commitment, deck_for, first_dealer_by_cut  # noqa: E402
from referee.rules import (  # noqa: E402
    BEG,
    GIVE_ONE,
    RUN_PACK,
    STAND,
    Action,
    Phase,
    Play,
    RuleSet,
    State,
    apply,
    deal,
    legal_actions,
    new_game,
    observe,
    side_of,
)
from sample_bots.heuristic import HeuristicBot  # noqa: E402
from sample_bots.search import SearchBot  # noqa: E402
from sample_bots.search import bot as search  # noqa: E402
from sample_bots.search.fast import win_probability  # noqa: E402
from sdk.bot import BotLike, Context, decision_rng, resolve_choice  # noqa: E402
from sdk.local_table import LOCAL_TIME_MS  # noqa: E402

PLAYERS = 4
#: The phases a point is recorded in, by the name it carries.
PHASES = {Phase.BEG: "beg", Phase.DEALER: "dealer", Phase.PLAY: "play"}
#: How many groups of equal size the calibration splits the points into, by the search's ``d``.
BINS = 4
#: A game is "late" when either side has at least this many points (of the target's 14): the score
#: then weighs on every choice, and the calibration is reported for those points apart.
LATE = 10
DEFAULT_POLICIES = ["heuristic", "margin:-0.02", "margin:0.02", "margin:0.05", "ties:0", "ties:0.01",
                    "ties:0.03"]


@dataclass(frozen=True, slots=True)
class Point:
    """One recorded choice of the search side.

    - ``game``, ``deal`` (1-based within the game), ``decision`` (the game's decision counter),
      ``phase`` (``beg``, ``dealer`` or ``play``), ``scores`` (search side's, other side's, before it);
    - ``actions``: the legal actions' names, ``[stand, beg]``, ``[give, run]`` or the cards in legal order;
    - ``means``: the search's mean value of each (a beg's is the worse of give one and run the pack,
      the answer the search expects);
    - ``outcomes``: each action's value for the search side at the deal's end (win chance, 0..1);
    - ``chosen``: the index the bot played; ``heuristic``: the index the heuristic bot would have.
    """

    game: int
    deal: int
    decision: int
    phase: str
    scores: tuple[int, int]
    actions: list[str]
    means: list[float]
    outcomes: list[float]
    chosen: int
    heuristic: int


@dataclass(slots=True)
class Game:
    """A finished game: its points, its value for the search side at the end of each deal, and its final
    ``scores`` per side (side 0's first)."""

    points: list[Point] = field(default_factory=list)
    deal_values: list[float] = field(default_factory=list)
    scores: tuple[int, int] = (0, 0)


class _Recording(SearchBot):
    """``SearchBot`` that keeps the means of its last decision (``last_means``: the values of the
    actions in :func:`_actions` order)."""

    def __init__(self, ms: int) -> None:
        super().__init__(ms=ms)
        self.last_means: list[float] = []

    def _before_play_means(self, s: search._Setting, rng: random.Random) -> list[float]:
        stand, give, run = super()._before_play_means(s, rng)
        self.last_means = [stand, min(give, run)] if s.obs.phase is Phase.BEG else [give, run]
        return [stand, give, run]

    def _with_prior(self, s: search._Setting, moves: list[Play], rows: list[list[float]],
                    more: Callable[[], list[float]]) -> int:
        choice = super()._with_prior(s, moves, rows, more)
        self.last_means = search._column_means(rows)  # every deal the card was chosen on, the prior's included
        return choice


@dataclass(slots=True)
class _Table:
    """One game's bots and how its decisions are asked: the search side, the seeds and the rules."""

    bots: list[BotLike]
    search_side: int
    commitment: str
    rules: RuleSet

    def ask(self, bot: BotLike, state: State, decision: int) -> Action:
        """``bot``'s action in ``state``, asked as the local table asks (the same random draws)."""
        seat = state.to_act
        assert seat is not None
        legal = legal_actions(state)
        ctx = Context(observation=observe(state, seat), legal=legal, time_left_ms=LOCAL_TIME_MS, bank_ms=0,
                      seat=seat, side=side_of(seat), rules=self.rules,
                      rng=decision_rng(self.commitment, seat, decision), decision=decision)
        return resolve_choice(bot.act(ctx), legal)

    def value(self, state: State) -> float:
        """The search side's chance of winning the game from ``state``'s score (1 or 0 at its end)."""
        if state.winner is not None:
            return 1.0 if state.winner == self.search_side else 0.0
        target = self.rules.target
        return win_probability(target - state.scores[self.search_side], target - state.scores[1 - self.search_side])

    def finish_deal(self, state: State, decision: int) -> float:
        """Play on from ``state`` (decisions numbered from ``decision + 1``) to the deal's end; its value."""
        while state.phase not in (Phase.DEAL, Phase.OVER):
            decision += 1
            seat = state.to_act
            state = apply(state, self.ask(self.bots[seat], state, decision), seat)
        return self.value(state)


def _actions(state: State) -> list[Action]:
    """The actions a point compares, in :class:`Point`'s order."""
    legal = legal_actions(state)
    if state.phase is Phase.BEG:
        return [STAND, BEG]
    if state.phase is Phase.DEALER:
        return [GIVE_ONE, RUN_PACK]
    return [a for a in legal if isinstance(a, Play)]


def _name(action: Action) -> str:
    names = {STAND: "stand", BEG: "beg", GIVE_ONE: "give", RUN_PACK: "run"}
    return names.get(action) or str(action.card)  # type: ignore[union-attr]


def _point(table: _Table, state: State, decision: int, game: int, chosen: Action,
           means: list[float]) -> Point:
    """The point of the search side's choice ``chosen`` in ``state`` (decision ``decision``)."""
    actions = _actions(state)
    seat = state.to_act
    outcomes = [table.finish_deal(apply(state, a, seat), decision) for a in actions]
    theirs = table.ask(HeuristicBot(), state, decision)
    mine = state.scores[table.search_side], state.scores[1 - table.search_side]
    return Point(game, state.deal_number, decision, PHASES[state.phase], mine, [_name(a) for a in actions],
                 means, outcomes, actions.index(chosen), actions.index(theirs))


def play_game(game: int, ms: int, play_share: float, seed: str, continue_ms: int | None = None,
              sink: Callable[[Point], None] = lambda p: None) -> Game:
    """Play game ``game`` (the search side is ``game % 2``) and record its points (each also handed to
    ``sink`` as soon as it is made). ``continue_ms``: the search's work in the continuations that give
    the outcomes (default ``ms``: the same bots as the game)."""
    key = hashlib.sha256(f"{seed}/{game}".encode()).digest()
    side = game % 2
    bot = _Recording(ms)
    rules = RuleSet(players=PLAYERS)
    table = _Table([bot if s % 2 == side else HeuristicBot() for s in range(PLAYERS)], side, commitment(key), rules)
    later = _Table([SearchBot(ms=continue_ms or ms) if s % 2 == side else HeuristicBot() for s in range(PLAYERS)],
                   side, table.commitment, rules) if continue_ms else table
    sampler = random.Random(f"{seed}/{game}/play-share")
    state, decision, result = new_game(rules, first_dealer_by_cut(key, PLAYERS)), 0, Game()
    while state.phase is not Phase.OVER:
        if state.phase is Phase.DEAL:
            if state.deal_number:
                result.deal_values.append(table.value(state))
            state = deal(state, deck_for(key, 1, state.deal_number + 1))
            continue
        decision += 1
        seat = state.to_act
        action = table.ask(table.bots[seat], state, decision)
        if (side_of(seat) == side and state.phase in PHASES and len(legal_actions(state)) > 1
                and (state.phase is not Phase.PLAY or sampler.random() < play_share)):
            result.points.append(_point(later, state, decision, game, action, bot.last_means))
            sink(result.points[-1])
        state = apply(state, action, seat)
    result.deal_values.append(table.value(state))
    result.scores = state.scores
    return result


# --------------------------------------------------------------------------- analysis


def bot_choice(p: Point) -> int:
    """The index the bot plays on ``p``'s means (its rules: beg only when ``search.BEG_MARGIN`` better; ties
    go to the first action; a card is the best mean, or the heuristic bot's card when within
    ``search.PRIOR_MARGIN`` of it, which the search plays unless its sampled deals showed it dominated: a
    point does not keep them, so that card counts as the bot's when the bot played it)."""
    if p.phase == "beg":
        return 1 if p.means[1] > p.means[0] + search.BEG_MARGIN else 0
    if p.phase == "dealer":
        return 0 if p.means[0] >= p.means[1] else 1
    best = search._best(p.means)
    near = p.means[best] - p.means[p.heuristic] <= search.PRIOR_MARGIN
    return p.heuristic if near and p.chosen == p.heuristic else best


def policy(name: str) -> Callable[[Point], int]:
    """A way of choosing an action on a point, by name (module docstring).

    :raises ValueError: ``unknown way of choosing 'NAME': bot, heuristic, margin:M or ties:EPS``.
    """
    kind, _, arg = name.partition(":")
    try:
        number = float(arg) if arg else None
    except ValueError:
        number = None
        kind = ""
    if number is not None and not math.isfinite(number):
        kind = ""  # margin:nan would change nothing and ties:inf everything: neither is a way of choosing
    if kind == "bot" and not arg:
        return lambda p: p.chosen
    if kind == "heuristic" and not arg:
        return lambda p: p.heuristic
    if kind == "margin" and number is not None:
        margin = number
        return lambda p: p.chosen if p.phase == "play" else int(p.means[1] > p.means[0] + margin)
    if kind == "ties" and number is not None:
        eps = number
        return lambda p: p.heuristic if p.means[p.chosen] - p.means[p.heuristic] <= eps else p.chosen
    raise ValueError(f"unknown way of choosing {name!r}: bot, heuristic, margin:M or ties:EPS")


def compare(points: Sequence[Point], choose: Callable[[Point], int]) -> dict[str, float]:
    """The mean gain in outcome of ``choose`` over the bot's choice on ``points`` (``gain``), its
    standard error (``se``, over points; 0 for fewer than two) and how many points it changed
    (``changed``)."""
    gains = np.array([p.outcomes[choose(p)] - p.outcomes[p.chosen] for p in points], dtype=float)
    changed = sum(1 for p in points if choose(p) != p.chosen)
    se = float(gains.std(ddof=1) / np.sqrt(len(gains))) if len(gains) > 1 else 0.0
    return {"gain": round(float(gains.mean()), 4) if len(gains) else 0.0, "se": round(se, 4), "changed": changed}


def room(points: Sequence[Point]) -> dict[str, float]:
    """What hindsight could gain on ``points``: the mean of the best action's outcome less the chosen
    one's (``gain``; an upper bound for every way of choosing, since it knows each continuation) and the
    share of points where some action did better than the chosen one (``share``)."""
    regrets = [max(p.outcomes) - p.outcomes[p.chosen] for p in points]
    return {"gain": round(sum(regrets) / len(regrets), 4) if regrets else 0.0,
            "share": round(sum(1 for r in regrets if r > 0) / len(regrets), 4) if regrets else 0.0}


def calibration(points: Sequence[Point]) -> dict[str, object]:
    """How the search's ``d`` (second action's mean minus the first's) predicts the outcomes' ``D``:
    the least-squares ``slope`` and ``intercept`` of ``D`` on ``d``, and ``BINS`` groups of points by
    ``d`` (``bins``: their sizes; ``d`` and ``D``: their means). Two-action phases only; needs two
    points with different ``d`` for the line (else ``slope`` and ``intercept`` are ``None``)."""
    d = np.array([p.means[1] - p.means[0] for p in points], dtype=float)
    big_d = np.array([p.outcomes[1] - p.outcomes[0] for p in points], dtype=float)
    line: list[float | None] = [None, None]
    if len(set(d.tolist())) > 1:
        line = [round(float(x), 4) for x in np.polyfit(d, big_d, 1)]
    order = np.argsort(d, kind="stable")
    groups = [g for g in np.array_split(order, min(BINS, len(order))) if len(g)]
    return {"slope": line[0], "intercept": line[1], "bins": [len(g) for g in groups],
            "d": [round(float(d[g].mean()), 4) for g in groups],
            "D": [round(float(big_d[g].mean()), 4) for g in groups]}


def analyse(points: Sequence[Point], policies: Sequence[str] = DEFAULT_POLICIES) -> dict[str, object]:
    """Per phase: ``points``, :func:`room`, each policy's :func:`compare` row and, before play,
    :func:`calibration` of all its points and (``calibration_late``) of those where a side has ``LATE``
    points or more.

    :raises ValueError: for an unknown policy name (:func:`policy`).
    """
    ways = {name: policy(name) for name in policies}
    report: dict[str, object] = {}
    for phase in PHASES.values():
        mine = [p for p in points if p.phase == phase]
        if not mine:
            continue
        row: dict[str, object] = {"points": len(mine), "room": room(mine),
                                  "policies": {n: compare(mine, w) for n, w in ways.items()}}
        if phase != "play":
            row["calibration"] = calibration(mine)
            late = [p for p in mine if max(p.scores) >= LATE]
            if late:
                row["calibration_late"] = calibration(late)
        report[phase] = row
    return report


def read_points(paths: Sequence[str]) -> list[Point]:
    """The points in JSON-lines files written by ``--out``.

    :raises ValueError: ``FILE:LINE: not a point (REASON)`` for a line that is not one.
    """
    points = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not a file of points (not UTF-8 text: byte {e.start})") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                points.append(_point_from_json(json.loads(line)))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a point ({e})") from None
    if not points:
        raise ValueError(f"no points in {', '.join(paths)}")
    return points


def _point_from_json(raw: object) -> Point:
    """A :class:`Point` from one decoded JSON line, every field checked.

    :raises ValueError: naming the first field that is missing, extra, of the wrong type or out of range.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"a JSON object is needed, not a {type(raw).__name__}")
    names = [f.name for f in fields(Point)]
    if missing := [k for k in names if k not in raw]:
        raise ValueError(f"no {', '.join(missing)}")
    if extra := sorted(set(raw) - set(names)):
        raise ValueError(f"unknown field {', '.join(extra)}")
    for key in ("game", "deal", "decision"):
        _whole(raw[key], key)
    if raw["phase"] not in PHASES.values():
        raise ValueError(f"phase must be one of {', '.join(PHASES.values())}, not {raw['phase']!r}")
    scores = raw["scores"]
    if not isinstance(scores, list) or len(scores) != 2:
        raise ValueError(f"scores must be a list of two, not {scores!r}")
    actions = raw["actions"]
    if not isinstance(actions, list) or len(actions) < 2 or not all(isinstance(a, str) for a in actions):
        raise ValueError("actions must be a list of two or more names")
    for key in ("means", "outcomes"):
        values = raw[key]
        if (not isinstance(values, list) or len(values) != len(actions)
                or not all(_real(v) and (key == "means" or 0 <= v <= 1) for v in values)):
            raise ValueError(f"{key} must be {len(actions)} finite numbers (one an action"
                             f"{'' if key == 'means' else ', each within 0..1'})")
    for key in ("chosen", "heuristic"):
        if not 0 <= _whole(raw[key], key) < len(actions):
            raise ValueError(f"{key} must index the actions (0..{len(actions) - 1}), not {raw[key]!r}")
    return Point(**{**raw, "scores": (_whole(scores[0], "scores"), _whole(scores[1], "scores"))})


def _real(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v: object, key: str) -> int:
    """``v`` if it is a whole number of at least 0. :raises ValueError: naming ``key`` otherwise."""
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ValueError(f"{key} must be whole numbers of at least 0, not {v!r}")
    return v


def _writer(out: TextIO | None) -> Callable[[Point], None]:
    def write(p: Point) -> None:
        if out is not None:
            out.write(json.dumps(asdict(p)) + "\n")
            out.flush()
        print(f"game {p.game} deal {p.deal} {p.phase}: {p.actions[p.chosen]}", file=sys.stderr, flush=True)

    return write


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or ``--read``) and print the analysis as JSON; returns 0, or 2 on a usage error."""
    p = argparse.ArgumentParser(prog="benchmarks/choice_outcomes.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--first-game", type=int, default=0)
    p.add_argument("--ms", type=int, default=search.DEFAULT_MS)
    p.add_argument("--continue-ms", type=int, default=None, help="search work in the continuations (default --ms)")
    p.add_argument("--play-share", type=float, default=0.25)
    p.add_argument("--seed", default="outcomes")
    p.add_argument("--policies", nargs="+", default=DEFAULT_POLICIES)
    p.add_argument("--out", help="write each point as a JSON line here")
    p.add_argument("--read", nargs="+", help="analyse these files' points instead of playing")
    args = p.parse_args(argv)
    if args.read and args.out:
        p.error("--read analyses points already written: --out does not apply")
    for flag, value, least in (("--games", args.games, 1), ("--ms", args.ms, 1), ("--first-game", args.first_game, 0),
                               ("--continue-ms", args.continue_ms, 1)):
        if value is not None and value < least:
            p.error(f"{flag} must be at least {least}, not {value}")
    if not 0 <= args.play_share <= 1:
        p.error(f"--play-share must be within 0..1, not {args.play_share}")
    try:
        for name in args.policies:
            policy(name)
        if args.read:
            points = read_points(args.read)
        else:
            with open(args.out, "w") if args.out else contextlib.nullcontext() as out:
                points = [pt for g in range(args.first_game, args.first_game + args.games)
                          for pt in play_game(g, args.ms, args.play_share, args.seed, args.continue_ms,
                                              _writer(out)).points]
    except (ValueError, OSError) as e:
        p.error(str(e))
    except KeyboardInterrupt:  # the points made so far are in --out, line by line
        print(f"{p.prog}: interrupted{'; the points so far are in ' + args.out if args.out else ''}",
              file=sys.stderr)
        return 130
    print(json.dumps({"points": len(points), **analyse(points, args.policies)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
