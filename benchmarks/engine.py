"""Engine throughput: random legal play of complete games to 14 on one core.

Prints games/s and actions/s (target from issue #2: at least 50,000 actions/s), and, as a baseline
measured in the same run, the cost of the loop's non-engine work (choosing among a fixed tuple with
the same RNG), so the figures can be compared across noisy machines as a ratio.

Usage: python benchmarks/engine.py [--seconds S] [--players 2|4]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

# Run as a script, Python puts benchmarks/ first on sys.path, where benchmarks/referee.py would hide
# the referee package: the repository goes before it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from referee.dealing import deck_for
from referee.rules import Phase, RuleSet, apply, deal, legal_actions, new_game


def play_games(rules: RuleSet, seconds: float, seed: int = 1) -> tuple[int, int, float]:
    """Play random games for about ``seconds``; return (games, actions, elapsed seconds)."""
    rng = random.Random(seed)
    decks = [deck_for(bytes([k]) * 32, 1, 1) for k in range(64)]  # decks made before timing
    games = actions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = new_game(rules, dealer=games % rules.players)
        while state.phase is not Phase.OVER:
            if state.phase is Phase.DEAL:
                state = deal(state, decks[rng.randrange(64)])
            else:
                legal = legal_actions(state)
                state = apply(state, legal[rng.randrange(len(legal))])
                actions += 1
        games += 1
    return games, actions, time.perf_counter() - start


def baseline(n: int, seed: int = 1) -> float:
    """Seconds for ``n`` iterations of the driver loop's own work (RNG choice from a tuple)."""
    rng = random.Random(seed)
    legal = tuple(range(6))
    start = time.perf_counter()
    for _ in range(n):
        _ = legal[rng.randrange(len(legal))]
    return time.perf_counter() - start


def main() -> None:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--players", type=int, choices=[2, 4], default=4)
    args = ap.parse_args()
    rules = RuleSet(players=args.players)
    games, actions, elapsed = play_games(rules, args.seconds)
    base = baseline(actions)
    aps = actions / elapsed
    print(f"players={args.players} games={games} actions={actions} seconds={elapsed:.2f}")
    print(f"games/s={games / elapsed:.1f}")
    print(f"actions/s={aps:,.0f}  (target >= 50,000: {'met' if aps >= 50_000 else 'NOT met'}, x{aps / 50_000:.2f})")
    print(f"per action: engine {1e6 / aps:.2f} us vs driver-loop baseline {1e6 * base / actions:.3f} us "
          f"(ratio {elapsed / base:.0f}x)")


if __name__ == "__main__":
    main()
