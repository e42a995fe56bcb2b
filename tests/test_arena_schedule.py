"""The round-robin schedule (arena/tournament/schedule.py): pairings, duplicate pairs, dealer rotation, seeds."""

from __future__ import annotations

import hashlib
import hmac
import itertools

import pytest

from arena.tournament.schedule import commitment, make_schedule, pair_seed
from referee.dealing import verify_commitment

MASTER = bytes(range(32))
BOTS = ["alpha", "beta", "gamma", "delta"]


def test_every_pairing_plays_games_per_pairing_games() -> None:
    games = make_schedule("t", BOTS, 6, 4, MASTER)
    assert len(games) == 6 * 6  # C(4, 2) pairings x 6
    per_pairing: dict[frozenset[str], int] = {}
    for g in games:
        per_pairing[frozenset(g.sides)] = per_pairing.get(frozenset(g.sides), 0) + 1
    assert per_pairing == {frozenset(p): 6 for p in itertools.combinations(BOTS, 2)}
    # each bot holds side 0 and side 1 equally often within every pairing
    for pairing in {g.pairing for g in games}:
        firsts = [g.sides[0] for g in games if g.pairing == pairing]
        assert len(set(firsts)) == 2 and firsts.count(firsts[0]) == 3


def test_duplicate_pairs_share_seed_and_dealer_with_sides_swapped() -> None:
    games = make_schedule("t", BOTS, 4, 4, MASTER)
    for first, second in zip(games[::2], games[1::2], strict=True):
        assert first.pair_id == second.pair_id
        assert first.seed == second.seed and first.first_dealer == second.first_dealer
        assert second.sides == (first.sides[1], first.sides[0])
        assert (first.swapped, second.swapped) == (False, True)
    assert len({g.seed for g in games}) == len(games) // 2  # every pair has its own deal


@pytest.mark.parametrize("players", [2, 4])
def test_first_dealer_rotates_across_pairs(players: int) -> None:
    games = make_schedule("t", ["a", "b"], 16, players, MASTER)
    assert [g.first_dealer for g in games[::2]] == [k % players for k in range(8)]
    assert [g.pair for g in games[::2]] == list(range(8))


def test_seats() -> None:
    four = make_schedule("t", ["a", "b"], 2, 4, MASTER)
    assert [g.seats for g in four] == [("a", "b", "a", "b"), ("b", "a", "b", "a")]
    two = make_schedule("t", ["a", "b"], 2, 2, MASTER)
    assert [g.seats for g in two] == [("a", "b"), ("b", "a")]


def test_seed_derivation_known_answer() -> None:
    label = b"allfours/arena/v1/pair" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big")
    assert pair_seed(MASTER, 2, 1) == hmac.new(MASTER, label, hashlib.sha256).digest()
    games = make_schedule("t", BOTS, 4, 4, MASTER)
    # pairing 2 is (beta, gamma) = entrants (1, 2): 2 * 1 / 2 + 1; its pair 1 is games 2 and 3 of that pairing
    g = next(x for x in games if x.game_id == "t-p1-2-g2")
    assert g.pairing == 2 and g.pair == 1 and g.seed == pair_seed(MASTER, 2, 1)
    assert next(x for x in games if x.game_id == "t-p0-3-g0").pairing == 3  # (alpha, delta): 3 * 2 / 2 + 0


def test_a_remote_entrants_pairs_are_two_games_dealt_on_their_own() -> None:
    """A remote entrant's workers run on its author's machine and may remember every card of a game; in
    the twin (same deal, sides swapped) they would hold the other side's cards and know its hands. So
    in its pairings a pair's second game has a seed of its own (known answer below); every other
    pairing is dealt as before, twins alike."""
    plain = make_schedule("t", BOTS, 4, 4, MASTER)
    games = make_schedule("t", BOTS, 4, 4, MASTER, independent={"gamma"})
    assert [g.game_id for g in games] == [g.game_id for g in plain]
    for first, second in zip(games[::2], games[1::2], strict=True):
        assert first.pair_id == second.pair_id and second.sides == first.sides[::-1]
        assert first.first_dealer == second.first_dealer
        if "gamma" in first.sides:
            label = b"allfours/arena/v1/pair-second" + first.pairing.to_bytes(4, "big") + first.pair.to_bytes(4, "big")
            assert second.seed == hmac.new(MASTER, label, hashlib.sha256).digest() != first.seed
            assert second.seed == pair_seed(MASTER, first.pairing, first.pair, second=True)
        else:
            assert second.seed == first.seed
    assert [g.seed for g in games[::2]] == [g.seed for g in plain[::2]]  # first games: dealt as ever
    changed = [g.game_id for g, p in zip(games, plain, strict=True) if g.seed != p.seed]
    assert len(changed) == 3 * 2 and all("2" in g.split("-p")[1].split("-g")[0] for g in changed)


def test_a_new_entrant_adds_pairings_and_changes_no_existing_game() -> None:
    """Growing the league: the old games (ids, seeds, sides, dealers) are all still there, unchanged; the new
    entrant's pairings come after them; raising games_per_pairing only appends pairs."""
    old = make_schedule("t", BOTS[:3], 4, 4, MASTER)
    grown = make_schedule("t", BOTS, 4, 4, MASTER)
    assert grown[: len(old)] == old
    assert all("delta" in g.sides for g in grown[len(old) :]) and len(grown) - len(old) == 3 * 4
    more = make_schedule("t", BOTS, 8, 4, MASTER)
    assert set(grown) <= set(more) and len(more) == 2 * len(grown)
    # an entrant that left (numbers need not be contiguous): the others keep their games
    without_beta = make_schedule("t", ["alpha", "gamma", "delta"], 4, 4, MASTER, numbers=[0, 2, 3])
    assert set(without_beta) == {g for g in grown if "beta" not in g.sides}


def test_determinism_from_the_master_seed() -> None:
    assert make_schedule("t", BOTS, 4, 4, MASTER) == make_schedule("t", BOTS, 4, 4, MASTER)
    other = make_schedule("t", BOTS, 4, 4, bytes(32))
    assert {g.seed for g in other}.isdisjoint({g.seed for g in make_schedule("t", BOTS, 4, 4, MASTER)})


def test_ids_are_stable_and_unique() -> None:
    games = make_schedule("cup", BOTS, 4, 2, MASTER)
    assert len({g.game_id for g in games}) == len(games)
    assert [g.game_id for g in games[:4]] == ["cup-p0-1-g0", "cup-p0-1-g1", "cup-p0-1-g2", "cup-p0-1-g3"]
    assert games[2].pair_id == "cup-p0-1-d1"
    assert games[-1].game_id == "cup-p2-3-g3"


def test_commitment_before_and_reveal_after() -> None:
    c = commitment(MASTER)
    assert c == hashlib.sha256(MASTER).hexdigest()
    assert verify_commitment(MASTER, c) and verify_commitment(MASTER, c.upper())
    assert not verify_commitment(bytes(32), c)


@pytest.mark.parametrize(
    ("bots", "gpp", "players", "seed"),
    [
        (["a"], 2, 4, MASTER),
        (["a", "a"], 2, 4, MASTER),
        (["a", "b"], 3, 4, MASTER),
        (["a", "b"], 0, 4, MASTER),
        (["a", "b"], 2, 3, MASTER),
        (["a", "b"], 2, 4, b"short"),
    ],
)
def test_bad_inputs(bots: list[str], gpp: int, players: int, seed: bytes) -> None:
    with pytest.raises(ValueError):
        make_schedule("t", bots, gpp, players, seed)
