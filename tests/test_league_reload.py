"""A reload of `arena serve`'s config never leaves a duplicate pair half played (arena/tournament/league.py).

A reload (SIGHUP; a competition's every accepted submission) lets the games in flight finish, then takes
the new config. When that config drops an entrant (a competitor's version retired by a newer one, a bot the
host removed), a pair of its whose first game was stored and second not yet started stayed half played for
ever: one game of a duplicate pair counted, its deal luck not cancelled by the twin. The league now plays
the second game of every begun pair before it takes the new config.

In-process League with simulated games, one at a time, over a real config file.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from arena.config import load_config
from arena.tournament.league import League
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner, Tournament


def config_text(bots: list[str]) -> str:
    head = ('[tournament]\nname = "rl"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 1\n'
            'output = "out"\nmaster_seed = "' + "00" * 32 + '"\n')
    return head + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in bots)


def test_a_reload_that_drops_an_entrant_finishes_its_begun_pair_first(tmp_path: Path) -> None:
    path = tmp_path / "league.toml"
    path.write_text(config_text(["a", "b", "c"]))
    stored: list[GameResult] = []

    def after(result: GameResult, t: Tournament) -> None:
        stored.append(result)
        if len(stored) == 1:  # the first game of a's first pair is stored: a is dropped
            path.write_text(config_text(["b", "c"]))
            league.request_reload()
        elif len(t.entrants) == 2 and not t.store.pending(t.schedule):
            league.request_stop()

    league = League(str(path), tmp_path / "out", Console(file=io.StringIO()), lambda t: None,
                    lambda _: SimulatedRunner(), publish_spacing=0)
    league.after_game.append(after)
    league.open(load_config(str(path)))
    try:
        league.serve()
    finally:
        league.close()
    first = stored[0]
    assert "a" in first.sides
    twins = [r for r in stored if r.pair_id == first.pair_id]
    assert len(twins) == 2 and twins[1].sides == twins[0].sides[::-1], [(r.game_id, r.sides) for r in stored]
    # nothing else of a was played after the reload; b and c played their whole pairing
    assert [r for r in stored[2:] if "a" in r.sides] == []
    assert sum(1 for r in stored if set(r.sides) == {"b", "c"}) == 4
