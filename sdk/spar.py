"""Sparring: duplicate pairs between two bots in-process, the Elo difference with its 95% interval.

A **duplicate pair** is two games on the same decks (the same match seed: the same deals and first
dealer) with the sides swapped: bot A holds side 0's seats in the first game and side 1's in the
second, so the luck of the cards cancels out and far fewer games tell two bots apart. Both seats of a
side are the same bot (a fresh object per seat). One game per match (to the rules' target).

    python -m sdk.spar mybot:MyBot sample_bots.search:SearchBot --pairs 50 --players 4
    python -m sdk.local mybot:MyBot sample_bots.search:SearchBot --games 100 --duplicate   # the same

The Elo difference is ``400 log10(s / (1 - s))`` (:func:`arena.ratings.elo.elo_of_score`, the arena's
one Elo scale: this module runs where the arena is installed, never in a bot's image) of A's mean score
``s`` over the games (win 1, loss 0). The 95% interval is Student's interval of the mean over
**pairs** (a pair's score, the mean of its two games, is one independent draw): ``s ± t se`` with
``t`` the 97.5% quantile of Student's t with ``pairs - 1`` degrees of freedom (the spread is estimated
from the pairs: 2.78 at 5 pairs, 2.09 at 20, against the normal's 1.96), mapped through the same
formula; an end at or beyond a score of 0 or 1 is unbounded (``-inf``/``+inf``, ``null`` in JSON: the
pairs cannot rule out a bot that always wins). When every pair scored alike (no spread to measure) the
interval takes the widest spread a pair's score can have, 0.5, with the normal's 1.96 (a bound, not an
estimate). A mean of 0 or 1 is clamped to ``1/(4 pairs)`` from the edge so the estimate stays finite
(the printed line then says it is a bound: ``Elo below -544.7 (every game lost, ...``).
Decision times are wall clock milliseconds of each ``act`` call of bot A, per phase (beg, dealer,
play, call); the summary adds the CPU milliseconds of the deciding thread.

**Where the points went** (:class:`Tally`): the points each bot's side scored a deal, by kind (kick,
one given, High, Low, Jack, Hang Jack, Game: docs/rules.md, Scoring), and how often each bot begged
as the player to the dealer's right and gave one or ran the pack as dealer. On the same decks both
ways, a difference by kind says where one bot gains on the other: the choices before play (kicks and
ones), or the play (Jack, Hang Jack, Game; High and Low are the cards').
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from arena.ratings.elo import elo_of_score
from referee.events import Event
from referee.rules import RuleSet
from sdk.bot import BotLike, Choice, Context, IllegalChoice, call_hook, load_bot
from sdk.local_table import BotFailed, play_local, rules_option

#: 97.5% quantile of the standard normal: the half width of a 95% interval in standard errors.
Z95 = 1.959964


@dataclass(frozen=True, slots=True)
class EloInterval:
    """``elo`` of A over B with the 95% interval ``[ci_low, ci_high]`` from ``pairs`` pair scores
    (``-inf``/``+inf``: unbounded); ``score`` is A's mean score (0..1)."""

    elo: float
    ci_low: float
    ci_high: float
    pairs: int
    score: float


def elo_interval(pair_scores: Sequence[float]) -> EloInterval:
    """The Elo difference and its 95% interval from each pair's mean score (module docstring).

    :raises ValueError: without any pair.
    """
    from scipy.special import stdtrit  # the arena's dependency: this module never runs in a bot's image

    n = len(pair_scores)
    if n == 0:
        raise ValueError("no pairs played: an Elo difference needs at least one pair")
    mean = sum(pair_scores) / n
    spread = statistics.stdev(pair_scores) if n > 1 else 0.0
    # no spread seen (one pair, or all alike): the widest a pair's score can have, 0.5, a bound: the normal's z
    quantile = float(stdtrit(n - 1, 0.975)) if spread > 0 else Z95
    half = quantile * (spread or 0.5) / math.sqrt(n)
    edge = 1.0 / (4 * n)

    def elo(p: float) -> float:
        return -math.inf if p <= 0 else math.inf if p >= 1 else elo_of_score(p)

    return EloInterval(elo=elo_of_score(min(1.0 - edge, max(edge, mean))), ci_low=elo(mean - half),
                       ci_high=elo(mean + half), pairs=n, score=mean)


