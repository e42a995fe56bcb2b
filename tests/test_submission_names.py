"""A submission's name must be one docker can tag, or it is refused as it comes in.

The arena's name check (``[a-z0-9][a-z0-9_.-]{0,62}``) took names docker's image reference grammar refuses
(``a-``, ``a.``, ``a..b``, ``a___b``): ``arena submit tiny.tar --image --name a-`` was kept, loaded by docker, and
then ``failed`` when the arena tagged it (``invalid reference format``), as the arena's fault, not counted in
the competitor's day. A ``failed`` submission keeps its archive (``OUTPUT/submissions/ID/image.tar``, up to
``image_upload_bytes``) for ``arena competition retry``, and its loaded image stayed in docker, untagged
(up to ``image_bytes``): without end, uncounted, a stranger's to fill the host's disk with.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from arena.competition.book import CompetitionBook
from arena.competition.desk import Desk, Header, Refused
from arena.config import CompetitionSettings
from tests.docker_helpers import add_tar_file, docker_client, scratch_image

pytestmark = pytest.mark.docker

#: Names the old check took and docker cannot tag.
UNTAGGABLE = ["a-", "a.", "a_", "a..b", "a._b", "a___b", "a-.b"]


def _desk(tmp_path: Path) -> Desk:
    return Desk(CompetitionSettings(submissions_per_day=50), tmp_path, CompetitionBook(tmp_path), lambda: None)


def _upload(desk: Desk, competitor: str, header: Header, archive: bytes) -> object:
    counted = desk.begin_upload(competitor, desk.clock())
    try:
        return desk.receive(competitor, header, io.BytesIO(archive), counted)
    finally:
        desk.settle(counted)


def _folder_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        add_tar_file(tar, "bot.py", b"class Bot:\n    pass\n")
    return buf.getvalue()


@pytest.fixture(scope="module")
def image_archive() -> bytes:
    """A ``docker save`` of the smallest image (one file, from scratch)."""
    client = docker_client()
    tag = f"allfours-test-names:{os.getpid()}"
    image = scratch_image(client, tag)
    try:
        return b"".join(image.save(named=True))
    finally:
        client.images.remove(image.id, force=True)


@pytest.mark.parametrize("name", UNTAGGABLE)
def test_a_name_docker_cannot_tag_is_refused_as_it_comes_in(tmp_path: Path, image_archive: bytes, name: str) -> None:
    """Refused ``invalid`` in one line, an image's archive and a folder alike; nothing kept."""
    desk = _desk(tmp_path)
    desk.book.add_competitor("eve")
    for header, archive in ((Header(name, "1", "image", ""), image_archive),
                            (Header(name, "1", "python", "bot:Bot"), _folder_archive())):
        with pytest.raises(Refused) as e:
            _upload(desk, "eve", header, archive)
        assert e.value.kind == "invalid" and "\n" not in str(e.value) and repr(name) in str(e.value), str(e.value)
    assert desk.book.submissions("eve") == []
    assert sorted((tmp_path / "submissions").glob("*")) == []  # no folder, no incoming upload left


def test_names_docker_can_tag_still_come_in(tmp_path: Path, image_archive: bytes) -> None:
    """``my-bot``, ``my--bot``, ``my__bot``, ``my.bot2``: kept as before."""
    desk = _desk(tmp_path)
    desk.book.add_competitor("eve")
    for name in ("my-bot", "my--bot", "my__bot", "my.bot2"):
        _upload(desk, "eve", Header(name, "1", "image", ""), image_archive)
    assert [s.entrant for s in desk.book.submissions("eve")] == ["my-bot@1", "my--bot@1", "my__bot@1", "my.bot2@1"]
