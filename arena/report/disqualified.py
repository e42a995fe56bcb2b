"""A competition's disqualified entrants in a publication (docs/competition.md, "Disqualifying a competitor").

The host's ``arena competitor disqualify`` records a competitor's disqualification in the book
(:meth:`arena.competition.book.CompetitionBook.disqualify`); every publication of the league (``arena serve``'s,
``arena competition close``'s, ``arena web``'s own) reads it there (:func:`read_barred`) and rates the other
entrants without any game a disqualified entrant sat in (:func:`rated`): those games stay in the store,
``games.jsonl`` and the replays, for audit. The board lists the disqualified entrants apart
(:func:`disqualified_facts`, ``tournament.disqualified``), each with the host's reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from arena.competition.book import REASON_CHARS, read_disqualified
from arena.report.cache import StoredGame
from arena.tournament.runner import LeftOut


def read_barred(output: Path) -> dict[str, str]:
    """The disqualified entrants of the competition in the output folder ``output`` -> the host's reason, each
    cut to :data:`REASON_CHARS` (``{}``: no competition there, or nobody disqualified)."""
    return {bot: why[:REASON_CHARS] for bot, why in read_disqualified(output).items()}


def rated(stored: Sequence[StoredGame], barred: Mapping[str, str]) -> list[StoredGame]:
    """``stored`` but the games in which an entrant of ``barred`` sat (in their order)."""
    if not barred:
        return list(stored)
    return [g for g in stored if not any(side in barred for side in g.result.sides)]


def disqualified_facts(barred: Mapping[str, str]) -> list[LeftOut]:
    """``[{"bot", "why"}]``: each entrant of ``barred`` (every version of a disqualified competitor, in the order
    they were submitted), ``why`` being ``disqualified: REASON``."""
    return [LeftOut(bot=bot, why=f"disqualified: {why}") for bot, why in barred.items()]
