"""The round-robin schedule as pure data, all of it derived from one tournament master seed.

For entrants ``b_i`` with stable numbers ``i`` (a new tournament numbers its bots in config order;
an entrant added later gets the next number, see :meth:`arena.tournament.store.Store.entrants`) the schedule
has one **pairing** per unordered pair ``(i, j)``, ``i < j``, numbered ``p = j (j - 1) / 2 + i``
(colexicographic: the pairings of a new entrant come after every earlier one, so adding a bot never
renumbers — nor re-deals — an existing pairing). Each pairing plays
``games_per_pairing`` games as **duplicate pairs** ``k = 0 .. games_per_pairing/2 - 1``:

- both games of pair ``k`` use the same match seed and the same first dealer; in game ``2k`` bot
  ``i`` holds side 0 and bot ``j`` side 1; in game ``2k + 1`` the sides are swapped, so each bot
  gets the other's cards;
- the first dealer rotates across pairs: pair ``k`` uses seat ``k % players``;
- the match seed of pair ``k`` of pairing ``p`` is
  ``HMAC-SHA256(master_seed, b"allfours/arena/v1/pair" + p.to_bytes(4, "big") + k.to_bytes(4, "big"))``
  (32 bytes), so one master seed re-derives every deal of the tournament;
- except in a pairing with a **remote** entrant (``independent``): its workers run on someone else's
  machine and may remember a game's cards, and in the twin they would then know the other side's
  hands (each bot gets the other's cards). There the pair's second game is dealt from a seed of its
  own, the same HMAC with ``b"allfours/arena/v1/pair-second"``: two independent games.

Seats: side ``s`` holds seats ``s`` and ``s + 2`` at a 4-player table (partners sit opposite; the
bot fills both, one process per seat) and seat ``s`` at a 2-player table.

The master seed is committed before play (:func:`commitment`, SHA-256 hex) and revealed after.
**Play order.** The games are played in schedule order (pairing number, then pair, then game), which is
public, but a blind tournament's (``blind_seats``) in :func:`blind_order`: a key ``HMAC-SHA256(master_seed,
b"allfours/arena/v1/blind-order")`` ranks each pair by ``HMAC-SHA256(key, pair id)``; the pairs play in the
order of their ranks, except that a pairing plays its own pairs in their order (its ``n``-th pair by rank is
its ``n``-th by number), both games of a pair next to each other (never at once: run_games). Without the
master seed the order is not foreseen; with it (revealed) anyone derives it again.

Ids are stable strings so that a rerun resumes by id: game ``"<name>-p<i>-<j>-g<k>"``, duplicate pair
``"<name>-p<i>-<j>-d<k>"`` (``i``, ``j`` the entrants' numbers). Raising ``games_per_pairing`` adds
pairs ``k`` at the end of each pairing; the games already played keep their ids and deals.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from referee.dealing import check_seed, commitment
from referee.rules.seats import side_of

__all__ = ["ScheduledGame", "blind_order", "commitment", "make_schedule", "pair_games", "pair_seed",
           "pairing_number"]

PAIR_LABEL = b"allfours/arena/v1/pair"
SECOND_LABEL = b"allfours/arena/v1/pair-second"
ORDER_LABEL = b"allfours/arena/v1/blind-order"


@dataclass(frozen=True, slots=True)
class ScheduledGame:
    """One game to play.

    ``sides`` are the bot names on side 0 and side 1; ``seats`` the bot name in each seat (length
    ``players``); ``seed`` the 32-byte match seed; ``first_dealer`` a seat index; ``pairing`` the
    pairing number, ``pair`` the duplicate pair number within it, ``swapped`` True for the second
    game of a pair.
    """

    game_id: str
    pair_id: str
    pairing: int
    pair: int
    sides: tuple[str, str]
    seats: tuple[str, ...]
    seed: bytes
    first_dealer: int
    swapped: bool


def pair_seed(master_seed: bytes, pairing: int, pair: int, second: bool = False) -> bytes:
    """The 32-byte match seed of duplicate pair ``pair`` of pairing ``pairing`` (both 0-based); with
    ``second``, the seed of the pair's second game when it is dealt on its own (module docstring).

    :raises ValueError: if ``master_seed`` is not 32 bytes or an index is negative.
    """
    if pairing < 0 or pair < 0:
        raise ValueError(f"pairing and pair numbers start at 0, got {pairing}, {pair}")
    label = (SECOND_LABEL if second else PAIR_LABEL) + pairing.to_bytes(4, "big") + pair.to_bytes(4, "big")
    return hmac.new(check_seed(master_seed), label, hashlib.sha256).digest()


def seats_for(sides: tuple[str, str], players: int) -> tuple[str, ...]:
    """Bot name per seat: side ``s`` sits at seats ``s`` (and ``s + 2`` with 4 players)."""
    return tuple(sides[side_of(seat)] for seat in range(players))


def pairing_number(i: int, j: int) -> int:
    """The number of the pairing of entrants ``i < j``: ``j (j - 1) / 2 + i`` (see the module docstring)."""
    return j * (j - 1) // 2 + i


def pair_games(
    name: str, first: tuple[int, str], second: tuple[int, str], k: int, players: int, master_seed: bytes,
    independent: bool = False,
) -> list[ScheduledGame]:
    """The two games of duplicate pair ``k`` of the pairing of entrants ``first = (i, label)`` and
    ``second = (j, label)``, ``i < j`` (their stable numbers): ids ``<name>-p<i>-<j>-g<2k>``/``g<2k+1>``,
    pair id ``<name>-p<i>-<j>-d<k>``, the seed :func:`pair_seed` of pairing ``pairing_number(i, j)``
    (the second game's own seed when ``independent``: a pairing with a remote entrant).

    :raises ValueError: if ``i >= j`` or ``k < 0``, or a seed that is not 32 bytes.
    """
    (i, bot_i), (j, bot_j) = first, second
    if not 0 <= i < j:
        raise ValueError(f"a pairing's entrant numbers must be 0 <= i < j, got {i}, {j}")
    pairing = pairing_number(i, j)
    seed = pair_seed(master_seed, pairing, k)
    games = []
    for swapped in (False, True):
        sides = (bot_j, bot_i) if swapped else (bot_i, bot_j)
        if swapped and independent:
            seed = pair_seed(master_seed, pairing, k, second=True)
        games.append(
            ScheduledGame(
                game_id=f"{name}-p{i}-{j}-g{2 * k + int(swapped)}",
                pair_id=f"{name}-p{i}-{j}-d{k}",
                pairing=pairing,
                pair=k,
                sides=sides,
                seats=seats_for(sides, players),
                seed=seed,
                first_dealer=k % players,
                swapped=swapped,
            )
        )
    return games


def make_schedule(
    name: str,
    bots: Sequence[str],
    games_per_pairing: int,
    players: int,
    master_seed: bytes,
    numbers: Sequence[int] | None = None,
    independent: Collection[str] = (),
) -> list[ScheduledGame]:
    """Every game of the round robin, in schedule order (pairing number, then pair, then the two games): the
    play order, but a blind tournament's (:func:`blind_order`).

    :param bots: entrant names (labels).
    :param numbers: each entrant's stable number (default ``0, 1, ...``): ids and seeds use these.
    :param independent: the labels of remote entrants: their pairings' pairs are two independent games
        (module docstring).
    :raises ValueError: on fewer than 2 or duplicate bots, an odd or non-positive
        ``games_per_pairing``, ``players`` not 2 or 4, or a seed that is not 32 bytes.
    """
    if len(bots) < 2 or len(set(bots)) != len(bots):
        raise ValueError(f"need at least two distinct bots, got {list(bots)}")
    nums = list(range(len(bots))) if numbers is None else list(numbers)
    if len(nums) != len(bots) or len(set(nums)) != len(nums) or min(nums) < 0:
        raise ValueError(f"need one distinct number >= 0 per bot, got {nums} for {list(bots)}")
    if games_per_pairing < 2 or games_per_pairing % 2:
        raise ValueError(f"games_per_pairing must be even and >= 2, not {games_per_pairing}")
    if players not in (2, 4):
        raise ValueError(f"players must be 2 or 4, not {players}")
    check_seed(master_seed)
    games: list[ScheduledGame] = []
    entrants = sorted(zip(nums, bots, strict=True))
    pairs = sorted(
        (pairing_number(i, j), i, a, j, b) for x, (i, a) in enumerate(entrants) for (j, b) in entrants[x + 1 :]
    )
    for _, i, bot_i, j, bot_j in pairs:
        for k in range(games_per_pairing // 2):
            games += pair_games(name, (i, bot_i), (j, bot_j), k, players, master_seed,
                                independent=bot_i in independent or bot_j in independent)
    return games



def blind_order(games: Sequence[ScheduledGame], master_seed: bytes) -> list[ScheduledGame]:
    """``games`` (a schedule) in a blind tournament's play order (module docstring, Play order): the pairs in
    the order of their keyed ranks, each pairing's pairs in their order, the games of a pair together in
    their order in ``games``. A schedule's pending games are its blind order's not stored, so a resumed run
    keeps the order.

    :raises ValueError: if ``master_seed`` is not 32 bytes.
    """
    key = hmac.new(check_seed(master_seed), ORDER_LABEL, hashlib.sha256).digest()
    pairs: dict[str, list[ScheduledGame]] = {}
    for g in games:
        pairs.setdefault(g.pair_id, []).append(g)
    numbered: dict[int, list[str]] = {}  # pairing -> its pair ids by pair number
    for pid in sorted(pairs, key=lambda p: pairs[p][0].pair):
        numbered.setdefault(pairs[pid][0].pairing, []).append(pid)
    turns = {pairing: iter(pids) for pairing, pids in numbered.items()}
    ranked = sorted(pairs, key=lambda p: hmac.new(key, p.encode(), hashlib.sha256).digest())
    return [g for pid in ranked for g in pairs[next(turns[pairs[pid][0].pairing])]]
