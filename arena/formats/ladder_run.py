"""The ``format = "ladder"`` tournament: the next duplicate pairs come from :mod:`arena.formats.ladder`
(the choice by what a pair teaches), not from a fixed schedule.

A :class:`LadderRun` is built from the stored results (so a restart resumes exactly: the same stored
games give the same next pairs) and fed each new one (:meth:`LadderRun.add`). :meth:`LadderRun.next_games`
returns the games to play now: first the missing game of every half-played pair (a pair interrupted by a
stop or a crash is finished before anything new), else the two games of each pair the ladder chooses.
A chosen pair of entrants ``a``, ``b`` with stable numbers ``i < j`` is pair ``k`` of pairing
``pairing_number(i, j)``, ``k`` one more than the highest pair of that pairing stored or in flight
(0 for the first): its ids (``<name>-p<i>-<j>-d<k>``) and deal seed
(:func:`arena.tournament.schedule.pair_seed`) are the round robin's, so the master seed still names
every deck. :meth:`LadderRun.board` is what the leaderboard shows (standings, why the last pairs were
chosen, why the ladder stopped); it is kept in the store's meta (:data:`arena.tournament.runner.LADDER_KEY`).
A competition's disqualified entrants are barred (:meth:`LadderRun.bar`): no pair of theirs, and their games
void in the ladder's fit (:meth:`arena.formats.ladder.Ladder.void`); a board written with other entrants void
than those barred now (before a disqualification, or its undoing) is refitted by its readers
(:func:`refitted_board`: its standings and its last pairs' figures).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from typing import Any

from arena.config import TournamentConfig
from arena.formats.ladder import Ladder, Plan, Played, Rules, Stop
from arena.tournament.result import GameResult
from arena.tournament.runner import Tournament
from arena.tournament.schedule import ScheduledGame, pair_games

#: ``<name>-p<i>-<j>-d<k>``: the entrants' numbers and the pair number of a pair id.
PAIR_ID = re.compile(r"-p(\d+)-(\d+)-d(\d+)$")
#: Stops after which a ladder tournament is complete (``arena run`` reveals the master seed).
FINAL_STOPS = (Stop.SETTLED, Stop.TOTAL_BUDGET)


def pairs_a_round(config: TournamentConfig) -> int:
    """How many pairs the ladder chooses a round (:meth:`LadderRun.next_games`): one a game of
    ``concurrency`` when a pair's two games are played one after the other (twins apart, the default:
    :func:`arena.tournament.runner.run_games`), so every slot has a first game to play; one per two
    games when ``tournament.twins_together`` lets both games of a pair run at once."""
    if config.twins_together:
        return max(1, (config.concurrency + 1) // 2)
    return config.concurrency


class LadderRun:
    """The ladder of one tournament (a config with ``ladder`` settings), kept up to date as results arrive.

    :param t: the open tournament; its stored results are counted at once.
    :raises ValueError: if the config has no ladder settings.
    """

    def __init__(self, t: Tournament):
        settings = t.config.ladder
        if settings is None:
            raise ValueError("not a ladder tournament")
        self.name, self.players, self.master_seed = t.config.name, t.config.players, t.master_seed
        self.budget, self.rules = settings.budget, settings.rules
        self.ladder = Ladder(t.master_seed, settings.rules)
        self.voided: list[str] = []  # the entrants barred (:meth:`bar`), sorted: their games are void
        self.numbers = {e.label: e.number for e in t.store.entrants()}
        self.labels = {n: label for label, n in self.numbers.items()}
        self.active = [label for label in t.labels if label in t.entrants]
        #: Remote entrants: their pairs are two independent games (arena/tournament/schedule.py).
        self.remote = {label for label, bot in t.entrants.items() if bot.mode == "remote"}
        #: Blind seats (``tournament.blind_seats``): the board names no pair of the plan and counts no
        #: half-played pair (:meth:`board`, :meth:`add`).
        self.blind = t.config.blind_seats
        self.top: dict[tuple[int, int], int] = {}  # pairing (i, j) -> highest pair number stored
        self.halves: dict[str, set[str]] = {}  # pair id -> game ids stored
        self._lone: dict[str, GameResult] = {}  # blind: pair id -> its one stored game, counted with its twin
        self.last: Plan | None = None
        #: The pairs in flight when :attr:`last` was made (each ``(a, b)``): it counted them as played.
        self.last_pending: list[tuple[str, str]] = []
        for result in t.store.results():
            self.add(result)

    def add(self, result: GameResult) -> None:
        """Count one stored game (its ``stored_at`` gives its day; now if unset). With blind seats the first
        game of a pair is counted only with its twin: until then the board (the ladder's ratings, pairs,
        games today) would move for its two entrants while their twin plays, and say whom it seats
        (docs/tournament-config.md, "Blind seats"); the choice meanwhile sees the pair as in flight."""
        self.halves.setdefault(result.pair_id, set()).add(result.game_id)
        m = PAIR_ID.search(result.pair_id)
        if m:
            i, j, k = (int(x) for x in m.groups())
            self.top[(i, j)] = max(self.top.get((i, j), -1), k)
        if self.blind and len(self.halves[result.pair_id]) == 1:
            self._lone[result.pair_id] = result
            return
        first = self._lone.pop(result.pair_id, None)
        for game in (first, result) if first is not None else (result,):
            self.ladder.add(_played(game))

    def _pair(self, i: int, j: int, k: int) -> list[ScheduledGame]:
        a, b = self.labels[i], self.labels[j]
        return pair_games(self.name, (i, a), (j, b), k, self.players, self.master_seed,
                          independent=bool({a, b} & self.remote))

    def leave_out(self, labels: Iterable[str]) -> bool:
        """Leave the entrants ``labels`` out of this run (bots that failed their check, ``arena run
        --skip-broken``): no pair of theirs is chosen or finished, and the board does not list them, so
        they take no games from the budgets. :returns: whether any of them was active."""
        out = set(labels) & set(self.active)
        self.active = [label for label in self.active if label not in out]
        return bool(out)

    def bar(self, barred: Collection[str]) -> None:
        """Bar the entrants ``barred`` (a competition's disqualified ones; the set as it is now: an entrant no
        longer in it, the disqualification undone, has its games count again): :meth:`leave_out` them, and void
        every game they sat in from the ladder's fit and every entrant's counts (:meth:`Ladder.void`), so no
        standing and no choice rests on those games. The board lists them as ``voided``."""
        self.leave_out(barred)
        self.voided = sorted(barred)
        self.ladder.void(barred)

    def unfinished(self) -> list[ScheduledGame]:
        """The missing game of every half-played pair whose entrants are both active, by pair id."""
        out = []
        for pair_id in sorted(p for p, ids in self.halves.items() if len(ids) == 1):
            m = PAIR_ID.search(pair_id)
            if m is None:
                continue
            i, j, k = (int(x) for x in m.groups())
            if self.labels.get(i) in self.active and self.labels.get(j) in self.active:
                out += [g for g in self._pair(i, j, k) if g.game_id not in self.halves[pair_id]]
        return out

    def next_games(self, count: int, now: float, in_flight: Sequence[ScheduledGame] = ()) -> list[ScheduledGame]:
        """The games to play now: the half-played pairs' missing games if any, else both games of each of
        up to ``count`` pairs the ladder chooses (:attr:`last` keeps its plan); empty: the ladder stopped.

        :param now: Unix seconds (the day of the per-day budgets).
        :param in_flight: games started and not yet stored: their pairs count as played.
        """
        flying = {g.game_id for g in in_flight}
        finish = [g for g in self.unfinished() if g.game_id not in flying]
        if finish:
            return finish
        pending = list({g.pair_id: g.sides for g in in_flight}.values())
        self.last = plan = self.ladder.next_pairs(self.active, self.budget, now, count, pending)
        self.last_pending = [(str(a), str(b)) for a, b in pending]
        top = dict(self.top)
        for g in in_flight:
            m = PAIR_ID.search(g.pair_id)
            if m:
                i, j, k = (int(x) for x in m.groups())
                top[(i, j)] = max(top.get((i, j), -1), k)
        games: list[ScheduledGame] = []
        for choice in plan.choices:
            i, j = sorted((self.numbers[choice.a], self.numbers[choice.b]))
            top[(i, j)] = k = top.get((i, j), -1) + 1
            games += self._pair(i, j, k)
        return games

    def plan_line(self) -> str:
        """One line on the last plan: the pairs chosen and why, or why the ladder stopped."""
        plan = self.last
        if plan is None:
            return "ladder: finishing half-played pairs"
        chosen = "; ".join(f"{c.a} v {c.b} ({c.reason.value})" for c in plan.choices)
        stop = f"stopped: {plan.stop.value}" if plan.stop is not None else ""
        return "ladder: " + " · ".join(x for x in (chosen, stop) if x)

    def board(self, now: float) -> dict[str, Any]:
        """JSON-ready: ``standings`` (per entrant, best first: name, elo, sd, pairs, games_today, new,
        settled), ``plan`` (the last pairs chosen: a, b, reason, gap, gap_sd, undecided), ``pending`` (the pairs in
        flight when it was made, ``[a, b]`` each, which its figures count as played: :attr:`last_pending`), ``reasons``
        (the distinct reasons of the plan), ``stop`` (why it chose fewer than asked, or null), ``budget``
        and ``games`` (counted by the ladder, the void games too), ``voided`` (the barred entrants whose games
        the fit leaves out: :meth:`bar`) and ``rules`` (the ladder's :class:`Rules`, to refit the board:
        :func:`refitted_board`).

        With blind seats (:attr:`blind`) each pair of ``plan`` is its ``reason`` alone: the chosen pairs
        are the games about to be played, so their names (or their gap, which the standings' ratings
        tell apart) would tell a remote entry's author, who reads this board while their bot plays, whom
        it seats (docs/tournament-config.md, "Blind seats"); ``plan_line``, the host's terminal, names them; nor is
        ``pending`` (the games being played) named: it is empty."""
        plan = self.last
        choices = [] if plan is None else [{**asdict(c), "reason": c.reason.value} for c in plan.choices]
        if self.blind:
            choices = [{"reason": c["reason"]} for c in choices]
        return {
            "standings": [asdict(s) for s in self.ladder.standings(self.active, now)] if len(self.active) else [],
            "plan": choices,
            "pending": [] if self.blind else [[a, b] for a, b in self.last_pending],
            "reasons": list(dict.fromkeys(c["reason"] for c in choices)),
            "stop": plan.stop.value if plan is not None and plan.stop is not None else None,
            "budget": {k: getattr(self.budget, k) for k in ("per_entrant_per_day", "per_entrant", "total")},
            "games": self.ladder.games,
            "voided": self.voided,
            "rules": asdict(self.rules),
        }

    def finished(self) -> bool:
        """Whether the last plan stopped for good (settled, or the total budget spent) with nothing chosen."""
        plan = self.last
        return plan is not None and not plan.choices and plan.stop in FINAL_STOPS


def _played(result: GameResult) -> Played:
    """The ladder's view of a stored game (stored at its ``stored_at``; now if unset)."""
    at = result.stored_at if result.stored_at is not None else time.time()
    return Played(result.sides[0], result.sides[1], result.score_a, result.pair_id, at)


