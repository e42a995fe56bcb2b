"""The stored games a blind tournament's publication holds back (docs/tournament-config.md, "Blind seats").

The two games of a pair seat the same two entrants (a duplicate pair's, and a remote entrant's pair of
independent games alike: one pair id), so while the first is shown and its twin plays, the twin's entrants
are known. So when the tournament is blind (``blind_seats``), a stored game whose pair has no other game
stored is **held**: the public publication (games.jsonl, ratings.json and its ratings, failures and
``played``, the leaderboard, the web's games list, ``/api/games`` and ratings, a competitor's ``/me``)
leaves it out, as if not yet played, while its twin is still to be played: that is, while

- its master seed is not revealed (``arena run`` reveals it at the end, when every game is played or an
  SPRT decided: then no twin is to be played),
- both its entrants are scheduled now (``active``: an entrant retired, dropped or replaced by a newer
  version plays no more), and
- its pair is one the schedule still holds (its number below ``games_per_pairing / 2``; a ladder has no
  schedule, and plays the missing game of every half-played pair whose entrants are both active first:
  :meth:`arena.formats.ladder_run.LadderRun.unfinished`).

It is **released** (published) as soon as one of these stops: its twin is stored, or the twin is no longer to
be played. The store keeps every game (crash recovery, the arena's own view), only what is shown waits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from arena.tournament.store import Lone

#: The pair number at the end of a pair id (``<name>-p<i>-<j>-d<k>``: arena/tournament/schedule.py).
_PAIR_NUMBER = re.compile(r"-d(\d+)\Z")


@dataclass(frozen=True, slots=True)
class Holding:
    """What decides which games are held (module docstring), from a tournament's public facts: ``on``
    (blind, the master seed not revealed), the ``active`` entrants (None: the facts do not say, then every
    entrant counts as scheduled), ``pairs``, the pairs per pairing of a round robin, and ``ladder`` (a
    ladder: no pair number is past its schedule)."""

    on: bool
    active: frozenset[str] | None
    pairs: int
    ladder: bool = False

    @classmethod
    def of(cls, facts: Mapping[str, object]) -> Holding:
        """The holding of a tournament whose public facts (``ratings.json``'s ``tournament``, the store's
        :data:`arena.tournament.runner.FACTS_KEY`) are ``facts``."""
        on = facts.get("blind_seats") is True and facts.get("master_seed") is None
        active = facts.get("active")
        per = facts.get("games_per_pairing")
        return cls(on, frozenset(str(a) for a in active) if isinstance(active, list) else None,
                   per // 2 if isinstance(per, int) else 0, facts.get("format") == "ladder")

    def held(self, lone: Iterable[Lone]) -> frozenset[str]:
        """The ids of the games of ``lone`` (stored games without a stored twin:
        :meth:`arena.tournament.store.GamesReader.lone_games`) held back now."""
        if not self.on:
            return frozenset()
        return frozenset(g.game_id for g in lone if self._twin_to_play(g))

    def _twin_to_play(self, game: Lone) -> bool:
        number = _PAIR_NUMBER.search(game.pair_id)
        return (number is not None and (self.ladder or int(number[1]) < self.pairs)
                and (self.active is None or set(game.sides) <= self.active))
