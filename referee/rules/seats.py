"""Seats and sides. All seat arithmetic lives here (docs/rules.md, "Table and cards").

Seats are numbered ``0..n-1`` in play order; play and the deal move to the right, and the player to
the right of seat ``s`` is seat ``(s + 1) % n``. The side (team) of seat ``s`` is ``s % 2``: with 4
players partners sit opposite (0 & 2, 1 & 3); with 2 players each seat is its own side.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Seat:
    """A seat at a table of ``players`` (2 or 4). ``index`` is the seat number in play order."""

    index: int
    players: int

    def __post_init__(self) -> None:
        if self.players not in (2, 4):
            raise ValueError(f"a table has 2 or 4 players, not {self.players}")
        if not 0 <= self.index < self.players:
            raise ValueError(f"seat {self.index} does not exist at a table of {self.players}")

    def __int__(self) -> int:
        return self.index

    @property
    def next(self) -> Seat:
        """The seat to this one's right: the next to play or deal."""
        return Seat(next_seat(self.index, self.players), self.players)

    @property
    def partner(self) -> Seat | None:
        """The partner opposite (4 players), or ``None`` in a 2-player game."""
        p = partner_of(self.index, self.players)
        return None if p is None else Seat(p, self.players)

    @property
    def side(self) -> int:
        """The side (team) number, 0 or 1."""
        return side_of(self.index)

    def iter_from(self) -> Iterator[Seat]:
        """All seats in play order starting with this one."""
        for k in range(self.players):
            yield Seat(seat_at(self.index, k, self.players), self.players)


def next_seat(seat: int, players: int) -> int:
    """The seat to the right of ``seat`` (the next in play order)."""
    return (seat + 1) % players


def seat_at(first: int, offset: int, players: int) -> int:
    """The seat ``offset`` places to the right of ``first`` (``offset`` 0: ``first`` itself)."""
    return (first + offset) % players


def side_of(seat: int) -> int:
    """The side (0 or 1) of ``seat``; the same rule holds for 2 and 4 players."""
    return seat % 2


def partner_of(seat: int, players: int) -> int | None:
    """The partner of ``seat`` (4 players), or ``None`` with 2 players."""
    return (seat + 2) % 4 if players == 4 else None


def seats_from(first: int, players: int) -> tuple[int, ...]:
    """All seats in play order starting with ``first``."""
    return tuple(seat_at(first, k, players) for k in range(players))


def opponents_in_order(seat: int, players: int) -> tuple[int, ...]:
    """The opponents of ``seat`` in play order, starting after ``seat`` (docs/rules.md, the call)."""
    return tuple(s for s in seats_from(next_seat(seat, players), players) if side_of(s) != side_of(seat))