#: The kinds of points in the order the rules count them (docs/rules.md, The deal and Scoring).
POINT_KINDS = ("kick", "one", "high", "low", "jack", "hang_jack", "game")
#: The choices before play (events of those names): beg or stand, give one or run the pack.
CHOICES = ("begged", "stood", "gave_one", "ran_pack")


@dataclass(slots=True)
class Tally:
    """Where the points of a spar went (module docstring), from the public events of every game.

    - ``deals``: deals played (a pack that ran dry and was dealt again counts twice);
    - ``points[kind]``: ``[A's side, B's side]`` points scored of that kind (:data:`POINT_KINDS`);
    - ``choices[kind]``: ``[A, B]``: how often each bot made that choice (:data:`CHOICES`).
    """

    deals: int = 0
    points: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in POINT_KINDS})
    choices: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in CHOICES})

    def hear(self, ev: Event, a_side: int) -> None:
        """Count one public event of a game in which A holds side ``a_side``."""
        if ev.kind == "deal_started":
            self.deals += 1
        elif ev.kind == "points_scored" and ev.side is not None:
            self.points.setdefault(ev.points_kind, [0, 0])[0 if ev.side == a_side else 1] += ev.value
        elif ev.kind in self.choices and ev.seat is not None:
            self.choices[ev.kind][0 if ev.seat % 2 == a_side else 1] += 1

    def summary(self) -> dict[str, object]:
        """JSON-ready: ``deals``; ``points_per_deal`` (kind, and ``all``: ``[A, B]`` a deal, 3
        decimals); ``choices`` (kind: ``[A, B]`` counts)."""
        n = max(self.deals, 1)
        per_deal = {k: [round(a / n, 3), round(b / n, 3)] for k, (a, b) in self.points.items()}
        per_deal["all"] = [round(sum(v[i] for v in self.points.values()) / n, 3) for i in (0, 1)]
        return {"deals": self.deals, "points_per_deal": per_deal,
                "choices": {k: list(v) for k, v in self.choices.items()}}


class _Timed:
    """A bot that records the wall and the CPU (its thread's) milliseconds of each ``act`` call per
    phase in ``result``; every other attribute (hooks, ``name``) is the wrapped bot's. With ``a_side``
    (one seat of A's side a game) it also counts the game's public events in ``result.tally``."""

    def __init__(self, bot: BotLike, result: SparResult, a_side: int | None = None) -> None:
        self._bot = bot
        self._result = result
        self._a_side = a_side

    def on_event(self, ev: Event) -> None:
        if self._a_side is not None:
            self._result.tally.hear(ev, self._a_side)
        call_hook(self._bot, "on_event", ev)

    def act(self, ctx: Context) -> Choice:
        start, cpu = time.perf_counter(), time.thread_time()
        choice = self._bot.act(ctx)
        phase = ctx.phase.value
        self._result.times.setdefault(phase, []).append((time.perf_counter() - start) * 1000.0)
        self._result.cpu.setdefault(phase, []).append((time.thread_time() - cpu) * 1000.0)
        return choice

    @property
    def wrapped(self) -> BotLike:
        """The bot timed (``sdk.local_table.bot_spec`` names it, not this wrapper)."""
        return self._bot

    def __getattr__(self, name: str) -> object:
        return getattr(self._bot, name)