def refitted_board(board: Mapping[str, Any], results: Iterable[GameResult], master_seed: bytes,
                   barred: Collection[str], now: float, *, blind: bool = False) -> dict[str, Any]:
    """A stored ladder ``board`` (:meth:`LadderRun.board`) refitted from the stored games ``results`` with the games
    of ``barred`` void (:meth:`LadderRun.bar`): what the ladder shows once it bars them, for a board written before
    (its ``voided`` not ``barred``). Its ``standings``: the entrants the board ranked but ``barred``; each named pair
    of its ``plan`` but those seating one of ``barred`` keeps its ``reason`` (why it was chosen, on the fit of its time)
    with its ``gap``, ``gap_sd`` and ``undecided`` by the refit, the pairs before it counted as chosen and the board's
    ``pending`` ones (in flight then) as played, as when the plan was made (:meth:`Ladder.gaps`; every one of them:
    the scheduler counted them so, whoever sits in them), so the public board's figures agree with its standings,
    rest on no void game and measure what the scheduler acted on; ``voided``: ``barred``. With ``blind`` seats a
    pair's first game counts only with its twin (:meth:`LadderRun.add`). The board's ``rules`` (the defaults for a
    board that has none); ``now``: Unix seconds, the day of ``games_today``."""
    known = {f.name for f in fields(Rules)}
    ladder = Ladder(master_seed, Rules(**{k: v for k, v in (board.get("rules") or {}).items() if k in known}))
    results = list(results)
    halves = Counter(r.pair_id for r in results)
    ladder.extend(_played(r) for r in results if not blind or halves[r.pair_id] > 1)
    ladder.void(barred)
    field = [s["name"] for s in board.get("standings") or [] if s.get("name") not in barred]
    standings = [asdict(s) for s in ladder.standings(field, now)] if field else []
    plan = [c for c in board.get("plan") or [] if c.get("a") not in barred and c.get("b") not in barred]
    named = [(str(c["a"]), str(c["b"])) for c in plan if "a" in c and "b" in c]  # a blind plan's name nobody
    pending = [(str(p[0]), str(p[1])) for p in board.get("pending") or [] if len(p) == 2]  # none on an older board
    figures = iter(ladder.gaps(named, pending))
    plan = [{**c, **asdict(next(figures))} if "a" in c and "b" in c else c for c in plan]
    return {**board, "standings": standings, "plan": plan, "reasons": list(dict.fromkeys(c["reason"] for c in plan)),
            "voided": sorted(barred)}
