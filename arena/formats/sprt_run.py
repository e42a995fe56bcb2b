"""The ``format = "sprt"`` tournament: a candidate against a baseline in duplicate pairs until the SPRT
decides or the game limit (``games_per_pairing``) is reached.

The schedule is the ordinary one for two bots (arena/tournament/schedule.py): pair ``k`` of the single pairing,
both games from the same seed with the sides swapped. The test (:class:`arena.formats.sprt.SequentialTest`)
is fed the pairs in schedule order as they complete; when it decides, no new game starts (games in
flight finish and are stored, but do not change the decision, which is taken at the first pair that
crossed a bound). A pair with a game without a winner (both sides forfeited: no evidence either way) is
skipped. A rerun recomputes the test from the stored games, so an interrupted test resumes, and a
decided one plays nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.config import TournamentConfig
from arena.formats.sprt import SequentialTest, candidate_points, elo_text, run_in_order
from arena.ratings.fit import games_from_mapping
from arena.tournament.result import GameResult
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import games_rows


class SprtRun:
    """The test of one sprt tournament, kept up to date as results arrive.

    :param config: a config with ``sprt`` settings (``format = "sprt"``).
    :param schedule: the tournament's schedule (its pair ids give the order).
    :param stored: the results stored so far.
    :raises ValueError: if the config has no sprt settings.
    """

    def __init__(self, config: TournamentConfig, schedule: Sequence[ScheduledGame], stored: Sequence[GameResult]):
        if config.sprt is None:
            raise ValueError("not an sprt tournament")
        self.test = SequentialTest(config.sprt)
        self.order = list(dict.fromkeys(g.pair_id for g in schedule))
        self.scores = candidate_points(games_from_mapping(games_rows(stored)), config.sprt)
        self.void: dict[str, int] = {}  # pair id -> its games without a winner (not rated: the pair is skipped)
        for result in stored:
            self._count_void(result)
        run_in_order(self.test, self.scores, self.order, self.void)

    def _count_void(self, result: GameResult) -> None:
        if result.score_a is None:
            self.void[result.pair_id] = self.void.get(result.pair_id, 0) + 1

    def add(self, result: GameResult) -> bool:
        """Count a new result; returns True once the test has decided (stop starting games)."""
        for game in games_from_mapping(games_rows([result])):
            more = candidate_points([game], self.test.settings)
            for pair, points in more.items():
                self.scores.setdefault(pair, []).extend(points)
        self._count_void(result)
        run_in_order(self.test, self.scores, self.order, self.void)
        return self.test.decided

    def summary(self) -> str:
        """One line for the terminal."""
        r, s = self.test.result, self.test.settings
        t = self.test
        state = f"decided {r.decision} at pair {t.stopped_at} of the schedule" if t.decided else "undecided"
        state += f" after {t.pairs} pairs counted"
        if t.skipped:
            state += f" ({t.skipped} skipped: a game without a winner)"
        return (
            f"SPRT {s.candidate} vs {s.baseline} [{s.elo0:g}, {s.elo1:g}] ({s.model}): {state}; "
            f"LLR {r.llr:.3f} in [{r.lower:.3f}, {r.upper:.3f}]; "
            f"Elo {elo_text(r.elo)} [{elo_text(r.elo_ci[0])}, {elo_text(r.elo_ci[1])}]"
        )
