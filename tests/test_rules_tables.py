"""Rule tables: explicit deck orders + actions -> expected points, legal sets and errors.

Every case is written from docs/rules.md (the section is named in ``why``), in the replay format of
tests/scenarios, and checked through ``referee.replay.replay`` — the same path outside tests use.
Hands are named per seat and stacked into a deck by ``tests/deckbuild.stack`` (dealing from the
dealer's right, in threes unless said); expected values were worked out by hand, never copied from
what the code prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deckbuild import plays, stack
from scenario_check import mismatches

from referee.replay import replay

# The hands of shared scenario 31: seat 1 KS 7S 7C AD 2H 3H; seat 2 8S 3S 8C 3C 9D QC;
# seat 3 6S 2S 5C 9C 2D KH; seat 0 QS 4S TC 5D 5H 6H; kick 4D (trumps D), dealer 0.
H31 = {1: "KS 7S 7C AD 2H 3H", 2: "8S 3S 8C 3C 9D QC", 3: "6S 2S 5C 9C 2D KH", 0: "QS 4S TC 5D 5H 6H"}
D31 = stack(H31, "4D")
# Scenario 47's hands: seat 1 7C KS 7S AD 2H 3H; seat 2 8C 3C 8S 3S 9D QC; seat 3 5C 9C 6S 2S 2D KH;
# seat 0 TC QS 4S 5D 5H 6H; kick 4D.
H47 = {1: "7C KS 7S AD 2H 3H", 2: "8C 3C 8S 3S 9D QC", 3: "5C 9C 6S 2S 2D KH", 0: "TC QS 4S 5D 5H 6H"}
D47 = stack(H47, "4D")
CALL_SETUP = [{"seat": 1, "do": "stand"}, {"seat": 3, "do": "play", "card": "5C"},
              {"seat": 1, "do": "play", "card": "7C"}, {"seat": 2, "do": "play", "card": "8C"}]
ANY = stack({}, "9C")  # a filler deck for the next deal: kick 9C scores nothing

# Trick-winner deck, trumps H (kick 9H), dealer 0:
# seat 1 AS 2C 3C 4C 5C 6C; seat 2 2H 3S 7D 8D 9D TD; seat 3 KS 2D 3D 4D 5D 6D; seat 0 QS 7C 8C 9C TC JC.
DW = stack({1: "AS 2C 3C 4C 5C 6C", 2: "2H 3S 7D 8D 9D TD", 3: "KS 2D 3D 4D 5D 6D", 0: "QS 7C 8C 9C TC JC"}, "9H")
# Undertrump deck, trumps H: seat 2 is void in spades with 8H; seat 3 void in spades with 5H (under
# 8H) and QH (over); seat 0 holds only trumps.
DU = stack({1: "AS 2C 3C 4C 5C 6C", 2: "8H 7D 8D 9D TD JD", 3: "5H QH 2D 3D 4D 5D", 0: "3H 4H 6H 7H 2H TH"}, "9H")
# As DU but seat 3 holds only trumps lower than 8H besides non-trumps.
DU2 = stack({1: "AS 2C 3C 4C 5C 6C", 2: "8H 7D 8D 9D TD JD", 3: "5H 4H 2D 3D 4D 5D", 0: "3H 6H 7H 2H TH KH"}, "9H")
# As DU but seat 3 can follow spades.
DU3 = stack({1: "AS 2C 3C 4C 5C 6C", 2: "8H 7D 8D 9D TD JD", 3: "2S 5H 2D 3D 4D 5D", 0: "3H 4H 6H 7H 2H TH"}, "9H")

# Two-player full deals (dealer 0; seat 1 leads), trumps H from kick 4H.
# F2: a Game tie. Seat 1 JH TC 2C 3S 4S 5S; seat 0 9H TD JD 6S 7S 8S.
D_F2 = stack({1: "JH TC 2C 3S 4S 5S", 0: "9H TD JD 6S 7S 8S"}, "4H", players=2)
F2_PLAY = plays("1:TC 9H", "0:TD JH", "1:3S 6S", "0:JD 2C", "0:7S 4S", "0:8S 5S", first=1, players=2)
# F6: hang jack. Seat 1 JH TC 2C 3S 4S 5S; seat 0 QH TD JD 6S 7S 8S.
D_F6 = stack({1: "JH TC 2C 3S 4S 5S", 0: "QH TD JD 6S 7S 8S"}, "4H", players=2)
F6_PLAY = plays("1:3S 6S", "0:QH JH", "0:TD TC", "0:JD 2C", "0:7S 4S", "0:8S 5S", first=1, players=2)
# F1: seat 1 AH 2H 3C 4C 5C 6D; seat 0 KH 3H 7C 8C 9C 7D; kick 9H.
D_F1 = stack({1: "AH 2H 3C 4C 5C 6D", 0: "KH 3H 7C 8C 9C 7D"}, "9H", players=2)
F1_PLAY = plays("1:AH KH", "1:2H 3H", "0:7C 3C", "0:8C 4C", "0:9C 5C", "0:7D 6D", first=1, players=2)
# One trump in play: seat 1 2H 3C 4C 5C 6C 7C; seat 0 8D 9D TD JD QD KD; kick 9H.
D_ONE = stack({1: "2H 3C 4C 5C 6C 7C", 0: "8D 9D TD JD QD KD"}, "9H", players=2)
ONE_PLAY = plays("1:3C 8D", "1:4C 9D", "1:5C TD", "1:6C JD", "1:7C QD", "1:2H KD", first=1, players=2)
# Four-player full deals, trumps S from kick 9S, dealer 0.
# F7: the jack holder's partner wins the jack. Seat 1 JS AC KC QC 2C 3C; seat 2 3S AD KD QD 2D 3D;
# seat 3 QS AH KH QH 2H 3H; seat 0 4S 4C 4D 4H 5C 5D.
D_F7 = stack({1: "JS AC KC QC 2C 3C", 2: "3S AD KD QD 2D 3D", 3: "QS AH KH QH 2H 3H", 0: "4S 4C 4D 4H 5C 5D"}, "9S")
F7_PLAY = plays("1:JS 3S QS 4S", "3:AH 4H 2C 2D", "3:KH 5C 3C 3D", "3:QH 5D QC QD", "3:2H 4C KC KD",
                "3:3H 4D AC AD", first=1)
# F8: the opponents hang the jack. Seats 2 and 3 swap their trumps: seat 2 QS AD KD QD 2D 3D;
# seat 3 3S AH KH QH 2H 3H.
D_F8 = stack({1: "JS AC KC QC 2C 3C", 2: "QS AD KD QD 2D 3D", 3: "3S AH KH QH 2H 3H", 0: "4S 4C 4D 4H 5C 5D"}, "9S")
F8_PLAY = plays("1:JS QS 3S 4S", "2:AD 2H 4D 2C", "2:KD 3H 5D 3C", "2:QD QH 4C QC", "2:2D KH 4H KC",
                "2:3D AH 5C AC", first=1)
# F9: a full 2-player deal after running the pack (9 tricks). Dealer 0; kick 4D, seat 1 begs, the dealer
# runs: seat 1 gets JH 8C 9C, seat 0 AH TC KC, kick 9H: trumps H. The low 2H was dealt before the run,
# the high AH and the jack JH in it.
D_F9 = stack({1: "2H 3C 4C 5C 6C 7C", 0: "2S 3S 4S 5S 6S 7S"}, "4D", players=2,
             runs=[({1: "JH 8C 9C", 0: "AH TC KC"}, "9H")])
F9_PLAY = plays("1:3C KC", "0:2S 2H", "1:JH AH", "0:TC 4C", "0:3S 5C", "0:4S 6C", "0:5S 7C", "0:6S 8C",
                "0:7S 9C", first=1, players=2)
# F10: the jack stays with its holder's side, Game goes to the other side. Seat 1 TC 2H 3S 4S 5S 6D;
# seat 0 AH JH 2C 7S 8S 9S; kick 4H. Tricks: TC 2C (1: 10 points), 2H AH (0: 4), JH 6D (0: 1), then
# seat 0's spades. High AH (side 0), Low 2H (side 1), Jack (side 0), Game 10 v 5 (side 1).
D_F10 = stack({1: "TC 2H 3S 4S 5S 6D", 0: "AH JH 2C 7S 8S 9S"}, "4H", players=2)
F10_PLAY = plays("1:TC 2C", "1:2H AH", "0:JH 6D", "0:7S 3S", "0:8S 4S", "0:9S 5S", first=1, players=2)
# No trump in play: seat 1 2C 3C 4C 5C 6C 7C; seat 0 8D 9D TD JD QD KD; kick 9H (no heart is dealt).
D_NONE = stack({1: "2C 3C 4C 5C 6C 7C", 0: "8D 9D TD JD QD KD"}, "9H", players=2)
NONE_PLAY = plays("1:2C 8D", "1:3C 9D", "1:4C TD", "1:5C JD", "1:6C QD", "1:7C KD", first=1, players=2)
# Undertrump ban with two trumps in the trick, trumps H (kick 9H): seat 2 trumps 8H, seat 3 overtrumps
# QH; seat 0 (void in spades, TH under QH, KH over it, and non-trumps) must beat QH, the highest.
DU4 = stack({1: "AS 2C 4C 5C 6C 7C", 2: "8H 2D 3D 4D 5D 6D", 3: "QH 7D 8D 9D TD JD", 0: "TH KH QD KD AD 3C"},
            "9H")
# A trump lead under the undertrump ban, trumps H: seat 1 leads 5H; seat 2 holds 3H (under) and KH.
DT = stack({1: "5H 2C 3C 4C 6C 7C", 2: "3H KH 2D 3D 4D 5D"}, "9H")


def pts(*items: tuple[int, str, int], deal: int = 1) -> list[dict[str, Any]]:
    """Expected point events: (side, kind, value) in the order scored."""
    return [{"deal": deal, "side": s, "kind": k, "value": v} for s, k, v in items]


def A(seat: int, do: str, card: str | None = None) -> dict[str, Any]:
    """One replay action."""
    return {"seat": seat, "do": do, **({"card": card} if card else {})}


STAND1 = A(1, "stand")

CASES: list[dict[str, Any]] = [
    # ---------------------------------------------------------------- The deal 2: the kick
    dict(id="kick-six-scores-two-for-dealer-side", why="The deal 2", dealer=1,
         decks=[stack({}, "6H", dealer=1)], actions=[],
         expect={"scores": [0, 2], "points": pts((1, "kick", 2)), "next": {"seat": 2, "phase": "beg"}}),
    # kicked_six_points = 1 (RuleSet option; docs/rules.md, The deal 2): a kicked Six scores 1, the others as ever.
    dict(id="kick-six-scores-one-with-option", why="The deal 2 (kicked_six_points 1)", dealer=1,
         rules={"kicked_six_points": 1}, decks=[stack({}, "6H", dealer=1)], actions=[],
         expect={"scores": [0, 1], "points": pts((1, "kick", 1)), "next": {"seat": 2, "phase": "beg"}}),
    dict(id="kick-six-at-13-ends-game-with-option", why="The deal 2, 5 (kicked_six_points 1)", dealer=0,
         rules={"kicked_six_points": 1}, scores=[13, 12], decks=[stack({}, "6C")], actions=[],
         expect={"scores": [14, 12], "winner": 0, "next": None, "points": pts((0, "kick", 1))}),
    dict(id="kick-ace-and-jack-unchanged-by-six-option", why="The deal 2 (kicked_six_points 1)",
         rules={"kicked_six_points": 1}, decks=[stack({}, "JC")], actions=[],
         expect={"scores": [3, 0], "points": pts((0, "kick", 3))}),
    dict(id="run-pack-kicks-six-scores-one-with-option", why="The deal 4 (kicked_six_points 1)",
         rules={"kicked_six_points": 1}, decks=[stack({}, "4D", runs=[({}, "6C")])],
         actions=[A(1, "beg"), A(0, "run")],
         expect={"scores": [1, 0], "points": pts((0, "kick", 1)), "deals": [{"kicks": ["4D", "6C"], "trump": "C"}]}),
    dict(id="kick-jack-scores-three", why="The deal 2", decks=[stack({}, "JC")], actions=[],
         expect={"scores": [3, 0], "points": pts((0, "kick", 3)), "deals": [{"kicks": ["JC"], "trump": "C"}]}),
    dict(id="kick-nine-scores-nothing", why="The deal 2", decks=[stack({}, "9S")], actions=[],
         expect={"scores": [0, 0], "points": [], "next": {"seat": 1, "phase": "beg", "legal": ["beg", "stand"]}}),
    dict(id="kick-ace-reaches-14-ends-game-before-beg", why="The deal 5", dealer=2, scores=[13, 0],
         decks=[stack({}, "AS", dealer=2)], actions=[],
         expect={"scores": [14, 0], "winner": 0, "next": None, "points": pts((0, "kick", 1))}),
    dict(id="two-player-kick-jack-for-dealer", why="The deal 2; Table (2 players)",
         rules={"players": 2}, dealer=1, decks=[stack({}, "JD", players=2, dealer=1)], actions=[],
         expect={"scores": [0, 3], "next": {"seat": 0, "phase": "beg"}}),
    dict(id="action-after-game-over-is-rejected", why="The deal 5", dealer=2, scores=[13, 0],
         decks=[stack({}, "AS", dealer=2)], actions=[A(3, "stand")],
         expect={"error": {"index": 0, "reason": "game_over"}}),
    # ---------------------------------------------------------------- The deal 1: dealing
    dict(id="deal-in-threes-from-dealers-right", why="The deal 1",
         decks=[[r + s for s in "CDHS" for r in "23456789TJQKA"]], actions=[],
         expect={"deals": [{"hands": {"1": ["2C", "3C", "4C", "AC", "2D", "3D"],
                                      "2": ["5C", "6C", "7C", "4D", "5D", "6D"],
                                      "3": ["8C", "9C", "TC", "7D", "8D", "9D"],
                                      "0": ["JC", "QC", "KC", "TD", "JD", "QD"]}, "kicks": ["KD"]}]}),
    dict(id="deal-in-ones-from-dealers-right", why="The deal 1 (deal_in ones)", rules={"deal_in": "ones"},
         decks=[[r + s for s in "CDHS" for r in "23456789TJQKA"]], actions=[],
         expect={"deals": [{"hands": {"1": ["2C", "6C", "TC", "AC", "5D", "9D"],
                                      "2": ["3C", "7C", "JC", "2D", "6D", "TD"],
                                      "3": ["4C", "8C", "QC", "3D", "7D", "JD"],
                                      "0": ["5C", "9C", "KC", "4D", "8D", "QD"]}, "kicks": ["KD"]}]}),
    # Canonical deck, 2 players, dealer 1, one at a time: seat 0 (the dealer's right) gets the 1st, 3rd ...
    # card; the kick AC is an Ace for the dealer's side (seat 1 -> side 1); seat 0 begs or stands.
    dict(id="deal-in-ones-2p-dealer-1-from-the-non-dealer", why="The deal 1-3 (deal_in ones, 2 players)",
         rules={"players": 2, "deal_in": "ones"}, dealer=1,
         decks=[[r + s for s in "CDHS" for r in "23456789TJQKA"]], actions=[],
         expect={"deals": [{"dealer": 1, "hands": {"0": ["2C", "4C", "6C", "8C", "TC", "QC"],
                                                   "1": ["3C", "5C", "7C", "9C", "JC", "KC"]},
                            "kicks": ["AC"]}],
                 "scores": [0, 1], "points": pts((1, "kick", 1)),
                 "next": {"seat": 0, "phase": "beg", "legal": ["beg", "stand"]}}),
    # ---------------------------------------------------------------- The deal 3-4: stand, beg
    dict(id="stand-then-dealers-right-leads-any-card", why="The deal 3; Play", decks=[D31], actions=[STAND1],
         expect={"next": {"seat": 1, "phase": "play", "legal": H31[1].split()}, "deals": [{"trump": "D"}]}),
    dict(id="beg-asks-the-dealer", why="The deal 3-4", decks=[D31], actions=[A(1, "beg")],
         expect={"next": {"seat": 0, "phase": "dealer", "legal": ["give", "run"]}, "points": []}),
    dict(id="beg-by-wrong-seat-not-your-turn", why="The deal 3", decks=[D31], actions=[A(2, "beg")],
         expect={"error": {"index": 0, "reason": "not_your_turn"}, "next": {"seat": 1, "phase": "beg"}}),
    dict(id="dealer-cannot-run-before-a-beg", why="The deal 3-4", decks=[D31], actions=[A(0, "run")],
         expect={"error": {"index": 0, "reason": "not_your_turn"}}),
    dict(id="give-in-beg-phase-is-wrong-phase", why="The deal 3", decks=[D31], actions=[A(1, "give")],
         expect={"error": {"index": 0, "reason": "wrong_phase"}}),
    dict(id="card-in-beg-phase-by-seat-to-act-is-wrong-phase", why="The deal 3", decks=[D31],
         actions=[A(1, "play", "KS")], expect={"error": {"index": 0, "reason": "wrong_phase"}}),
    dict(id="one-given-by-dealer-1-goes-to-side-0", why="The deal 4", dealer=1,
         decks=[stack({}, "9C", dealer=1)], actions=[A(2, "beg"), A(1, "give")],
         expect={"scores": [1, 0], "points": pts((0, "one", 1)), "next": {"seat": 2, "phase": "play"}}),
    dict(id="one-given-reaches-14-ends-game", why="The deal 4-5", scores=[0, 13], decks=[D31],
         actions=[A(1, "beg"), A(0, "give")],
         expect={"scores": [0, 14], "winner": 1, "next": None, "points": pts((1, "one", 1))}),
    dict(id="run-pack-new-suit-is-trumps-hands-of-nine", why="The deal 4",
         decks=[stack({1: H31[1]}, "4D", runs=[({1: "5S 6S 8H"}, "KC")])],
         actions=[A(1, "beg"), A(0, "run")],
         expect={"points": [], "deals": [{"trump": "C", "kicks": ["4D", "KC"]}],
                 "next": {"seat": 1, "phase": "play",
                          "legal": ["KS", "7S", "7C", "AD", "2H", "3H", "5S", "6S", "8H"]}}),
    dict(id="run-pack-same-suit-repeats-until-new-suit", why="The deal 4",
         decks=[stack({1: H31[1]}, "4D", runs=[({1: "5S 6S 8H"}, "7D"), ({1: "9H TH JH"}, "AH")])],
         actions=[A(1, "beg"), A(0, "run")],
         expect={"points": pts((0, "kick", 1)), "scores": [1, 0],
                 "deals": [{"trump": "H", "kicks": ["4D", "7D", "AH"]}],
                 "next": {"seat": 1, "phase": "play",
                          "legal": ["KS", "7S", "7C", "AD", "2H", "3H", "5S", "6S", "8H", "9H", "TH", "JH"]}}),
    dict(id="run-pack-same-suit-kicks-each-score", why="The deal 4",
         decks=[stack({}, "4D", runs=[({}, "JD"), ({}, "6S")])], actions=[A(1, "beg"), A(0, "run")],
         expect={"points": pts((0, "kick", 3), (0, "kick", 2)), "scores": [5, 0],
                 "deals": [{"trump": "S", "kicks": ["4D", "JD", "6S"]}]}),
    dict(id="run-pack-kick-reaches-14-ends-game", why="The deal 4-5", scores=[12, 3],
         decks=[stack({}, "4D", runs=[({}, "6C")])], actions=[A(1, "beg"), A(0, "run")],
         expect={"scores": [14, 3], "winner": 0, "next": None}),
    dict(id="pack-runs-dry-4p-same-dealer-redeals-points-kept", why="The deal 4 (run dry)",
         decks=[stack({}, "6D", runs=[({}, "AD"), ({}, "JD")]), ANY], actions=[A(1, "beg"), A(0, "run")],
         expect={"scores": [6, 0], "points": pts((0, "kick", 2), (0, "kick", 1), (0, "kick", 3)),
                 "deals": [{"dealer": 0, "trump": None, "kicks": ["6D", "AD", "JD"]},
                           {"dealer": 0, "kicks": ["9C"], "tricks": []}],
                 "next": {"seat": 1, "phase": "beg", "legal": ["beg", "stand"]}}),
    dict(id="after-a-redeal-the-next-deal-may-beg-again", why="The deal 3-4 (one beg per deal)",
         decks=[stack({}, "4D", runs=[({}, "7D"), ({}, "8D")]), ANY],
         actions=[A(1, "beg"), A(0, "run"), A(1, "beg"), A(0, "give")],
         expect={"scores": [0, 1], "points": pts((1, "one", 1), deal=2),
                 "deals": [{"trump": None, "kicks": ["4D", "7D", "8D"]}, {"dealer": 0, "trump": "C"}]}),
    dict(id="pack-runs-dry-2p-after-five-runs", why="The deal 4 (run dry), 2 players", rules={"players": 2},
         decks=[stack({}, "2H", players=2, runs=[({}, "3H"), ({}, "4H"), ({}, "5H"), ({}, "7H"), ({}, "8H")]),
                stack({}, "9C", players=2)],
         actions=[A(1, "beg"), A(0, "run")],
         expect={"scores": [0, 0], "deals": [{"dealer": 0, "trump": None,
                                               "kicks": ["2H", "3H", "4H", "5H", "7H", "8H"]},
                                              {"dealer": 0, "kicks": ["9C"]}],
                 "next": {"seat": 1, "phase": "beg"}}),
    # Canonical deck, dealt one at a time: 6 each (as deal-in-ones-from-dealers-right, kick KD); the run
    # gives AD 2H ... QH one at a time from seat 1, then the kick KH: a new suit, trumps H.
    dict(id="run-pack-deals-one-at-a-time-with-deal-in-ones", why="The deal 1, 4 (deal_in ones: same method)",
         rules={"deal_in": "ones"}, decks=[[r + s for s in "CDHS" for r in "23456789TJQKA"]],
         actions=[A(1, "beg"), A(0, "run")],
         expect={"deals": [{"trump": "H", "kicks": ["KD", "KH"],
                            "hands": {"1": ["2C", "6C", "TC", "AC", "5D", "9D", "AD", "5H", "9H"],
                                      "2": ["3C", "7C", "JC", "2D", "6D", "TD", "2H", "6H", "TH"],
                                      "3": ["4C", "8C", "QC", "3D", "7D", "JD", "3H", "7H", "JH"],
                                      "0": ["5C", "9C", "KC", "4D", "8D", "QD", "4H", "8H", "QH"]}}],
                 "points": [], "next": {"seat": 1, "phase": "play"}}),
    # The redeal after the pack ran dry is a deal like any: its kick (AC) scores for the same dealer's side.
    dict(id="redeal-after-dry-pack-kick-scores-for-same-dealer", why="The deal 4 (run dry), 2",
         decks=[stack({}, "6D", runs=[({}, "AD"), ({}, "JD")]), stack({}, "AC")], actions=[A(1, "beg"), A(0, "run")],
         expect={"scores": [7, 0],
                 "points": [*pts((0, "kick", 2), (0, "kick", 1), (0, "kick", 3)), *pts((0, "kick", 1), deal=2)],
                 "deals": [{"dealer": 0, "trump": None}, {"dealer": 0, "kicks": ["AC"], "trump": "C"}],
                 "next": {"seat": 1, "phase": "beg"}}),
    # ---------------------------------------------------------------- Play: legality
    dict(id="must-play-trump-when-trump-led", why="Play (trump led)", decks=[D31],
         actions=[STAND1, A(1, "play", "AD"), A(2, "play", "8S")],
         expect={"error": {"index": 2, "reason": "must_play_trump"}, "next": {"seat": 2, "legal": ["9D"]}}),
    dict(id="trump-led-void-of-trumps-plays-any", why="Play (trump led)", decks=[DU],
         actions=[STAND1, *plays("1:AS 8H QH 2H", first=1), A(3, "play", "5H"), A(0, "play", "3H")],
         expect={"next": {"seat": 1, "phase": "play", "legal": ["2C", "3C", "4C", "5C", "6C"]}}),
    dict(id="void-in-led-plain-suit-holding-trump-must-trump", why="Play (another suit led)", decks=[DW],
         actions=[STAND1, *plays("1:AS 3S KS QS", first=1), A(1, "play", "2C")],
         expect={"deals": [{"tricks": [{"leader": 1, "cards": ["AS", "3S", "KS", "QS"], "winner": 1}]}],
                 "next": {"seat": 2, "phase": "play", "legal": ["2H"]}}),
    dict(id="may-trump-even-when-able-to-follow", why="Play (another suit led)", decks=[DW],
         actions=[STAND1, A(1, "play", "AS")],
         expect={"next": {"seat": 2, "phase": "play", "legal": ["3S", "2H"]}}),
    dict(id="trump-beats-led-ace-winner-leads", why="Play (trick winner)", decks=[DW],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "2H"), A(3, "play", "KS"), A(0, "play", "QS")],
         expect={"deals": [{"tricks": [{"leader": 1, "cards": ["AS", "2H", "KS", "QS"], "winner": 2}]}],
                 "next": {"seat": 2, "phase": "play", "legal": ["3S", "7D", "8D", "9D", "TD"]}}),
    dict(id="neither-suit-nor-trump-plays-any-off-suit-never-wins", why="Play", decks=[DW],
         actions=[STAND1, *plays("1:AS 2H KS QS", "2:7D 2D JC 2C", first=1)],
         expect={"deals": [{"tricks": [{"leader": 1, "cards": ["AS", "2H", "KS", "QS"], "winner": 2},
                                       {"leader": 2, "cards": ["7D", "2D", "JC", "2C"], "winner": 2}]}]}),
    dict(id="card-not-in-hand", why="Play", decks=[D31], actions=[STAND1, A(1, "play", "AS")],
         expect={"error": {"index": 1, "reason": "card_not_in_hand"}}),
    dict(id="void-in-led-suit-must-trump-default", why="Play (seed rule)", decks=[DU],
         actions=[STAND1, A(1, "play", "AS")], expect={"next": {"seat": 2, "legal": ["8H"]}}),
    dict(id="undertrump-allowed-by-default", why="Play (undertrump_ban off)", decks=[DU],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H")],
         expect={"next": {"seat": 3, "legal": ["5H", "QH"]}}),
    dict(id="undertrump-ban-must-overtrump", why="Play (undertrump_ban)", rules={"undertrump_ban": True},
         decks=[DU], actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H"), A(3, "play", "5H")],
         expect={"error": {"index": 3, "reason": "undertrump"}, "next": {"seat": 3, "legal": ["QH"]}}),
    dict(id="undertrump-ban-discard-refused-when-able-to-overtrump", why="Play (undertrump_ban)",
         rules={"undertrump_ban": True}, decks=[DU],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H"), A(3, "play", "2D")],
         expect={"error": {"index": 3, "reason": "must_follow_suit_or_trump"}}),
    dict(id="undertrump-ban-cannot-overtrump-plays-non-trump", why="Play (undertrump_ban)",
         rules={"undertrump_ban": True}, decks=[DU2],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H"), A(3, "play", "5H")],
         expect={"error": {"index": 3, "reason": "undertrump"},
                 "next": {"seat": 3, "legal": ["2D", "3D", "4D", "5D"]}}),
    dict(id="undertrump-ban-only-trumps-may-undertrump", why="Play (undertrump_ban)",
         rules={"undertrump_ban": True}, decks=[DU],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H"), A(3, "play", "QH")],
         expect={"next": {"seat": 0, "legal": ["3H", "4H", "6H", "7H", "2H", "TH"]}}),
    dict(id="undertrump-ban-follower-may-undertrump", why="Play (undertrump_ban: only who cannot follow)",
         rules={"undertrump_ban": True}, decks=[DU3],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H")],
         expect={"next": {"seat": 3, "legal": ["2S", "5H"]}}),
    dict(id="undertrump-ban-no-trump-in-trick-yet", why="Play (undertrump_ban)",
         rules={"undertrump_ban": True}, decks=[DU], actions=[STAND1, A(1, "play", "AS")],
         expect={"next": {"seat": 2, "legal": ["8H"]}}),
    dict(id="void-may-discard", why="Play (void_may_discard)", rules={"void_may_discard": True},
         decks=[DU], actions=[STAND1, A(1, "play", "AS")],
         expect={"next": {"seat": 2, "legal": ["8H", "7D", "8D", "9D", "TD", "JD"]}}),
    dict(id="void-may-discard-with-undertrump-ban", why="Play (both options)",
         rules={"void_may_discard": True, "undertrump_ban": True}, decks=[DU],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H")],
         expect={"next": {"seat": 3, "legal": ["QH", "2D", "3D", "4D", "5D"]}}),
    dict(id="undertrump-ban-must-beat-the-highest-trump-not-the-first", why="Play (undertrump_ban)",
         rules={"undertrump_ban": True}, decks=[DU4],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "8H"), A(3, "play", "QH"), A(0, "play", "TH")],
         expect={"error": {"index": 4, "reason": "undertrump"}, "next": {"seat": 0, "legal": ["KH"]}}),
    dict(id="undertrump-ban-does-not-apply-to-a-trump-lead", why="Play (undertrump_ban: a non-trump suit led)",
         rules={"undertrump_ban": True}, decks=[DT], actions=[STAND1, A(1, "play", "5H")],
         expect={"next": {"seat": 2, "phase": "play", "legal": ["3H", "KH"]}}),
    dict(id="void-may-discard-still-must-follow-when-able", why="Play (void_may_discard: only a void player)",
         rules={"void_may_discard": True}, decks=[DU3],
         actions=[STAND1, A(1, "play", "AS"), A(2, "play", "7D"), A(3, "play", "2D")],
         expect={"error": {"index": 3, "reason": "must_follow_suit_or_trump"},
                 "next": {"seat": 3, "legal": ["2S", "5H"]}}),
    # ---------------------------------------------------------------- Penalty: the call
    dict(id="call-then-called-card-must-be-played", why="Penalty: the call", decks=[D47],
         actions=[*CALL_SETUP, A(0, "call", "5C")], expect={"next": {"seat": 3, "phase": "play", "legal": ["5C"]}}),
    dict(id="called-card-refused-otherwise", why="Penalty: the call", decks=[D47],
         actions=[*CALL_SETUP, A(0, "call", "5C"), A(3, "play", "9C")],
         expect={"error": {"index": 5, "reason": "must_play_called_card"}}),
    dict(id="first-opponent-passes-second-asked", why="Penalty: the call", decks=[D47],
         actions=[*CALL_SETUP, A(0, "pass")],
         expect={"next": {"seat": 2, "phase": "call", "legal": ["call 5C", "pass"]}}),
    dict(id="pass-by-seat-not-asked", why="Penalty: the call", decks=[D47], actions=[*CALL_SETUP, A(2, "pass")],
         expect={"error": {"index": 4, "reason": "not_your_turn"}}),
    dict(id="all-pass-plays-freely", why="Penalty: the call", decks=[D47],
         actions=[*CALL_SETUP, A(0, "pass"), A(2, "pass")],
         expect={"next": {"seat": 3, "phase": "play", "legal": ["5C", "9C", "2D"]},
                 "deals": [{"exposed": [{"seat": 3, "card": "5C"}]}]}),
    dict(id="played-exposed-card-no-longer-exposed", why="Penalty: the call", decks=[D47],
         actions=[*CALL_SETUP, A(0, "call", "5C"), A(3, "play", "5C")],
         expect={"deals": [{"exposed": []}], "next": {"seat": 0, "phase": "play", "legal": ["TC", "5D"]}}),
    dict(id="call-of-card-not-exposed-is-bad-action", why="Penalty: the call", decks=[D47],
         actions=[*CALL_SETUP, A(0, "call", "9C")], expect={"error": {"index": 4, "reason": "bad_action"}}),
    dict(id="exposed-card-not-legal-no-call", why="Penalty: the call", decks=[D47],
         actions=[STAND1, A(3, "play", "6S"), A(1, "play", "7C"), A(2, "play", "8C")],
         expect={"next": {"seat": 3, "phase": "play", "legal": ["5C", "9C", "2D"]},
                 "deals": [{"exposed": [{"seat": 3, "card": "6S"}]}]}),
    dict(id="exposure-during-beg-phase-counts", why="Penalty: the call (any point of the deal)", decks=[D47],
         actions=[A(3, "play", "5C"), STAND1, A(1, "play", "7C"), A(2, "play", "8C")],
         expect={"next": {"seat": 0, "phase": "call", "legal": ["call 5C", "pass"]}}),
    dict(id="exposing-a-card-not-held-is-rejected", why="Penalty: the call", decks=[D47],
         actions=[STAND1, A(3, "play", "AS")],
         expect={"error": {"index": 1, "reason": "card_not_in_hand"}, "deals": [{"exposed": []}]}),
    dict(id="exposing-twice-is-harmless", why="Penalty: the call", decks=[D47],
         actions=[STAND1, A(3, "play", "5C"), A(3, "play", "5C")],
         expect={"error": None, "deals": [{"exposed": [{"seat": 3, "card": "5C"}]}]}),
    dict(id="two-player-call-asks-the-one-opponent", why="Penalty: the call, 2 players", rules={"players": 2},
         decks=[stack({1: "2C 3S 4S 5S 6S 7S", 0: "KC 8D 9D TD JD QD"}, "9H", players=2)],
         actions=[STAND1, A(0, "play", "KC"), A(1, "play", "2C")],
         expect={"next": {"seat": 1, "phase": "call", "legal": ["call KC", "pass"]}}),
    dict(id="exposed-card-not-legal-then-called-on-lead", why="Penalty: the call (every card legal on lead)",
         decks=[D47], actions=[A(2, "play", "8S"), STAND1, *plays("1:7C QC 9C TC", first=1)],
         expect={"deals": [{"tricks": [{"leader": 1, "cards": ["7C", "QC", "9C", "TC"], "winner": 2}]}],
                 "next": {"seat": 3, "phase": "call", "legal": ["call 8S", "pass"]}}),
    dict(id="two-exposed-cards-both-callable", why="Penalty: the call", decks=[D47],
         actions=[STAND1, A(3, "play", "5C"), A(3, "play", "9C"), A(1, "play", "7C"), A(2, "play", "8C")],
         expect={"next": {"seat": 0, "phase": "call", "legal": ["call 5C", "call 9C", "pass"]}}),
    # Everyone passed on trick 1 (seat 3 played 9C freely); seat 3 trumps trick 2 and must lead: the
    # still-exposed 5C is legal again, so the opponents are asked again, seat 0 first.
    dict(id="passed-exposed-card-is-offered-again-next-turn", why="Penalty: the call (whenever next to play)",
         decks=[D47], actions=[*CALL_SETUP, A(0, "pass"), A(2, "pass"), A(3, "play", "9C"), A(0, "play", "TC"),
                               *plays("0:QS KS 3S 2D", first=0)],
         expect={"error": None,
                 "deals": [{"tricks": [{"leader": 1, "cards": ["7C", "8C", "9C", "TC"], "winner": 0},
                                       {"leader": 0, "cards": ["QS", "KS", "3S", "2D"], "winner": 3}],
                            "exposed": [{"seat": 3, "card": "5C"}]}],
                 "next": {"seat": 0, "phase": "call", "legal": ["call 5C", "pass"]}}),
    # An exposed card goes back into the pack when it runs dry: the redeal starts with nothing exposed.
    dict(id="exposed-card-gone-after-a-redeal", why="Penalty: the call; The deal 4 (run dry)",
         decks=[stack({3: "2S 3S 4S 5S 7S 8S"}, "6D", runs=[({}, "AD"), ({}, "JD")]), ANY],
         actions=[A(3, "play", "2S"), A(1, "beg"), A(0, "run")],
         expect={"error": None, "deals": [{"trump": None}, {"dealer": 0, "exposed": []}],
                 "next": {"seat": 1, "phase": "beg"}}),
    # ---------------------------------------------------------------- Scoring each deal
    dict(id="full-deal-2p-high-low-game", why="Scoring 1,2,4 (no jack dealt)", rules={"players": 2},
         decks=[D_F1, stack({}, "9C", players=2, dealer=1)], actions=[STAND1, *F1_PLAY],
         expect={"scores": [0, 3], "points": pts((1, "high", 1), (1, "low", 1), (1, "game", 1)),
                 "deals": [{"tricks": [{"leader": 1, "cards": ["AH", "KH"], "winner": 1},
                                       {"leader": 1, "cards": ["2H", "3H"], "winner": 0},
                                       {"leader": 0, "cards": ["7C", "3C"], "winner": 0},
                                       {"leader": 0, "cards": ["8C", "4C"], "winner": 0},
                                       {"leader": 0, "cards": ["9C", "5C"], "winner": 0},
                                       {"leader": 0, "cards": ["7D", "6D"], "winner": 0}]},
                           {"dealer": 1}],
                 "next": {"seat": 0, "phase": "beg"}}),
    dict(id="game-tie-scores-nothing-jack-to-holder", why="Scoring 3-4", rules={"players": 2},
         decks=[D_F2], actions=[STAND1, *F2_PLAY],
         expect={"scores": [1, 2], "points": pts((1, "high", 1), (0, "low", 1), (1, "jack", 1))}),
    dict(id="hang-jack-two-players", why="Scoring 3 (hang_jack)", rules={"players": 2}, decks=[D_F6],
         actions=[STAND1, *F6_PLAY],
         expect={"scores": [5, 1],
                 "points": pts((0, "high", 1), (1, "low", 1), (0, "hang_jack", 3), (0, "game", 1))}),
    dict(id="hang-jack-off-scores-one", why="Scoring 3 (hang_jack off)", rules={"players": 2, "hang_jack": False},
         decks=[D_F6], actions=[STAND1, *F6_PLAY],
         expect={"scores": [3, 1], "points": pts((0, "high", 1), (1, "low", 1), (0, "jack", 1), (0, "game", 1))}),
    # hang_jack_points (RuleSet option; docs/rules.md, Scoring 3): the same deal, a hanged Jack worth 2.
    dict(id="hang-jack-scores-two-with-option", why="Scoring 3 (hang_jack_points 2)",
         rules={"players": 2, "hang_jack_points": 2}, decks=[D_F6], actions=[STAND1, *F6_PLAY],
         expect={"scores": [4, 1],
                 "points": pts((0, "high", 1), (1, "low", 1), (0, "hang_jack", 2), (0, "game", 1))}),
    dict(id="hang-jack-points-unused-when-hang-jack-off", why="Scoring 3 (hang_jack off, hang_jack_points 5)",
         rules={"players": 2, "hang_jack": False, "hang_jack_points": 5}, decks=[D_F6], actions=[STAND1, *F6_PLAY],
         expect={"scores": [3, 1], "points": pts((0, "high", 1), (1, "low", 1), (0, "jack", 1), (0, "game", 1))}),
    dict(id="one-trump-in-play-takes-high-and-low", why="Scoring 2", rules={"players": 2}, decks=[D_ONE],
         actions=[STAND1, *ONE_PLAY],
         expect={"scores": [0, 3], "points": pts((1, "high", 1), (1, "low", 1), (1, "game", 1))}),
    dict(id="partner-takes-jack-not-hanged", why="Scoring 3", decks=[D_F7], actions=[STAND1, *F7_PLAY],
         expect={"scores": [1, 3],
                 "points": pts((1, "high", 1), (0, "low", 1), (1, "jack", 1), (1, "game", 1)),
                 "next": {"seat": 1, "phase": "deal"}}),
    dict(id="opponents-hang-the-jack-4p", why="Scoring 3", decks=[D_F8], actions=[STAND1, *F8_PLAY],
         expect={"scores": [5, 1],
                 "points": pts((0, "high", 1), (1, "low", 1), (0, "hang_jack", 3), (0, "game", 1))}),
    dict(id="kicked-jack-is-never-in-play", why="Scoring: a kicked card is never in play", rules={"players": 2},
         decks=[stack({1: "2H 3C 4C 5C 6C 7C", 0: "8D 9D TD QH QD KD"}, "JH", players=2)],
         actions=[STAND1, *plays("1:2H QH", "0:8D 3C", "0:9D 4C", "0:TD 5C", "0:QD 6C", "0:KD 7C",
                                 first=1, players=2)],
         expect={"scores": [5, 1],
                 "points": pts((0, "kick", 3), (0, "high", 1), (1, "low", 1), (0, "game", 1))}),
    dict(id="full-deal-after-running-the-pack-2p", why="Play (more tricks after a run); Scoring 1-4",
         rules={"players": 2}, decks=[D_F9], actions=[A(1, "beg"), A(0, "run"), *F9_PLAY],
         expect={"error": None, "scores": [5, 1],
                 "points": pts((0, "high", 1), (1, "low", 1), (0, "hang_jack", 3), (0, "game", 1)),
                 "deals": [{"trump": "H", "kicks": ["4D", "9H"],
                            "tricks": [{"leader": 1, "cards": ["3C", "KC"], "winner": 0},
                                       {"leader": 0, "cards": ["2S", "2H"], "winner": 1},
                                       {"leader": 1, "cards": ["JH", "AH"], "winner": 0},
                                       {"leader": 0, "cards": ["TC", "4C"], "winner": 0},
                                       {"leader": 0, "cards": ["3S", "5C"], "winner": 0},
                                       {"leader": 0, "cards": ["4S", "6C"], "winner": 0},
                                       {"leader": 0, "cards": ["5S", "7C"], "winner": 0},
                                       {"leader": 0, "cards": ["6S", "8C"], "winner": 0},
                                       {"leader": 0, "cards": ["7S", "9C"], "winner": 0}]}],
                 "next": {"seat": 1, "phase": "deal"}}),
    dict(id="jack-to-holder-game-to-other-side", why="Scoring 1-4", rules={"players": 2}, decks=[D_F10],
         actions=[STAND1, *F10_PLAY],
         expect={"scores": [2, 2], "points": pts((0, "high", 1), (1, "low", 1), (0, "jack", 1), (1, "game", 1))}),
    dict(id="no-trump-in-play-only-game-scores", why="Scoring 1-3 (no trump dealt: no High, Low or Jack)",
         rules={"players": 2}, decks=[D_NONE], actions=[STAND1, *NONE_PLAY],
         expect={"scores": [0, 1], "points": pts((1, "game", 1))}),
    # ---------------------------------------------------------------- reaching the target in the count
    dict(id="count-stops-at-high", why="Scoring: stop at the target", rules={"players": 2}, scores=[0, 13],
         decks=[D_F1], actions=[STAND1, *F1_PLAY],
         expect={"scores": [0, 14], "winner": 1, "next": None, "points": pts((1, "high", 1))}),
    dict(id="count-stops-at-low", why="Scoring: stop at the target", rules={"players": 2}, scores=[13, 0],
         decks=[D_F2], actions=[STAND1, *F2_PLAY],
         expect={"scores": [14, 1], "winner": 0, "points": pts((1, "high", 1), (0, "low", 1))}),
    dict(id="count-stops-at-hang-jack", why="Scoring: stop at the target", scores=[11, 0], decks=[D_F8],
         actions=[STAND1, *F8_PLAY],
         expect={"scores": [15, 1], "winner": 0,
                 "points": pts((0, "high", 1), (1, "low", 1), (0, "hang_jack", 3))}),
    dict(id="count-reaches-14-on-game", why="Scoring: stop at the target", scores=[0, 11], decks=[D_F7],
         actions=[STAND1, *F7_PLAY],
         expect={"scores": [1, 14], "winner": 1, "next": None,
                 "points": pts((1, "high", 1), (0, "low", 1), (1, "jack", 1), (1, "game", 1))}),
    # Both sides near the target: the order of the count decides, not the deal's total.
    dict(id="low-counted-before-jack-decides-the-game", why="Scoring: High, Low, Jack, Game in order",
         scores=[13, 12], decks=[D_F7], actions=[STAND1, *F7_PLAY],
         expect={"scores": [14, 13], "winner": 0, "next": None, "points": pts((1, "high", 1), (0, "low", 1))}),
    dict(id="jack-counted-before-game-decides-the-game", why="Scoring: High, Low, Jack, Game in order",
         rules={"players": 2}, scores=[12, 12], decks=[D_F10], actions=[STAND1, *F10_PLAY],
         expect={"scores": [14, 13], "winner": 0, "next": None,
                 "points": pts((0, "high", 1), (1, "low", 1), (0, "jack", 1))}),
    dict(id="custom-target", why="The deal 5 (target option)", rules={"target": 3}, decks=[stack({}, "JC")],
         actions=[], expect={"scores": [3, 0], "winner": 0, "next": None}),
]


def _run(case: dict[str, Any]) -> dict[str, Any]:
    data = {"rules": case.get("rules", {}), "dealer": case.get("dealer", 0), "scores": case.get("scores", [0, 0]),
            "decks": case["decks"], "actions": case["actions"]}
    return replay(json.loads(json.dumps(data)))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_rule_table(case: dict[str, Any]) -> None:
    out = _run(case)
    problems = mismatches(case["expect"], out)
    assert not problems, f"{case['id']} (docs/rules.md {case['why']}): {problems}"


def test_table_has_at_least_thirty_edge_cases() -> None:
    assert len(CASES) >= 30
    assert len({c["id"] for c in CASES}) == len(CASES)


SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_shared_scenario(path: Path) -> None:
    data = json.loads(path.read_text())
    problems = mismatches(data["expect"], replay(data))
    assert not problems, f"{path.name}: {problems} -- {data.get('note')}"
