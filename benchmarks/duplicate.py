"""The duplicate-efficiency study: real All Fours games of the sample bots, played in-process.

    python benchmarks/duplicate.py [--pairs 2000] [--players 2 4] [--seed study]

For each table size it plays ``--pairs`` duplicate pairs of each matchup through ``sdk.local`` (the
engine and the referee's deck derivation, no network): game one with the first bot on side 0, game
two with the same match seed (same decks, same first dealer) and the sides swapped. One game per match
(to the rules' target). Matchups:

- ``heuristic`` v ``random`` (sample_bots);
- ``heuristic`` v ``half-random``: the heuristic bot playing a uniformly random legal action on half
  of its decisions (drawn from the decision's own ``ctx.rng``), a closer match.

It prints one JSON object: per table size and matchup the :class:`arena.formats.duplicate.Efficiency`
(variance per game with and without pairing, their ratio with a 95% bootstrap interval) and the games
one pairing needs for a ±20 Elo interval with and without duplicate pairs at the observed score, and
the CPU seconds it took. ``--write`` also writes it to arena/formats/duplicate_study.json, which the leaderboard
quotes (and docs/arena.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.formats.duplicate import STUDY_FILE, efficiency, games_for_half_width  # noqa: E402
from arena.ratings.fit import Game  # noqa: E402
from referee.rules import RuleSet  # noqa: E402
from sample_bots.heuristic import HeuristicBot  # noqa: E402
from sample_bots.random_bot import RandomBot  # noqa: E402
from sdk.local import play_local  # noqa: E402


class HalfRandomBot(HeuristicBot):
    """The heuristic bot, but on half its decisions (by the decision's own rng) a random legal action."""

    def act(self, ctx):  # type: ignore[no-untyped-def]
        if ctx.rng.random() < 0.5:
            return ctx.rng.choice(ctx.legal)
        return super().act(ctx)


MATCHUPS = {
    "heuristic-random": (HeuristicBot, RandomBot),
    "heuristic-half_random": (HeuristicBot, HalfRandomBot),
}


def play_pairs(first: type, second: type, players: int, pairs: int, label: str) -> list[Game]:
    """``pairs`` duplicate pairs of ``first`` against ``second`` at a ``players`` table."""
    rules = RuleSet(players=players)
    games = []
    for k in range(pairs):
        seed = hashlib.sha256(f"{label}/{players}/{k}".encode()).digest()
        for swapped in (False, True):
            sides = (second, first) if swapped else (first, second)
            result = play_local([sides[s % 2]() for s in range(players)], rules=rules, seed=seed)
            winner = result.match.games[0].winner
            first_side = 1 if swapped else 0
            score = 0.5 if winner is None else float(winner == first_side)
            games.append(Game("first", "second", score, f"d{k}"))
    return games


def main() -> int:
    """Play the study and print its JSON summary; returns 0."""
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=2000)
    p.add_argument("--players", type=int, nargs="+", default=[2, 4], choices=(2, 4))
    p.add_argument("--seed", default="study")
    p.add_argument("--write", action="store_true", help=f"also write the summary to {STUDY_FILE}")
    args = p.parse_args()
    out: dict[str, object] = {"pairs_per_matchup": args.pairs, "results": []}
    cpu = time.process_time()
    for players in args.players:
        for name, (first, second) in MATCHUPS.items():
            games = play_pairs(first, second, players, args.pairs, f"{args.seed}/{name}")
            eff = efficiency(games)
            assert eff is not None
            row = {"players": players, "matchup": name, **eff.to_dict()}
            if 0 < eff.score < 1:
                row["games_for_20_elo"] = {
                    "duplicate": round(games_for_half_width(eff.score, eff.var_paired)),
                    "independent": round(games_for_half_width(eff.score, eff.var_game)),
                }
            out["results"].append(row)  # type: ignore[attr-defined]
            print(json.dumps(row), file=sys.stderr, flush=True)
    out["cpu_s"] = round(time.process_time() - cpu, 1)
    text = json.dumps(out, indent=2)
    print(text)
    if args.write:
        STUDY_FILE.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
