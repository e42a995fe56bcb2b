"""A blind tournament's play order (arena/tournament/schedule.py, "Play order"; docs/tournament-config.md,
"Blind seats"). A round robin played its pending games in schedule order (pairing number, then pair, then
game), which is public; with the stored games' ids (which tie entrant numbers to names) anyone could tell which
pairing a running game seats, even with blind seats. A blind tournament now plays them in an order keyed by its
unrevealed master seed, the same on every run (a resumed run keeps it), the audit's invariants kept: both games
of a pair together, a pairing's pairs in their order; a tournament not blind keeps the schedule's order.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from arena.config import TournamentConfig, parse_config
from arena.tournament.runner import SimulatedRunner, Tournament, open_tournament, pending_games, run_games
from arena.tournament.schedule import ScheduledGame, blind_order, make_schedule

SEED = bytes(range(32))


def schedule(bots: int = 5, games: int = 4, seed: bytes = SEED) -> list[ScheduledGame]:
    return make_schedule("t", [f"b{k}" for k in range(bots)], games, 2, seed)


def pair_ids(games: list[ScheduledGame]) -> list[str]:
    return list(dict.fromkeys(g.pair_id for g in games))


def test_the_blind_order_is_keyed_by_the_master_seed_and_keeps_pairs_and_their_order() -> None:
    plain = schedule()
    order = blind_order(plain, SEED)
    assert sorted(g.game_id for g in order) == sorted(g.game_id for g in plain)  # every game, once
    assert pair_ids(order) != pair_ids(plain)  # not the public order
    assert blind_order(plain, SEED) == order  # reproducible
    assert pair_ids(blind_order(schedule(seed=bytes(32)), bytes(32))) != pair_ids(order)  # another seed, another
    for a, b in zip(order[::2], order[1::2], strict=True):  # the two games of a pair together, in their order
        assert (a.pair_id, a.swapped, b.swapped) == (b.pair_id, False, True)
    for pairing in {g.pairing for g in plain}:  # a pairing's pairs in their order (the audit's check)
        assert [g.pair for g in order[::2] if g.pairing == pairing] == [0, 1]


def test_the_blind_order_is_derived_again_from_the_revealed_seed() -> None:
    """What docs/tournament-config.md tells an auditor: rank each pair id by HMAC-SHA256(key, id), key =
    HMAC-SHA256(master seed, "allfours/arena/v1/blind-order"); each pairing takes its slots in pair order."""
    plain = schedule()
    key = hmac.new(SEED, b"allfours/arena/v1/blind-order", hashlib.sha256).digest()
    ranked = sorted(pair_ids(plain), key=lambda p: hmac.new(key, p.encode(), hashlib.sha256).digest())
    pairings = [p.rsplit("-d", 1)[0] for p in ranked]
    want = [f"{p}-d{pairings[:n].count(p)}" for n, p in enumerate(pairings)]
    assert pair_ids(blind_order(plain, SEED)) == want


def test_two_entrants_play_their_pairs_in_order() -> None:
    """One pairing (an sprt tournament's): nothing to hide, and the test is fed the pairs in order."""
    plain = schedule(bots=2, games=10)
    assert blind_order(plain, SEED) == plain


def config(tmp: Path, bots: int, blind: bool, concurrency: int = 1) -> TournamentConfig:
    data = {
        "tournament": {"name": "blind", "players": 2, "games_per_pairing": 4, "concurrency": concurrency,
                       "output": str(tmp / "out"), "master_seed": SEED.hex(), "blind_seats": blind},
        "bots": [{"name": f"b{k}", "command": ["true"], "cwd": str(tmp)} for k in range(bots)],
    }
    return parse_config(data, str(tmp / "t.toml"), tmp)


def played_order(t: Tournament) -> list[str]:
    return [r.game_id for r in sorted(t.store.results(), key=lambda r: r.stored_at or 0.0)]


@pytest.mark.parametrize("blind", [True, False])
def test_a_run_plays_in_the_blind_order_and_a_resumed_one_keeps_it(tmp_path: Path, blind: bool) -> None:
    t = open_tournament(config(tmp_path, 5, blind))
    want = blind_order(t.schedule, SEED) if blind else t.schedule
    assert t.play_order == want  # made once, when opened
    assert pending_games(t) == want
    run_games(pending_games(t)[:7], SimulatedRunner(), t.store)  # a run stopped after 7 games: pair 4 half played
    t.store.close()
    t = open_tournament(config(tmp_path, 5, blind))
    run_games(pending_games(t), SimulatedRunner(), t.store)
    assert played_order(t) == [g.game_id for g in want]
    t.store.close()


@pytest.mark.parametrize("blind", [True, False])
def test_the_twin_of_a_half_played_pair_is_played_first(tmp_path: Path, blind: bool) -> None:
    """After a restart (concurrency 2: games of several pairs were in flight), a blind tournament plays the
    twins of its half-played pairs before anything else: its publication holds their first games back."""
    t = open_tournament(config(tmp_path, 4, blind))
    order = pending_games(t)
    late = order[-1]  # the second game of the last pair in play order
    run_games([g for g in order if g.pair_id == late.pair_id and g.swapped], SimulatedRunner(), t.store)
    got = pending_games(t)
    twin = next(g for g in order if g.pair_id == late.pair_id and not g.swapped)
    assert (got[0] == twin) is blind  # not blind: the schedule's order, as before
    assert sorted(g.game_id for g in got) == sorted(g.game_id for g in order if g != order[-1])
    t.store.close()


def test_an_entrant_added_to_a_blind_league_plays_its_pairings_in_no_public_order(tmp_path: Path) -> None:
    t = open_tournament(config(tmp_path, 4, True))
    run_games(pending_games(t), SimulatedRunner(), t.store)
    t.store.close()
    t = open_tournament(config(tmp_path, 6, True))  # b4 and b5 join
    new = pending_games(t)
    assert {g.pairing for g in new} == {g.pairing for g in t.schedule if {"b4", "b5"} & set(g.sides)}
    assert pair_ids(new) != pair_ids(t.store.pending(t.schedule))  # not the schedule's order
    assert pair_ids(new) == pair_ids([g for g in blind_order(t.schedule, SEED) if g in new])
    t.store.close()
