"""A submission rejected at its build shows its author what the build said.

docs/competition.md promises a rejection's log tail, "the last 4 KiB of the failing step's output", in
``arena submissions``, ``GetSubmission`` and ``/me``. A build's rejection kept only docker's line (``The
command '/bin/sh -c … npm "$verb" …' returned a non-zero code: 1``): what npm or pip said of the failing
step (a missing package, a syntax error in a ``setup.py``) was lost, and its author could not tell why.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest

from tests.docker_helpers import base_image, docker_client

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: What the failing step says (on stderr, as npm says an error), then fails.
MARKER = "npm ERR! 404 'left-pad-rv31@9.9.9' is not in this registry"


def test_a_build_rejection_keeps_the_end_of_the_builds_output(tmp_path: Path) -> None:
    """A Node.js bot whose ``preinstall`` says why it fails: its rejection's log tail holds that line, then
    the one-line reason (the reason itself stays one line)."""
    from arena.competition.book import CompetitionBook
    from arena.competition.pipeline import BuildQueue, submission_folder, submission_tag
    from arena.competition.validate import Verdict
    from arena.config import CompetitionSettings

    client = docker_client()
    out = tmp_path / "out"
    settings = CompetitionSettings(base_node=base_image("node"), image_prefix="allfours-test-buildout")
    tag = submission_tag(settings, out, "sayer", "1")
    try:
        with CompetitionBook(out) as book:
            book.add_competitor("eve")
            sub = book.add_submission("eve", "sayer", "1", "node", "")
            folder = submission_folder(out, sub.id)
            folder.mkdir(parents=True)
            (folder / "bot.js").write_text("")
            (folder / "package.json").write_text(json.dumps({
                "name": "sayer", "version": "1.0.0", "main": "bot.js",
                "scripts": {"preinstall": f"echo {json.dumps(MARKER)} >&2; exit 1"}}))
            queue = BuildQueue(book, settings, out, lambda: None, lambda _: None,
                               validator=lambda *_: Verdict(True, (), ""), client=client)
            queue.start()
            try:
                deadline = time.monotonic() + 600
                while (got := book.get(sub.id)) is not None and got.status in ("received", "building"):
                    assert time.monotonic() < deadline, "the build did not end in 600 s"
                    time.sleep(0.5)
            finally:
                queue.stop()
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
    assert got is not None and got.status == "rejected" and got.step == "build", got
    assert "\n" not in got.reason and "returned a non-zero code: 1" in got.reason, got.reason
    assert MARKER in got.log_tail, got.log_tail
    assert got.log_tail.endswith(got.reason), got.log_tail
