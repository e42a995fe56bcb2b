"""A league's passed checks kept in its store, by fingerprint (arena/tournament/league.py, ``League._check``;
arena/play/fingerprint.py): a league opened again on the same folder does not check a bot whose fingerprint
is unchanged, checks one whose fingerprint changed or that has none (a process bot), and one left out for
breaking after its check (``League._count_breakdowns``) is checked again at the next start.

In-process League with simulated games over a real config file and a real store; the runner's fingerprints
are given by the test (the real ones, of a docker image, are tests/test_serve_check_restart.py's).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

from rich.console import Console

from arena.config import BotSpec, load_config
from arena.hosting.sandbox import Limits
from arena.play.fingerprint import PassedChecks, container_fingerprint, engine_facts
from arena.tournament.league import League
from arena.tournament.result import GameResult, Unplayed, forfeit_result
from arena.tournament.runner import SimulatedRunner, Tournament
from arena.tournament.schedule import ScheduledGame
from referee.outcome import Termination
from tests.league_helpers import serve_until_stopped


class PrintedRunner(SimulatedRunner):
    """Simulated games (x's forfeited with a crash when ``x_crashes``), a check that every bot passes
    (``checked``: each one checked, in order) and the fingerprints ``prints`` (label -> hex)."""

    def __init__(self, prints: dict[str, str], checked: list[str], x_crashes: bool = False):
        super().__init__()
        self.prints, self.checked, self.x_crashes = prints, checked, x_crashes

    def check_bots(self, names: list[str]) -> dict[str, str]:
        self.checked.extend(names)
        return {}

    def check_fingerprints(self, names: list[str]) -> dict[str, str]:
        return {n: self.prints[n] for n in names if n in self.prints}

    def play(self, game: ScheduledGame) -> GameResult:
        if self.x_crashes and "x" in game.sides:
            return forfeit_result(game, {"x": Unplayed(Termination.CRASH, "crash: process exited with status 1")})
        return super().play(game)


def opened(tmp_path: Path, runner: PrintedRunner) -> str:
    """Open a league of a, b and x (a process bot, and two with fingerprints in ``runner``) in ``tmp_path``, then
    close it; returns what it said."""
    path = tmp_path / "league.toml"
    path.write_text('[tournament]\nname = "memo"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 1\n'
                    'output = "out"\nmaster_seed = "' + "00" * 32 + '"\n'
                    + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in ("a", "b", "x")))
    said = io.StringIO()
    league = League(str(path), tmp_path / "out", Console(file=said, width=400), lambda t: None, lambda _: runner)
    league.open(load_config(str(path)))
    league.close()
    return said.getvalue()


def test_an_unchanged_fingerprint_is_not_checked_again_a_changed_one_is(tmp_path: Path) -> None:
    checked: list[str] = []
    opened(tmp_path, PrintedRunner({"b": "1" * 64, "x": "2" * 64}, checked))
    assert sorted(checked) == ["a", "b", "x"]
    checked.clear()
    said = opened(tmp_path, PrintedRunner({"b": "1" * 64, "x": "2" * 64}, checked))
    assert checked == ["a"], said  # a has no fingerprint (a process bot): checked at every start
    assert "bot 'b' passed its check before" in said and "bot 'x' passed its check before" in said, said
    checked.clear()
    opened(tmp_path, PrintedRunner({"b": "1" * 64, "x": "3" * 64}, checked))  # x's image is another now
    assert sorted(checked) == ["a", "x"]


def test_a_bot_left_out_for_breaking_after_its_check_is_checked_again_at_the_next_start(tmp_path: Path) -> None:
    checked: list[str] = []
    prints = {"b": "1" * 64, "x": "2" * 64}
    runner = PrintedRunner(prints, checked, x_crashes=True)
    path = tmp_path / "league.toml"
    opened(tmp_path, runner)  # writes the config; every bot passes, x's and b's checks are kept
    said = io.StringIO()
    league = League(str(path), tmp_path / "out", Console(file=said, width=400), lambda t: None, lambda _: runner,
                    publish_spacing=0)

    def after(result: GameResult, t: Tournament) -> None:
        if "x" in league.left_out and not [g for g in t.store.pending(t.schedule) if "x" not in g.sides]:
            league.request_stop()

    serve_until_stopped(league, path, after)
    assert "x" in league.left_out, said.getvalue()  # crashed BROKEN_IN_A_ROW games in a row
    checked.clear()
    opened(tmp_path, PrintedRunner(prints, checked))
    assert sorted(checked) == ["a", "x"]


def test_every_field_of_a_container_bots_spec_and_its_image_id_change_its_fingerprint() -> None:
    bot = BotSpec("boxed", "1", (), None, {"K": "v"}, "allfours-bots/boxed:1", Limits())
    context = {"players": 2, "time_control": {"join_ms": 20000}, "docker": "20.10"}
    first = container_fingerprint(bot, "sha256:" + "a" * 64, context)
    assert first == container_fingerprint(dataclasses.replace(bot, env={"K": "v"}), "sha256:" + "a" * 64, context)
    others = [
        container_fingerprint(bot, "sha256:" + "b" * 64, context),
        container_fingerprint(bot, "sha256:" + "a" * 64, {**context, "docker": "24.0"}),
        container_fingerprint(bot, "sha256:" + "a" * 64, {**context, "time_control": {"join_ms": 1000}}),
    ]
    changes: dict[str, Any] = {"name": "other", "version": "2", "command": ("x",), "cwd": "/tmp", "env": {"K": "w"},
               "image": "allfours-bots/boxed:2", "limits": Limits(memory_mb=512), "mode": "worker", "workers": 2,
               "sandbox": "none"}
    assert set(changes) == {f.name for f in dataclasses.fields(BotSpec)}  # a new field must be added here
    others += [container_fingerprint(dataclasses.replace(bot, **{k: v}), "sha256:" + "a" * 64, context)
               for k, v in changes.items()]
    assert len({first, *others}) == 1 + len(others)


def test_damaged_passed_checks_read_as_none_passed() -> None:
    for stored in (None, "", "not json", "[1, 2]", '"x"'):
        assert PassedChecks.parse(stored).by_label == {}
    assert PassedChecks.parse('{"a": "f00", "b": 3}').by_label == {"a": "f00"}


def test_the_hosts_docker_components_kernel_and_libraries_change_a_fingerprint() -> None:
    """A check proves the bot ran on this host's docker and this arena's libraries: an upgrade of runc or
    containerd, the kernel or the API changes the fingerprint (engine_facts), so the bot is checked again."""
    bot = BotSpec("boxed", "1", (), None, {}, "allfours-bots/boxed:1", Limits())
    version = {"Version": "26.1.5", "ApiVersion": "1.45", "KernelVersion": "6.1.0",
               "Components": [{"Name": "runc", "Version": "1.1.12"}, {"Name": "containerd", "Version": "1.6.20"}]}

    def print_of(v: dict[str, Any]) -> str:
        return container_fingerprint(bot, "sha256:" + "a" * 64, {"players": 2, "docker": engine_facts(v)})

    first = print_of(version)
    assert first == print_of(dict(version))
    changed = [{**version, "KernelVersion": "6.12.0"}, {**version, "ApiVersion": "1.47"},
               {**version, "Components": [{"Name": "runc", "Version": "1.2.0"}, version["Components"][1]]}]
    assert first not in {print_of(v) for v in changed}
    assert engine_facts(version)["libraries"]["grpcio"]  # installed here: its version is in the facts
