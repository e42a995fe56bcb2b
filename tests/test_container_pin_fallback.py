"""A per-game container bot started by its tag (docker did not answer the tag's look-up) is pinned to the image
that container ran (a real dockerd).

:meth:`arena.play.game.GrpcGameRunner._pinned_image` falls back to the tag when docker's look-up of it fails (a
busy daemon past its timeout) and pins nothing: the check's container then ran what the tag named at that moment,
and the first later look-up that answered pinned what the tag named then: a tag moved between the two had every
later game play an image no check passed on."""

from __future__ import annotations

import contextlib
import io
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import add_tar_file, base_image, docker_client

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def variant(client: Any, base: str, tag: str, name: str) -> str:
    """Tag ``tag`` as an image of ``base`` plus the label ``name`` (another image ID); returns its ID."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        add_tar_file(tar, "Dockerfile", f'FROM {base}\nLABEL org.allfours.test.variant="{name}"\n'.encode())
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    return str(image.id)


def test_a_seat_started_by_the_tag_pins_the_image_it_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first look-up of the tag fails (docker busy), so the first container starts by the tag (image A); the
    tag moves to B; the next seat starts A, the image the first one ran, not B."""
    import docker.errors

    from arena.config import BotSpec
    from arena.hosting.sandbox import Sandbox
    from arena.play.game import GrpcGameRunner

    client = docker_client()
    tag = f"allfours-test-pinfb-{uuid.uuid4().hex[:8]}:1"
    ids = [variant(client, base_image("python"), tag, "a")]
    sandbox = Sandbox(client, run_key(tmp_path / "out"), f"pinfb-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    real = sandbox.client.api.inspect_image
    failures = [docker.errors.APIError("docker busy: read timed out")]

    def busy_once(image: str) -> Any:  # the first look-up times out, as a busy daemon's does
        if failures:
            raise failures.pop()
        return real(image)

    monkeypatch.setattr(sandbox.client.api, "inspect_image", busy_once)
    runner = object.__new__(GrpcGameRunner)
    runner.sandbox, runner.output, runner.pinned = sandbox, tmp_path / "out", {}
    runner.config = type("Config", (), {"bot_log_bytes": 4096})()
    bot = BotSpec("boxed", "1", (), image=tag)
    conn = type("Conn", (), {"address": "127.0.0.1:1"})()
    log_dir = tmp_path / "out" / "logs" / "g1"
    log_dir.mkdir(parents=True)
    notes: list[str] = []
    started: list[str] = []
    try:
        for seat in (0, 1):
            if seat == 1:
                ids.append(variant(client, base_image("python"), tag, "b"))  # the tag moves to B
            launched = runner._launch_container(conn, bot, seat, "ticket", log_dir, notes)
            assert launched is not None, notes
            started.append(launched.container.attrs["Image"])
            launched.stop(exit_wait_s=0)
    finally:
        sandbox.close()
        for image_id in reversed(ids):
            with contextlib.suppress(Exception):
                client.images.remove(image_id, force=True)
    assert started == [ids[0], ids[0]], (started, ids)
