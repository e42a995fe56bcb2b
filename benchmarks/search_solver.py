"""The search bot's solver speed: positions solved per second, against the engine in the same run.

    python benchmarks/search_solver.py [--positions 200] [--players 2 4] [--cards 8]

For each table size it draws ``--positions`` random positions in play with at most ``--cards`` cards
left in the hands (``sample_bots.search.reference.random_play_state``) and solves each exactly, every
hand open, twice: with ``sample_bots.search.fast.solve`` (bit-mask hands, alpha-beta, transposition
table, equal cards merged) and with ``engine_minimax`` (plain minimax over ``referee.rules``' own
``legal_actions``/``apply``/count: the baseline). It checks the two values agree on every position
and prints one JSON object: per table size the positions per second of each (CPU time of this
process), the ratio fast/engine, and the fast solver's nodes per millisecond (the figure
``sample_bots.search.bot.NODES_PER_MS`` is set from), with the load average at the end. The
engine's minimax grows with the full tree, so keep ``--cards`` at 8 or below.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.rules import RuleSet  # noqa: E402
from sample_bots.search.fast import Budget, DealValue, dealt_facts, position_of_state, solve  # noqa: E402
from sample_bots.search.reference import engine_minimax, random_play_state  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its JSON; returns 0 (1 if the solvers ever disagree)."""
    p = argparse.ArgumentParser(prog="benchmarks/search_solver.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--positions", type=int, default=200)
    p.add_argument("--players", type=int, nargs="+", default=[2, 4], choices=(2, 4))
    p.add_argument("--cards", type=int, default=8, help="most cards left in the hands (default 8)")
    args = p.parse_args(argv)
    rows = []
    for players in args.players:
        rules = RuleSet(players=players, target=1000)
        states = [random_play_state(k, rules, args.cards) for k in range(args.positions)]
        cases = []
        for st in states:
            pos, dealt = position_of_state(st)
            high, low, jack_side, _ = dealt_facts(dealt, pos.trump)
            cases.append((st, pos, DealValue.build(0, (7, 9), 14, high, low, jack_side, True)))
        start = time.process_time()
        budget = Budget(10**9)
        fast = [solve(pos.copy(), value, budget) for _, pos, value in cases]
        fast_s = time.process_time() - start
        start = time.process_time()
        slow = [engine_minimax(st, value, len(st.deals)) for st, _, value in cases]
        engine_s = time.process_time() - start
        if any(abs(a - b) > 1e-12 for a, b in zip(fast, slow, strict=True)):
            print(f"the solvers disagree at {players} players", file=sys.stderr)
            return 1
        rows.append({"players": players, "positions": len(cases), "cards": args.cards,
                     "fast_per_s": round(len(cases) / fast_s, 1), "engine_per_s": round(len(cases) / engine_s, 1),
                     "ratio": round(engine_s / fast_s, 1), "fast_nodes_per_ms": round(budget.used / fast_s / 1000, 1)})
    print(json.dumps({"rows": rows, "load_avg": [round(x, 2) for x in os.getloadavg()]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
