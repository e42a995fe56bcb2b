"""Unit tests: card notation, seats, rule options, the cut, errors, and the dealing golden vector."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from referee import dealing
from referee.rules import (
    Card,
    Phase,
    Rank,
    Reason,
    RuleError,
    RuleSet,
    Seat,
    Suit,
    apply,
    cut_for_dealer,
    deal,
    new_game,
    parse_action,
    parse_cards,
    parse_deck,
)
from referee.rules.actions import BEG, Call, Play


def test_card_notation_round_trips() -> None:
    for text in ["TH", "AS", "2C", "JD", "QS", "9H"]:
        assert str(Card.parse(text)) == text
    assert Card.parse("th") is Card.parse("TH") is Card.of(Rank.TEN, Suit.HEARTS)
    assert Card.parse("10h") == Card.parse("TH")
    assert Rank.ACE.game_points == 4 and Rank.TEN.game_points == 10 and Rank.NINE.game_points == 0


@pytest.mark.parametrize("bad", ["", "1H", "TX", "AAS", "T", None, 5])
def test_bad_card_names_the_input(bad: object) -> None:
    with pytest.raises(ValueError, match="not a card"):
        Card.parse(bad)  # type: ignore[arg-type]


def test_parse_deck_names_missing_and_repeated() -> None:
    cards = [r + s for s in "CDHS" for r in "23456789TJQKA"]
    with pytest.raises(ValueError, match="repeated: 2C; missing: AS"):
        parse_deck(["2C", *cards[1:51], "2C"])
    assert len(parse_deck(cards)) == 52


def test_seats_4_and_2_players() -> None:
    s = Seat(3, 4)
    assert s.next == Seat(0, 4) and s.partner == Seat(1, 4) and s.side == 1
    assert [x.index for x in Seat(2, 4).iter_from()] == [2, 3, 0, 1]
    assert Seat(1, 2).partner is None and Seat(1, 2).next == Seat(0, 2) and Seat(1, 2).side == 1
    with pytest.raises(ValueError):
        Seat(4, 4)
    with pytest.raises(ValueError):
        Seat(0, 3)


def test_ruleset_defaults_and_errors() -> None:
    r = RuleSet()
    assert (r.players, r.deal_in, r.target, r.hang_jack, r.undertrump_ban, r.void_may_discard) == \
        (4, "threes", 14, True, False, False)
    assert RuleSet.from_dict({"players": 2}).players == 2
    with pytest.raises(ValueError, match="unknown rule option"):
        RuleSet.from_dict({"jokers": True})
    with pytest.raises(ValueError, match="players must be 2 or 4"):
        RuleSet(players=3)
    with pytest.raises(ValueError, match="deal_in"):
        RuleSet(deal_in="fours")
    assert RuleSet.from_dict(r.to_dict()) == r


def test_actions_parse() -> None:
    assert parse_action("beg") is BEG
    assert parse_action("call 5C") == Call(Card.parse("5C"))
    assert parse_action("TH") == Play(Card.parse("TH"))
    with pytest.raises(ValueError, match="not an action"):
        parse_action("fold")


@pytest.mark.parametrize(("cards", "players", "dealer"), [
    ("AS KS QS JS", 4, 0),            # highest card deals
    ("2C 3C 9H 4D", 4, 2),
    ("AS 2C AH 3C KD QD", 4, 0),       # seats 0 and 2 tie on aces; they cut again: KD beats QD
    ("AS 2C AH 3C 4D 9D", 4, 2),
    ("7C 7D 5H 6S", 4, 1),             # seats 0 and 1 tie on sevens; they cut again: 3H beats 2H
    ("TC TD 8H 9S", 2, 1),             # 2 players tie on tens, cut again: 8H v 9S
])
def test_cut_for_first_dealer(cards: str, players: int, dealer: int) -> None:
    deck = list(parse_cards(cards)) + list(parse_cards("2H 3H 4H 5H"))
    assert cut_for_dealer(deck, players) == dealer


def test_errors_carry_reason_and_state() -> None:
    s = deal(new_game(RuleSet(), 0), dealing.deck_for(bytes(32), 1, 1))
    with pytest.raises(RuleError) as e:
        apply(s, BEG, seat=2)
    assert e.value.reason is Reason.NOT_YOUR_TURN
    assert "seat 2" in str(e.value) and "seat 1" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_new_game_over_when_scores_already_at_target() -> None:
    assert new_game(RuleSet(), 0, (14, 0)).phase is Phase.OVER


# ---------------------------------------------------------------- dealing: the documented shuffle

GOLDEN_SEED = bytes(range(32))
GOLDEN_COMMITMENT = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
GOLDEN_DECK_1_1 = ("9S 6D 5H JH 2S QD AH AD 8H 8D JD 2H 5D JS 4D 9C QH 5S JC 7H TD 4C TC 8C TS 7C "
                   "4S 9H KS KH 3C 6H 8S 3S QS KC 9D TH 3D 2C 4H 7S 6S 2D 6C AS 7D KD 5C 3H AC QC")


def independent_shuffle(seed: bytes, game: int, deal_no: int) -> list[str]:
    """The algorithm of docs/formats.md written again from the text, to check the module against."""
    key = hmac.new(seed, b"allfours/v1/deal" + game.to_bytes(4, "big") + deal_no.to_bytes(4, "big"),
                   hashlib.sha256).digest()
    stream = b"".join(hmac.new(key, n.to_bytes(8, "big"), hashlib.sha256).digest() for n in range(64))
    words = [int.from_bytes(stream[i:i + 4], "big") for i in range(0, len(stream), 4)]
    deck = [r + s for s in "CDHS" for r in "23456789TJQKA"]
    w = 0
    for i in range(51, 0, -1):
        while words[w] >= 2**32 - (2**32 % (i + 1)):
            w += 1
        j = words[w] % (i + 1)
        w += 1
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_golden_vector() -> None:
    assert dealing.commitment(GOLDEN_SEED) == GOLDEN_COMMITMENT == hashlib.sha256(GOLDEN_SEED).hexdigest()
    deck = [str(c) for c in dealing.deck_for(GOLDEN_SEED, 1, 1)]
    assert deck == GOLDEN_DECK_1_1.split() == independent_shuffle(GOLDEN_SEED, 1, 1)


@pytest.mark.parametrize(("game", "deal_no"), [(1, 2), (2, 1), (7, 13)])
def test_module_matches_independent_implementation(game: int, deal_no: int) -> None:
    seed = hashlib.sha256(b"another seed").digest()
    assert [str(c) for c in dealing.deck_for(seed, game, deal_no)] == independent_shuffle(seed, game, deal_no)


def test_commit_reveal_and_seed_errors() -> None:
    seed = dealing.fresh_seed()
    assert len(seed) == 32 and dealing.fresh_seed() != seed
    assert dealing.verify_commitment(seed, dealing.commitment(seed))
    assert not dealing.verify_commitment(seed, dealing.commitment(bytes(32)))
    assert dealing.parse_seed(seed.hex()) == seed
    with pytest.raises(ValueError, match="32 bytes"):
        dealing.check_seed(b"short")
    with pytest.raises(ValueError):
        dealing.parse_seed("zz")
    with pytest.raises(ValueError):
        dealing.deal_key(seed, 0, 1)
    assert dealing.deck_for(seed, 1, 1) != dealing.deck_for(seed, 1, 2)
    assert len(set(dealing.deck_for(seed, 3, 4))) == 52
