"""The pure rules engine of All Fours, Trinidad rules (docs/rules.md).

No I/O, clocks, logging, networking or global randomness live here (a test walks the imports).
Public API::

    from referee.rules import (Card, Suit, Rank, Seat, RuleSet, Phase, State, Observation,
                               new_game, deal, legal_actions, apply, observe, cut_for_dealer,
                               RuleError, Reason, Stand, Beg, GiveOne, RunPack, Play, Call, Pass)
"""

from referee.rules.actions import (
    BEG,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Action,
    Beg,
    Call,
    GiveOne,
    Pass,
    Play,
    RunPack,
    Stand,
    action_from_do,
    parse_action,
)
from referee.rules.cards import CANONICAL_DECK, Card, Rank, Suit, format_cards, parse_cards, parse_deck
from referee.rules.engine import (
    DealRecord,
    Observation,
    Phase,
    PointEvent,
    State,
    Trick,
    apply,
    cut_for_dealer,
    deal,
    legal_actions,
    legal_cards,
    new_game,
    observe,
    trick_winner,
)
from referee.rules.errors import Reason, RuleError
from referee.rules.ruleset import ENGINE_VERSION, RuleSet
from referee.rules.seats import Seat, next_seat, opponents_in_order, partner_of, seats_from, side_of

__all__ = [
    "BEG", "CANONICAL_DECK", "ENGINE_VERSION", "GIVE_ONE", "PASS", "RUN_PACK", "STAND",
    "Action", "Beg", "Call", "Card", "DealRecord", "GiveOne", "Observation", "Pass", "Phase", "Play",
    "PointEvent", "Rank", "Reason", "RuleError", "RuleSet", "RunPack", "Seat", "Stand", "State", "Suit",
    "Trick", "action_from_do", "apply", "cut_for_dealer", "deal", "format_cards", "legal_actions",
    "legal_cards", "new_game", "next_seat", "observe", "opponents_in_order", "parse_action",
    "parse_cards", "parse_deck", "partner_of", "seats_from", "side_of", "trick_winner",
]
