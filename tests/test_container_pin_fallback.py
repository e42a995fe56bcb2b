"""A per-game container bot started by its tag (docker did not answer the tag's look-up) is pinned to the image
that container ran (a real dockerd).

:meth:`arena.play.game.GrpcGameRunner._pinned_image` falls back to the tag when docker's look-up of it fails (a
busy daemon past its timeout) and pins nothing: the check's container then ran what the tag named at that moment,
and the first later look-up that answered pinned what the tag named then: a tag moved between the two had every
later game play an image no check passed on."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.docker_helpers import SeatStarter, base_image, docker_client, open_sandbox, remove_images, tag_variant

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def test_a_seat_started_by_the_tag_pins_the_image_it_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first look-up of the tag fails (docker busy), so the first container starts by the tag (image A); the
    tag moves to B; the next seat starts A, the image the first one ran, not B."""
    import docker.errors

    client = docker_client()
    tag = f"allfours-test-pinfb-{uuid.uuid4().hex[:8]}:1"
    ids = [tag_variant(client, base_image("python"), tag, "a")]
    sandbox = open_sandbox(client, tmp_path / "out", f"pinfb-{tmp_path.name[-8:]}")
    real = sandbox.client.api.inspect_image
    failures = [docker.errors.APIError("docker busy: read timed out")]

    def busy_once(image: str) -> Any:  # the first look-up times out, as a busy daemon's does
        if failures:
            raise failures.pop()
        return real(image)

    monkeypatch.setattr(sandbox.client.api, "inspect_image", busy_once)
    seats = SeatStarter(sandbox, tmp_path / "out", tag)  # no referee: the containers are stopped at once
    started: list[str] = []
    try:
        for seat in (0, 1):
            if seat == 1:
                ids.append(tag_variant(client, base_image("python"), tag, "b"))  # the tag moves to B
            launched = seats.launch(seat)
            assert launched is not None, seats.notes
            started.append(launched.container.attrs["Image"])
            launched.stop(exit_wait_s=0)
    finally:
        sandbox.close()
        remove_images(client, ids)
    assert started == [ids[0], ids[0]], (started, ids)