@dataclass(slots=True)
class SparResult:
    """What :func:`spar` measured: A's ``scores`` per pair (0, 0.5 or 1) and A's decision times in
    milliseconds per phase: wall clock (``times``) and CPU of the deciding thread (``cpu``: what the
    decision costs on one core, whatever the machine's load); where the points went (``tally``)."""

    scores: list[float] = field(default_factory=list)
    times: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)

    def summary(self) -> dict[str, object]:
        """A JSON-ready summary: ``elo``, ``ci_low``, ``ci_high`` (``None``: unbounded), ``pairs``, ``score``,
        ``decision_ms_p50``/``_p99`` (wall) and ``decision_cpu_ms_p50``/``_p99`` over all of A's
        decisions, ``phase_ms`` (wall p50, p99, count per phase), and :meth:`Tally.summary`'s
        ``deals``, ``points_per_deal`` and ``choices``."""
        iv = elo_interval(self.scores)
        every = [t for ts in self.times.values() for t in ts]
        cpu = [t for ts in self.cpu.values() for t in ts]
        return {
            "elo": round(iv.elo, 1), "ci_low": _bound(iv.ci_low), "ci_high": _bound(iv.ci_high),
            "pairs": iv.pairs, "score": round(iv.score, 4),
            "decision_ms_p50": round(percentile(every, 50), 1), "decision_ms_p99": round(percentile(every, 99), 1),
            "decision_cpu_ms_p50": round(percentile(cpu, 50), 1),
            "decision_cpu_ms_p99": round(percentile(cpu, 99), 1),
            "phase_ms": {ph: {"p50": round(percentile(ts, 50), 1), "p99": round(percentile(ts, 99), 1),
                              "decisions": len(ts)} for ph, ts in sorted(self.times.items())},
            **self.tally.summary(),
        }


def _bound(x: float) -> float | None:
    """An interval's end for JSON: to 0.1 Elo, or ``None`` when unbounded."""
    return round(x, 1) if math.isfinite(x) else None


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100.0 * len(ordered)) - 1))]


def spar(make_a: Callable[[], BotLike], make_b: Callable[[], BotLike], players: int = 4, pairs: int = 10,
         label: str = "spar", rules: RuleSet | None = None,
         progress: Callable[[int, SparResult], None] | None = None, first: int = 0) -> SparResult:
    """Play ``pairs`` duplicate pairs of A (``make_a()`` per seat) against B (module docstring).

    Pair ``k`` (``first``, ``first + 1``, ...) uses the match seed SHA-256 of
    ``"<label>/<players>/<k>"``, so runs with disjoint ranges of pairs (one a core) add up to one
    longer run. ``progress(k, result)`` is called after each pair.

    :raises ValueError: for ``pairs < 1``, ``first < 0`` or a bad table size.
    """
    if pairs < 1 or first < 0:
        raise ValueError(f"pairs must be at least 1 and first at least 0, not pairs={pairs} first={first}")
    rules = rules if rules is not None else RuleSet(players=players)
    result = SparResult()
    for k in range(first, first + pairs):
        seed = hashlib.sha256(f"{label}/{rules.players}/{k}".encode()).digest()
        score = 0.0
        for a_side in (0, 1):
            bots = [_Timed(make_a(), result, a_side if s == a_side else None) if s % 2 == a_side else make_b()
                    for s in range(rules.players)]
            winner = play_local(bots, rules=rules, seed=seed).match.games[0].winner
            score += 0.5 if winner is None else float(winner == a_side)
        result.scores.append(score / 2)
        if progress is not None:
            progress(k, result)
    return result


def format_summary(name_a: str, name_b: str, players: int, summary: dict[str, object]) -> str:
    """Human-readable lines for :meth:`SparResult.summary`."""
    lines = [f"{name_a} vs {name_b}, {players} players, {summary['pairs']} duplicate pairs: "
             f"{_elo_text(summary)}, score {summary['score']}"]
    phases = summary["phase_ms"]
    assert isinstance(phases, dict)
    for phase, t in phases.items():
        lines.append(f"  {name_a} {phase:<7} {t['decisions']:>5} decisions, ms p50 {t['p50']}, p99 {t['p99']}")
    return "\n".join(lines + _tally_lines(name_a, name_b, summary))


def _elo_text(summary: dict[str, object]) -> str:
    """``Elo +E (95% L .. H)`` of :meth:`SparResult.summary`; when every game was lost (won) the score
    was clamped (module docstring), so the estimate is only a bound and the text says so:
    ``Elo below E (every game lost, so the estimate is a bound: ...; 95% L .. H)``."""
    low, high = summary["ci_low"], summary["ci_high"]
    interval = f"95% {'-inf' if low is None else f'{low:+}'} .. {'+inf' if high is None else f'{high:+}'}"
    if summary["score"] == 0:
        return (f"Elo below {summary['elo']:+} (every game lost, so the estimate is a bound: "
                f"the score 0 is clamped to 1/(4 pairs); {interval})")
    if summary["score"] == 1:
        return (f"Elo above {summary['elo']:+} (every game won, so the estimate is a bound: "
                f"the score 1 is clamped to 1 - 1/(4 pairs); {interval})")
    return f"Elo {summary['elo']:+} ({interval})"


