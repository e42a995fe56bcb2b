"""Local mode: play bots against each other in-process through the engine, no referee, no network.

For fast iteration while writing a bot. The decks come from the match seed exactly as the referee
derives them (``referee.dealing``: ``deck_for(seed, game, deal)``; the first dealer of the match by
``first_dealer_by_cut(seed, players)``), so a local match with a seed deals the same cards as a
refereed one with that seed, and bots get the same events. Bots see only ``observe(state, seat)``
and ``legal_actions(state)``.

Python::

    from sdk.local import play_local
    from sample_bots.heuristic import HeuristicBot
    from sample_bots.random_bot import RandomBot
    result = play_local([HeuristicBot(), RandomBot(), HeuristicBot(), RandomBot()], seed="1", games=10)
    print(result.match.wins)

Command line (one ``module:Class`` per seat, repeated round the table if fewer are given)::

    python -m sdk.local sample_bots.heuristic:HeuristicBot sample_bots.random_bot:RandomBot \\
        --players 4 --games 10 --seed 1

With ``--duplicate`` and two bots it spars instead (``sdk.spar``): ``--games`` games in duplicate
pairs, and the first bot's Elo difference with its 95% interval and decision times per phase.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from sdk import spar
from sdk.bot import IllegalChoice, load_bot
from sdk.local_table import LOCAL_TIME_MS, BotFailed, LocalResult, play_local, rules_option, seed_bytes

__all__ = ["LOCAL_TIME_MS", "BotFailed", "LocalResult", "main", "play_local", "result_to_dict", "seed_bytes"]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``python -m sdk.local`` command: play a local match and print the result.

    :returns: the process exit status: 0; 1 when a bot fails (raises, exits or makes an illegal
        choice: one line naming the seat, the bot and the decision); 2 on a usage error; 130 on Ctrl-C.
    """
    p = argparse.ArgumentParser(prog="python -m sdk.local", description=__doc__.split("\n\n")[0])
    p.add_argument("bots", nargs="+", metavar="module:Class",
                   help="one bot per seat in seat order; fewer are repeated round the table")
    p.add_argument("--players", type=int, choices=(2, 4), default=None,
                   help="players at the table (default: the --rules' players, else 4)")
    p.add_argument("--games", type=int, default=1, help="games in the match (default 1)")
    p.add_argument("--seed", default=None, help="match seed: 64 hex digits, or any text (hashed)")
    p.add_argument("--rules", default=None, help='rule options as JSON, e.g. \'{"target": 7}\'')
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--duplicate", action="store_true",
                   help="spar: two bots, --games games in duplicate pairs (same decks, sides swapped); "
                        "prints the Elo difference of the first with its 95%% interval (sdk.spar)")
    args = p.parse_args(argv)
    if args.duplicate:
        if len(args.bots) != 2:
            p.error(f"--duplicate spars two bots (MYBOT OTHERBOT), not {len(args.bots)}")
        if args.games < 2 or args.games % 2:
            p.error(f"--duplicate plays games in pairs: --games must be an even number of at least 2, "
                    f"not {args.games}")
        return spar.run(p, args.bots[0], args.bots[1], args.players, args.games // 2, args.seed or "spar",
                        args.rules, args.json)
    if args.games < 1:
        p.error(f"--games must be at least 1, not {args.games}")
    try:
        rules = rules_option(args.rules, args.players)
        if len(args.bots) > rules.players:
            p.error(f"{len(args.bots)} bots named for {rules.players} seats")
        bots = [load_bot(args.bots[s % len(args.bots)]) for s in range(rules.players)]
    except ValueError as e:
        p.error(str(e))
    try:
        result = play_local(bots, rules=rules, seed=args.seed, games=args.games)
    except (BotFailed, IllegalChoice) as e:
        return spar.fail(p, e)
    except KeyboardInterrupt:
        return spar.interrupted(p)
    return spar.emit(json.dumps(result_to_dict(result), indent=2) if args.json else result.summary())


def result_to_dict(result: LocalResult) -> dict[str, object]:
    """A JSON-ready mapping of a :class:`LocalResult`."""
    m = result.match
    return {
        "seed": result.seed,
        "rules": result.rules.to_dict(),
        "bots": list(result.bots),
        "games": [{"game": g.game, "scores": list(g.scores), "winner": g.winner, "forfeited": g.forfeited}
                  for g in m.games],
        "wins": list(m.wins),
        "winner": m.winner,
        "decisions": result.decisions,
    }


if __name__ == "__main__":
    sys.exit(main())
