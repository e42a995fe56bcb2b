"""The image a container bot's check passed on is the image its games play (a real dockerd, a real `arena serve`).

`arena serve` fingerprints a container bot by docker's image ID, but the check and every game started the
container by its tag: a tag moved to another image after the check (``arena bots build`` again, ``docker tag``)
had every later game run an image nobody checked. The runner now resolves the tag once (its fingerprint, or the
check) and starts the check's and every game's containers by that ID; a moved tag takes effect only through a
reload (SIGHUP) or a restart, which fingerprints and checks it again.

What is observed is the games' outcomes, never their timing: image B, which the tag is moved to, prints a marker
and exits at once (a crash, were it started). A pinned image docker no longer has (a competition's replaced
submission is removed) forfeits its seat with one line, not a crash of the arena.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import (
    ROOT,
    SeatStarter,
    base_image,
    build_bot,
    docker_client,
    image_from_dockerfile,
    leftovers,
    open_sandbox,
    remove_images,
    tag_variant,
)
from tests.league_helpers import Served, container_league

pytestmark = [pytest.mark.slow, pytest.mark.docker]

MARKER = "MOVED-TAG-IMAGE-RAN"

#: The line `arena serve` prints once its bots are checked (League.open).
OPENED = re.compile(r"pinned: 2 bots, \d+ games scheduled, (\d+) to play")
#: What `arena serve` says when the bot's games crash in a row (image B playing: the old code's failure).
BROKE = re.compile(r"bot 'boxed' left out after")
#: What `arena serve` says when the reload's check of image B fails (its last output: the marker).
LEFT_OUT = re.compile(rf"bot 'boxed' failed its check: .*{MARKER}")


def crasher(client: Any, base: str, tag: str) -> str:
    """Tag ``tag`` as an image of ``base`` whose entry point prints :data:`MARKER` and exits 3; returns its ID."""
    dockerfile = f'FROM {base}\nENTRYPOINT ["/bin/sh", "-c", "echo {MARKER}; exit 3"]\n'
    return str(image_from_dockerfile(client, tag, dockerfile).id)


def stored(out: Path) -> list[dict[str, Any]]:
    """The games stored so far (games.jsonl, written after each stored game; caught mid-write: none)."""
    try:
        return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    except (OSError, json.JSONDecodeError):
        return []


def test_a_tag_moved_after_the_check_plays_only_after_a_reload_checks_it(tmp_path: Path) -> None:
    """The check passes on image A under tag T; T is moved to image B (which would crash every game); the
    games stored after the move are all normal (A plays: B's marker appears in no game); after a reload
    (SIGHUP) the new image is checked, fails with its marker, and the bot is left out. On the old code every
    game started after the move ran B and crashed."""
    client = docker_client()
    folder = tmp_path / "bot"
    folder.mkdir()
    shutil.copyfile(ROOT / "sample_bots" / "random_bot.py", folder / "random_bot.py")
    built = build_bot(folder, "pinnedbot", "1", base_image("python"), entry="random_bot:RandomBot")
    tag = f"allfours-test-pinned-{uuid.uuid4().hex[:8]}:1"
    client.images.get(built).tag(tag)
    cfg = container_league(tmp_path / "league.toml", "pinned", 400, "5d" * 32, tag)
    out, moved = tmp_path / "out", ""
    served = Served(cfg)
    try:
        assert int(served.wait_until(lambda: served.said(OPENED), "league opened")[1]) > 0
        moved = crasher(client, built, tag)  # T now names B
        before = len(stored(out))
        served.wait_until(lambda: len(stored(out)) >= before + 12 or served.said(BROKE), "12 more games stored")
        after_move = stored(out)[before:]
        served.proc.send_signal(signal.SIGHUP)
        served.wait_until(lambda: served.said(LEFT_OUT), "the reload's check of the moved tag failing")
        said = served.stop()
    finally:
        served.kill()
        for image in (moved, built):  # B first (A's child); force: every tag of each, T's too
            if image:
                client.images.remove(image, force=True)
    abnormal = [g for g in after_move if g["terminations"] != ["normal", "normal"]]
    assert abnormal == [], abnormal[:2]
    played = [p for p in (out / "logs").rglob("*.log") if "check" not in p.relative_to(out / "logs").parts]
    assert [p for p in played if MARKER in p.read_text(errors="replace")] == []
    assert said.count(MARKER) >= 1, said[-3000:]
    assert leftovers(client, run_key(out)) == []


def test_a_checked_image_removed_under_its_tag_forfeits_its_seat_in_one_line(tmp_path: Path) -> None:
    """A game's container starts by the image its tag named first: once the tag is moved to another image and
    the first one removed (``arena bots build`` of the same tag removes the image it replaced; a competition,
    a replaced submission's), the seat does not start the moved tag's image but says, in one line, that the
    checked image is gone. On the old code the seat started the moved tag's image."""
    client = docker_client()
    tag = f"allfours-test-gone-{uuid.uuid4().hex[:8]}:1"
    ids = [tag_variant(client, base_image("python"), tag, "a")]
    sandbox = open_sandbox(client, tmp_path / "out", f"gone-{tmp_path.name[-8:]}")
    seats = SeatStarter(sandbox, tmp_path / "out", tag)  # no referee: the containers are stopped at once
    notes = seats.notes
    try:
        first = seats.launch(0)
        assert first is not None, notes
        started_from = first.container.attrs["Image"]
        first.stop(exit_wait_s=0)
        ids.append(tag_variant(client, base_image("python"), tag, "b"))  # the tag moves to B
        client.images.remove(ids[0], force=True)  # and A is removed
        second = seats.launch(1)
        if second is not None:
            moved_to = second.container.attrs["Image"]
            second.stop(exit_wait_s=0)
            pytest.fail(f"the seat started {moved_to}, not the checked {started_from}")
    finally:
        sandbox.close()
        remove_images(client, ids)
    assert started_from == ids[0]
    assert len(notes) == 1 and "\n" not in notes[0], notes
    assert notes[0] == (f"seat 1 (boxed) could not start: bot boxed: its checked image "
                        f"{ids[0].removeprefix('sha256:')[:12]} (tag {tag}) is gone from docker; a reload checks "
                        "what the tag names now"), notes