def _tally_lines(name_a: str, name_b: str, summary: dict[str, object]) -> list[str]:
    """The points a deal by kind and the choices before play, one line each (:meth:`Tally.summary`)."""
    per_deal, choices = summary["points_per_deal"], summary["choices"]
    assert isinstance(per_deal, dict) and isinstance(choices, dict)
    name_a, name_b = name_a.rpartition(":")[2], name_b.rpartition(":")[2]
    kinds = ", ".join(f"{k.replace('_', ' ')} {a:.2f}/{b:.2f}"
                      for k, (a, b) in per_deal.items() if k != "all" and a + b)
    lines = [f"  points a deal over {summary['deals']} deals, {name_a}/{name_b}: "
             f"{per_deal['all'][0]:.2f}/{per_deal['all'][1]:.2f} ({kinds})"]
    for i, name in enumerate((name_a, name_b)):
        begs, stands, gives, runs = (choices[k][i] for k in CHOICES)
        lines.append(f"  {name}: begged {begs} of {begs + stands} times to the dealer's right; "
                     f"as dealer gave one {gives}, ran the pack {runs}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """The ``python -m sdk.spar`` command. Exit status 0; 1 when a bot fails (raises, exits or makes an
    illegal choice: one line naming the seat, the bot and the decision); 2 on a usage error; 130 on
    Ctrl-C."""
    p = argparse.ArgumentParser(prog="python -m sdk.spar", description=__doc__.split("\n\n")[0])
    p.add_argument("a", metavar="MYBOT", help="module:Class of the bot measured")
    p.add_argument("b", metavar="OTHERBOT", help="module:Class of its opponent")
    p.add_argument("--pairs", type=int, default=20, help="duplicate pairs (2 games each; default 20)")
    p.add_argument("--players", type=int, choices=(2, 4), default=None,
                   help="players at the table (default: the --rules' players, else 4)")
    p.add_argument("--seed", default="spar", help="label the pairs' match seeds are made from")
    p.add_argument("--rules", default=None, help='rule options as JSON, e.g. \'{"target": 7}\'')
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    return run(p, args.a, args.b, args.players, args.pairs, args.seed, args.rules, args.json)


def run(p: argparse.ArgumentParser, a: str, b: str, players: int | None, pairs: int, seed: str,
        rules_json: str | None, as_json: bool) -> int:
    """Check the arguments, spar, print the result (shared by ``sdk.spar`` and ``sdk.local --duplicate``).

    :returns: the exit status (:func:`main`); usage errors exit through ``p.error`` (2).
    """
    if pairs < 1:
        p.error(f"at least one pair is needed, not {pairs}")
    try:
        rules = rules_option(rules_json, players)
        load_bot(a), load_bot(b)
    except ValueError as e:
        p.error(str(e))
    try:
        result = spar(lambda: load_bot(a), lambda: load_bot(b), rules.players, pairs, seed, rules)
    except (BotFailed, IllegalChoice) as e:
        return fail(p, e)
    except KeyboardInterrupt:
        return interrupted(p)
    summary = result.summary()
    return emit(json.dumps(summary, indent=2) if as_json else format_summary(a, b, rules.players, summary))


def emit(text: str) -> int:
    """Print ``text`` on stdout; the exit status: 0, or 1 when the reader went away (``… | head``), then
    quietly: stdout is pointed at /dev/null so that the flush at exit raises nothing more."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def fail(p: argparse.ArgumentParser, error: Exception) -> int:
    """Report a bot's failure in one line on stderr (``PROG: error: ...``); the exit status, 1."""
    print(f"{p.prog}: error: {error}", file=sys.stderr)
    return 1


def interrupted(p: argparse.ArgumentParser) -> int:
    """Report Ctrl-C in one line on stderr; the exit status, 130 (the shell's for SIGINT)."""
    print(f"{p.prog}: interrupted", file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
