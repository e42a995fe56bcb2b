"""A validation's verdict (arena/competition/validate.py) from the conformance suite's real ``--json``
output against a real broken bot process: what the competitor is shown keeps every failing check,
first, even when the bot's own output is long (the book keeps only a detail's end)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from arena.competition.book import LOG_TAIL_CHARS, CompetitionBook
from arena.competition.validate import verdict_of

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: A bot that says a lot, then leaves at its first decision.
CHATTY = '''
import os
from sdk import Bot, Context

class Chatty(Bot):
    def act(self, ctx: Context):
        for k in range(60):
            print(f"chatty bot: thinking hard, line {k} of 60", flush=True)
        os._exit(3)
'''


def test_a_rejection_shows_every_failing_check_before_the_bots_output(tmp_path: Path) -> None:
    (tmp_path / "chatty.py").write_text(CHATTY)
    run = subprocess.run([sys.executable, "-m", "sdk.conformance", "--json", "--", sys.executable, "-m", "sdk.run",
                          "chatty:Chatty"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    verdict = verdict_of(run.stdout, run.stderr)
    assert not verdict.passed and len(verdict.failing) >= 10, verdict
    assert len(verdict.detail) <= LOG_TAIL_CHARS
    with CompetitionBook(tmp_path / "out") as book:
        book.add_competitor("ann")
        sub = book.add_submission("ann", "chatty", "1", "python", "chatty:Chatty")
        book.set_status(sub.id, "rejected", "validation", "failing checks", verdict.detail)
        shown = book.submissions("ann")[0].log_tail
    first = shown.splitlines()[0]
    assert first.startswith(f"{verdict.failing[0]}: expected "), first
    for check in verdict.failing:
        assert f"\n{check}: expected " in f"\n{shown}", check
    assert "chatty bot: thinking hard" in shown and "more scenario(s) left out" in shown, shown[-600:]


def test_an_image_over_the_size_limit_is_rejected_and_removed(tmp_path: Path) -> None:
    """``image_bytes``: a real build of a good bot with the limit (64 MiB) under its base image's size but
    over what its build steps write (so the steps' disk watch lets it through) is rejected at
    its ``image`` step with one line naming both sizes, and its image is removed (validation never runs)."""
    from arena.competition.pipeline import BuildQueue, submission_folder
    from arena.config import CompetitionSettings
    from arena.hosting.sandbox import run_key
    from tests.docker_helpers import base_image, docker_client, leftovers

    client = docker_client()
    out = tmp_path / "out"
    settings = CompetitionSettings(image_bytes=64 * 1024**2, base_python=base_image("python"),
                                   image_prefix="allfours-test-size")
    with CompetitionBook(out) as book:
        book.add_competitor("ann")
        sub = book.add_submission("ann", "big", "1", "python", "big:RandomBot")
        folder = submission_folder(out, sub.id)
        folder.mkdir(parents=True)
        (folder / "big.py").write_text((Path(__file__).parent.parent / "sample_bots" / "random_bot.py").read_text())
        notes: list[str] = []

        def never(*_: object) -> object:
            raise AssertionError("an image over the limit was validated")

        queue = BuildQueue(book, settings, out, enroll=lambda: None, note=notes.append, validator=never, client=client)
        try:
            queue.process(sub)
        finally:
            queue.stop()  # removes the build network the build ran on
        got = book.get(sub.id)
    assert got is not None and (got.status, got.step) == ("rejected", "image"), got
    assert got.reason.startswith("the image is ") and got.reason.endswith("over the image limit of 67108864 bytes")
    assert not client.images.list(filters={"reference": "allfours-test-size/*"})
    assert leftovers(client, run_key(out)) == []


def test_a_validation_containers_output_is_capped_on_dockers_disk(tmp_path: Path) -> None:
    """A validation's containers ran with docker's default logging, json-file without a size limit: all a
    bot wrote while its scenario lasted (the suite lets one run 120 s, and a submission has many) went to
    docker's disk as well as to the suite, from a competitor's one submission. Now capped as a game's
    containers are (the sandbox's ``log_max_size`` x ``log_files``): of 30 MB written, a few MiB at most
    stay in docker's log files. (The container is kept until its log is measured: the test drops
    ``--rm``.)"""
    import os
    import secrets

    from arena.competition.validate import container_command
    from tests.docker_helpers import base_image

    name = f"allfours-test-validate-log-{secrets.token_hex(4)}"
    argv = [a for a in container_command(base_image("python"), name, str(tmp_path), 1.0, 256) if a != "--rm"]
    argv[2:2] = ["--name", name]
    try:
        subprocess.run([*argv, "sh", "-c", "head -c 30000000 /dev/zero | tr '\\0' x"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300, check=True)
        log = subprocess.run(["docker", "inspect", "--format", "{{.LogPath}}", name], capture_output=True, text=True,
                             timeout=60, check=True).stdout.strip()
        held = sum(os.path.getsize(p) for p in Path(log).parent.glob(Path(log).name + "*"))
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
    assert 0 < held <= 4 << 20, held
