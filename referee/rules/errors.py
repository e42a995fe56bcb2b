"""Typed rule errors with a reason code (docs/rules.md; the codes are part of the protocol)."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why an action was rejected. The values are the wire and replay codes."""

    NOT_YOUR_TURN = "not_your_turn"
    WRONG_PHASE = "wrong_phase"
    CARD_NOT_IN_HAND = "card_not_in_hand"
    MUST_FOLLOW_SUIT_OR_TRUMP = "must_follow_suit_or_trump"
    MUST_PLAY_TRUMP = "must_play_trump"
    UNDERTRUMP = "undertrump"
    MUST_PLAY_CALLED_CARD = "must_play_called_card"
    GAME_OVER = "game_over"
    BAD_ACTION = "bad_action"


class RuleError(ValueError):
    """An action the rules do not allow in this state. The state is unchanged.

    ``reason`` is the :class:`Reason` code; the message names the action and the state in card
    notation (e.g. ``"seat 2 cannot play 8C: KS was led and seat 2 holds 8S 3S ..."``).
    """

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.message}"


#: The most characters of an untrusted value (a bot's card text, a file's field) an error message quotes.
QUOTE_LIMIT = 24


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``value`` quoted for a one-line error message: its ``ascii()`` form (printable ASCII only:
    newlines, control and non-ASCII characters escaped), cut to ``limit`` characters with the
    original length, e.g. ``'1H1H1H1H1H1H1H1H1H1H'... (2000 chars)``.

    For text that comes from a bot or a file: a 60 KB "card" is not echoed whole to every seat, the
    record and the logs.
    """
    text = ascii(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} chars)" if isinstance(value, str | bytes) else ""
    return f"{text[:limit]}...{size}"
