"""arena/competition/games.py: a competitor's games read from the published games.jsonl."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import arena.competition.games as games
from arena.competition.games import my_games


def _publish(output: Path, count: int) -> None:
    """games.jsonl of ``count`` games, the odd ones eve@1's (side 0) against the house bot, the even ones
    between house bots, replaced whole as a publication replaces it (a new file renamed over the old)."""
    rows = [{"game_id": f"g{i}", "a": "eve@1" if i % 2 else "heuristic", "b": "random",
             "scores": [i % 14, 14], "winner": 1, "record": True} for i in range(count)]
    tmp = output / "games.jsonl.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.replace(tmp, output / "games.jsonl")


def test_the_games_file_is_parsed_once_a_publication(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ListGames, /me page and seat-log request parsed every line of games.jsonl again, in arena
    serve's process (beside the embedded referee): a competitor asking in a loop made the server parse
    the whole league's games each time. The rows are now parsed once per version of the file (a
    publication replaces it) and the answers stay those of the file as it is now."""
    parsed: list[str] = []
    loads = json.loads

    def counting(s: str) -> object:
        parsed.append(s)
        return loads(s)

    monkeypatch.setattr(games.json, "loads", counting)
    _publish(tmp_path, 40)
    for _ in range(5):
        mine = my_games(tmp_path, {"eve@1"}, 2)
        assert [g.game_id for g in mine] == [f"g{i}" for i in range(1, 40, 2)]
        assert [g.seats for g in mine[:2]] == [(0,), (0,)]
    assert len(parsed) == 40
    _publish(tmp_path, 42)  # the next publication: one more game of eve's
    assert [g.game_id for g in my_games(tmp_path, {"eve@1"}, 4)][-1] == "g41"
    assert my_games(tmp_path, {"eve@1"}, 4)[-1].seats == (0, 2)  # a table of four: the side's two seats
    assert len(parsed) == 82
    assert my_games(tmp_path, {"mallory@1"}, 2) == []
    (tmp_path / "games.jsonl").unlink()
    assert my_games(tmp_path, {"eve@1"}, 2) == []  # no games published (yet, or any more)
