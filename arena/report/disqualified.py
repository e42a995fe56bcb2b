"""A competition's disqualified entrants in a publication (docs/competition.md, "Disqualifying a competitor").

The host's ``arena competitor disqualify`` records a competitor's disqualification in the book
(:meth:`arena.competition.book.CompetitionBook.disqualify`); every publication of the league (``arena serve``'s,
``arena competition close``'s, ``arena web``'s own) reads it there (:func:`read_barred`) and rates the other
entrants without any game a disqualified entrant sat in (:func:`rated`): those games stay in the store,
``games.jsonl`` and the replays, for audit. The board lists the disqualified entrants apart
(:func:`disqualified_facts`, ``tournament.disqualified``), each with the host's reason; a ladder's board lists
them neither in its standings nor in the pairs it chose last (:func:`ladder_without`), and its standings and the
figures of those pairs are fitted with their games void (:func:`mark_barred`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.competition.book import REASON_CHARS, read_disqualified
from arena.report.cache import StoredGame
from arena.tournament.runner import LeftOut, TournamentFacts, is_barred_forfeit
from arena.tournament.store import LOCK_WAIT_S


def read_barred(output: Path, wait_s: float = LOCK_WAIT_S) -> dict[str, str]:
    """The disqualified entrants of the competition in the output folder ``output`` -> the host's reason, each
    cut to :data:`REASON_CHARS` (``{}``: no competition there, or nobody disqualified); ``wait_s``: for a busy book
    (:func:`read_disqualified`)."""
    return {bot: why[:REASON_CHARS] for bot, why in read_disqualified(output, wait_s).items()}


def rated(stored: Sequence[StoredGame], barred: Mapping[str, str]) -> list[StoredGame]:
    """``stored`` but the games in which an entrant of ``barred`` sat, and those a final's run forfeited by its bar
    (:func:`arena.tournament.runner.is_barred_forfeit`: never played; void once the disqualification is undone
    too), in their order."""
    return [g for g in stored if not any(side in barred for side in g.result.sides) and not is_barred_forfeit(g.result)]


def disqualified_facts(barred: Mapping[str, str]) -> list[LeftOut]:
    """``[{"bot", "why"}]``: each entrant of ``barred`` (every version of a disqualified competitor, in the order
    they were submitted), ``why`` being ``disqualified: REASON``."""
    return [LeftOut(bot=bot, why=f"disqualified: {why}") for bot, why in barred.items()]


#: A ladder board's refit: the board with the games of the barred entrants void, its standings and its last pairs'
#: figures refitted, ``voided`` the barred ones (:func:`arena.formats.ladder_run.refitted_board` over the games
#: published).
Refit = Callable[[Mapping[str, Any]], dict[str, Any]]


def mark_barred(facts: TournamentFacts, barred: Mapping[str, str], refit: Refit) -> None:
    """List ``barred`` (the disqualified entrants, :func:`read_barred`) in ``facts`` as every publication and page
    shows them: ``disqualified`` (:func:`disqualified_facts`), and a ladder's board without them
    (:func:`ladder_without`), its standings and its last pairs' figures (gap, sd, undecided) fitted with their games
    void: a board the ladder wrote with other entrants void (its ``voided``: before the disqualification, or its
    undoing) is ``refit``."""
    if barred:
        facts["disqualified"] = disqualified_facts(barred)
    board = facts.get("ladder")
    if board is None:
        return
    voided = board.get("voided")
    if sorted(voided if isinstance(voided, list) else []) != sorted(barred):
        board = refit(board)
    facts["ladder"] = ladder_without(board, barred)


def ladder_without(board: Mapping[str, Any], barred: Mapping[str, str]) -> dict[str, Any]:
    """A ladder's ``board`` (:meth:`arena.formats.ladder_run.LadderRun.board`, as the store keeps it) without the
    entrants of ``barred``: no standing (a rank on the board), no pair of the ``plan`` that seats one (never to be
    played: a blind plan's pairs name nobody and stay), no pair of ``pending`` that seats one (the refit counted
    them already), ``reasons`` those of the pairs left. A board written before the disqualification (an ``arena
    serve`` stopped then, or still to reload) listed them."""
    if not barred:
        return dict(board)
    plan = [c for c in board.get("plan") or [] if c.get("a") not in barred and c.get("b") not in barred]
    pending = [p for p in board.get("pending") or [] if not any(x in barred for x in p)]
    return {**board, "standings": [s for s in board.get("standings") or [] if s.get("name") not in barred],
            "plan": plan, "pending": pending, "reasons": list(dict.fromkeys(c["reason"] for c in plan))}
