"""The rule options of one game (docs/rules.md; every option and its default is named there)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

#: Bumped whenever the engine's behaviour changes; recorded in every match record.
ENGINE_VERSION = "1.0.0"

DEAL_IN_CHOICES = ("ones", "threes")


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The named rule options of a game (docs/rules.md). All fields have the rulebook's defaults.

    - ``players``: 2 (head to head) or 4 (two partnerships). docs/rules.md, Table.
    - ``deal_in``: ``"threes"`` (default) or ``"ones"``: how cards are dealt. docs/rules.md, The deal 1.
    - ``target``: points that win the game (default 14). docs/rules.md, The deal 5.
    - ``hang_jack``: the side opposed to the jack's holder that wins it scores ``hang_jack_points``
      instead of 1 (default on). docs/rules.md, Scoring 3.
    - ``undertrump_ban``: a player who cannot follow may not undertrump (default off). docs/rules.md, Play.
    - ``void_may_discard``: a player void in the led suit may discard instead of trumping (default
      off). docs/rules.md, Play.
    - ``kicked_six_points``: points a kicked Six scores for the dealer's side, 2 (default) or 1 (a
      common table variant). docs/rules.md, The deal 2.
    - ``hang_jack_points``: points a hanged Jack scores, a whole number >= 2 (default 3). docs/rules.md,
      Scoring 3.

    A new option is this field (with its check below), the engine's rule that reads it and the
    ``allfours.v1.RuleSet`` field of the same name: ``referee.wire`` converts by field name.

    :raises ValueError: from the constructor when a value is out of range.
    """

    players: int = 4
    deal_in: str = "threes"
    target: int = 14
    hang_jack: bool = True
    undertrump_ban: bool = False
    void_may_discard: bool = False
    kicked_six_points: int = 2
    hang_jack_points: int = 3

    def __post_init__(self) -> None:
        if self.players not in (2, 4) or isinstance(self.players, bool):
            raise ValueError(f"players must be 2 or 4, not {self.players!r}")
        if self.deal_in not in DEAL_IN_CHOICES:
            raise ValueError(f"deal_in must be 'ones' or 'threes', not {self.deal_in!r}")
        if not isinstance(self.target, int) or isinstance(self.target, bool) or self.target < 1:
            raise ValueError(f"target must be a positive whole number of points, not {self.target!r}")
        if self.kicked_six_points not in (1, 2) or isinstance(self.kicked_six_points, bool):
            raise ValueError(f"kicked_six_points must be 1 or 2, not {self.kicked_six_points!r}")
        if not isinstance(self.hang_jack_points, int) or isinstance(self.hang_jack_points, bool) \
                or self.hang_jack_points < 2:
            raise ValueError(f"hang_jack_points must be a whole number of at least 2, not {self.hang_jack_points!r}")
        for name in ("hang_jack", "undertrump_ban", "void_may_discard"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, not {getattr(self, name)!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RuleSet:
        """Build from a mapping of option names; omitted options take their defaults.

        :raises ValueError: on an unknown option name or a bad value.
        """
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown rule option(s) {unknown}; known: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """All options as a JSON-ready mapping (used in records and replays)."""
        return asdict(self)
