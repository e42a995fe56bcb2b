"""The terminal's view of a tournament: the ranking table (a competition's disqualified entrants below its
ranked rows, not ranked), the bots' failures table, the bots left out
(``arena serve``) and the live progress bar (rich; one line a bot in a pipe or a CI log)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from arena.report import failures
from arena.report.figures import interval_note, interval_text, los_next, ranks

if TYPE_CHECKING:
    from arena.ratings.fit import RatingTable
    from arena.tournament.runner import TournamentFacts


def ratings_table(ratings: RatingTable, tournament: TournamentFacts | None = None) -> Table:
    """A rich table of the ranking: rank (shared by equal ratings), bot, version, Elo, 95% interval,
    games, score, LOS vs next; then, not ranked, each disqualified entrant of ``tournament`` (its
    ``disqualified`` facts) as ``BOT  disqualified: REASON`` (:func:`_add_disqualified`).

    Intervals are whole Elo points and never wrapped (a pipe or CI log gets one line a bot); an
    interval the bootstrap alone could not estimate is marked ``*`` and explained in the caption.
    """
    versions = (tournament or {}).get("bots", {})
    los = los_next(ratings)
    note = interval_note(ratings)
    table = Table(title=str((tournament or {}).get("name", "ratings")), caption=note or None, caption_justify="left")
    columns: tuple[tuple[str, JustifyMethod, bool], ...] = (  # heading, justified, may wrap
        ("#", "right", False),
        ("bot", "left", True),
        ("version", "left", True),
        ("Elo", "right", False),
        ("95% interval", "right", False),
        ("games", "right", False),
        ("score", "right", False),
        ("LOS next", "right", False),
    )
    for col, just, wrap in columns:
        table.add_column(col, justify=just, no_wrap=not wrap)
    rank = ranks(ratings)
    for name, r in ratings["ratings"].items():
        lv = los.get(name)
        table.add_row(
            str(rank[name]),
            name,
            str(versions.get(name, "")),
            f"{r['elo']:.1f}",
            interval_text(r, 0),
            str(r["games"]),
            f"{r['score']:g}",
            "" if lv is None else f"{lv:.1%}",
        )
    _add_disqualified(table, tournament)
    return table


def _add_disqualified(table: Table, tournament: TournamentFacts | None) -> None:
    """Below ``table``'s ranked rows, one row a disqualified entrant (the ``disqualified`` facts,
    :mod:`arena.report.disqualified`), not ranked: no rank, the bot followed by ``disqualified: REASON`` (plain
    text: the host's reason is no markup), its version, no figures (its games are not rated)."""
    rows = (tournament or {}).get("disqualified", [])
    if not rows:
        return
    versions = (tournament or {}).get("bots", {})
    table.add_section()
    for row in rows:
        table.add_row("", Text(f"{row['bot']}  {row['why']}"), Text(str(versions.get(row["bot"], ""))),
                      *[""] * (len(table.columns) - 3))


def failure_rows(tournament: TournamentFacts | None) -> list[tuple[str, failures.Failures]]:
    """(bot, counts) in the ratings' order, from the ``failures`` facts (see :mod:`arena.report.failures`)."""
    out = []
    for name, data in (tournament or {}).get("failures", {}).items():
        counts = failures.Failures()
        counts.add(data)
        out.append((name, counts))
    return out


def failures_table(tournament: TournamentFacts | None, order: Sequence[str] = ()) -> Table:
    """A rich table of each bot's failures (forfeited games, exceptions in its ``act``, fallback moves,
    rejected actions, timeouts, crashes), bots in ``order`` first."""
    table = Table(title="bot failures")
    names = [f.name for f in dataclass_fields(failures.Failures)]
    table.add_column("bot", justify="left")
    for n in names:
        table.add_column(n, justify="right", no_wrap=True)
    rank = {name: k for k, name in enumerate(order)}
    for name, counts in sorted(failure_rows(tournament), key=lambda x: rank.get(x[0], len(rank))):
        table.add_row(escape(name), *(str(getattr(counts, n)) for n in names))
    return table


def left_out_table(tournament: TournamentFacts | None) -> Table | None:
    """A rich table of the bots ``arena serve`` leaves out, each with its one-line reason (the ``left_out``
    facts, :data:`arena.tournament.runner.LEFT_OUT_KEY`); None when no bot is left out."""
    rows = (tournament or {}).get("left_out", [])
    if not rows:
        return None
    table = Table(title="left out (none of their games is played until a reload checks them again)")
    table.add_column("bot", justify="left")
    table.add_column("why", justify="left")
    for row in rows:
        table.add_row(escape(row["bot"]), escape(row["why"]))
    return table


@contextmanager
def progress_bar(
    total: int, done: int = 0, console: Console | None = None, enabled: bool = True
) -> Iterator[Any]:
    """A live progress bar (games done / total, rate, elapsed, ETA, the bots' failures so far); yields
    ``advance(n=1, failures=None)`` (``failures``: a one-line summary shown at the end of the bar).

    ``done`` games (from an earlier run) start the bar. With ``enabled=False`` nothing is drawn.
    """
    if not enabled:
        yield lambda n=1, failures=None: None
        return
    prog = Progress(
        TextColumn("[bold]games"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("[yellow]{task.fields[failures]}"),
        console=console,
        transient=False,
    )
    import time

    start = time.monotonic()
    base = done
    with prog:
        task = prog.add_task("games", total=total, completed=done, rate="", failures="")

        def advance(n: int = 1, failures: str | None = None) -> None:
            nonlocal done
            done += n
            elapsed = max(time.monotonic() - start, 1e-9)
            rate = f"{(done - base) / elapsed:.2f} games/s"
            if failures is None:
                prog.update(task, advance=n, rate=rate)
            else:
                prog.update(task, advance=n, rate=rate, failures=escape(failures))

        yield advance
