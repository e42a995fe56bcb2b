"""A container bot's passed check kept in the store (arena/play/fingerprint.py) under a hostile or broken host:
what a review found, each test failing on the first version of the change.

1. docker gone or hung at the fingerprint: ``check_fingerprints`` raises requests' ConnectionError / ReadTimeout
   (not ``docker.errors.DockerException``), so ``League.open`` (a SIGHUP's reload: ``_reopen`` catches only
   ConfigError and StoreMismatch) raises and ``arena serve`` dies with a traceback; before check27 the same
   docker left the container bots out ("failed its check: ... could not start"), serve went on.
2. ``passed_checks`` keeps every label ever checked: an entrant dropped from the config (a competition's
   retired version) stays in the meta for ever.
3. ``arena_code_digest`` reads every ``*.py`` path under arena/, referee/, allfours/ with ``read_bytes``: a
   dangling symlink such as an editor's lock file (Emacs' ``.#league.py``) raises FileNotFoundError out of
   the check, and serve dies.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from arena.config import load_config
from arena.play.fingerprint import PASSED_CHECKS_KEY, PassedChecks
from arena.tournament.league import League
from tests.test_league_check_memo import PrintedRunner

#: It drives the docker SDK (against a socket of its own, no dockerd): in the docker half, as every such module.
pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]

CONFIG = ('[tournament]\nname = "r27"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 1\noutput = "out"\n'
          'master_seed = "' + "00" * 32 + '"\n'
          '\n[[bots]]\nname = "boxed"\nimage = "allfours-bots/boxed-r27:1"\n'
          '\n[[bots]]\nname = "local"\ncommand = ["true"]\nsandbox = "none"\n')


def dead_docker(tmp_path: Path, how: str) -> object:
    """A docker client whose daemon is gone (``refused``: no socket) or hung (``hung``: a socket that takes
    the connection and never answers), with a 1 s HTTP timeout; the hung socket is returned alongside."""
    import docker

    path = tmp_path / f"{how}.sock"
    listener = None
    if how == "hung":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.listen(16)
    return docker.DockerClient(base_url=f"unix://{path}", version="1.41", timeout=1), listener


def runner_on(tmp_path: Path, client: object, problems: dict[str, str]):  # type: ignore[no-untyped-def]
    """A real GrpcGameRunner of CONFIG whose sandbox talks to ``client``; its check (which needs a referee)
    is replaced by ``problems``: what the real check says when docker does not answer (the container bot
    could not start), so only the fingerprint's handling of docker is under test."""
    from arena.hosting.sandbox import Sandbox
    from arena.play.game import GrpcGameRunner
    from arena.play.referees import RefereeConnection, RefereePool

    class Checked(GrpcGameRunner):
        def check_bots(self, names):  # type: ignore[no-untyped-def,override]
            return {n: problems[n] for n in names if n in problems}

    (tmp_path / "league.toml").write_text(CONFIG)
    config = load_config(str(tmp_path / "league.toml"))
    pool = RefereePool([RefereeConnection("h:1", "t", None, None)])  # type: ignore[arg-type]
    return Checked(config, pool, tmp_path / "out", sandbox=Sandbox(client, "0" * 12, "r27"))


@pytest.mark.parametrize("how", ["refused", "hung"])
def test_fingerprints_with_docker_not_answering_are_none(tmp_path: Path, how: str) -> None:
    """check_fingerprints' docstring: "every bot [is left out] when docker does not answer"."""
    client, listener = dead_docker(tmp_path, how)
    try:
        assert runner_on(tmp_path, client, {}).check_fingerprints(["boxed", "local"]) == {}
    finally:
        if listener is not None:
            listener.close()


@pytest.mark.parametrize("how", ["refused", "hung"])
def test_a_league_opened_with_docker_not_answering_leaves_the_container_bot_out(tmp_path: Path, how: str) -> None:
    client, listener = dead_docker(tmp_path, how)
    try:
        runner = runner_on(tmp_path, client, {"boxed": "seat 0 (boxed) could not start: docker refused the container"})
        league = League(str(tmp_path / "league.toml"), tmp_path / "out", Console(file=io.StringIO(), width=400),
                        lambda t: None, lambda _: runner)
        try:
            league.open(load_config(str(tmp_path / "league.toml")))
            assert set(league.left_out) == {"boxed"}
        finally:
            league.close()
    finally:
        if listener is not None:
            listener.close()


def test_a_dropped_entrant_leaves_no_passed_check_behind(tmp_path: Path) -> None:
    path = tmp_path / "league.toml"
    head = ('[tournament]\nname = "memo"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 1\noutput = "out"\n'
            'master_seed = "' + "00" * 32 + '"\n')
    kept: list[dict[str, str]] = []
    for bots in (("a", "b", "x"), ("a", "b")):  # x dropped: a competitor's version retired by a newer one
        path.write_text(head + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in bots))
        league = League(str(path), tmp_path / "out", Console(file=io.StringIO(), width=400), lambda t: None,
                        lambda _: PrintedRunner({"b": "1" * 64, "x": "2" * 64}, []))
        league.open(load_config(str(path)))
        assert league.tournament is not None
        kept.append(PassedChecks.parse(league.tournament.store.get_meta(PASSED_CHECKS_KEY)).by_label)
        league.close()
    assert kept[0] == {"b": "1" * 64, "x": "2" * 64}
    assert kept[1] == {"b": "1" * 64}


def test_the_code_digest_survives_an_editors_lock_file(tmp_path: Path) -> None:
    """A copy of the arena's packages with an Emacs lock file (a dangling symlink named ``.#league.py``)."""
    for package in ("arena", "referee", "allfours"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink("someone@host.12345:1700000000", tmp_path / "arena" / "tournament" / ".#league.py")
    done = subprocess.run([sys.executable, "-c", "from arena.play.fingerprint import arena_code_digest as d; "
                           "print(d())"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.strip()) == 64
