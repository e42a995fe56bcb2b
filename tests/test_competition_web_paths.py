"""A seat number in a competitor page's path (``/me/logs/GAME/SEAT``, ``/me/live/GAME/SEAT``), as a
stranger with no session sends it: any number of digits. Starlette's ``{seat:int}`` passed them to
``int()``, which refuses more than 4,300 digits with ValueError, so the route itself raised: a 500 and a
30-line traceback in the arena's log for each request, from anyone (a real ``arena web`` process)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from web_helpers import ROOT, free_port

from arena.competition.book import CompetitionBook

pytestmark = pytest.mark.slow


def _serve(output: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``arena web OUTPUT`` on a free loopback port, its output into ``log``; (the process, its base URL)
    once ``/api/games`` answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", str(output), "--port", str(port)],
                                cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    for _ in range(600):
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{base}/api/games", timeout=5).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.2)
    proc.kill()
    proc.wait()
    raise AssertionError("arena web did not answer")


@pytest.mark.parametrize("page", ["logs", "live"])
def test_a_seat_number_of_any_length_is_one_line_not_a_server_error(tmp_path: Path, page: str) -> None:
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    with CompetitionBook(out) as book:
        book.add_competitor("ivy")
    log = tmp_path / "web.log"
    proc, base = _serve(out, log)
    try:
        answer = httpx.get(f"{base}/me/{page}/g1/{'9' * 5000}", timeout=30)
        small = httpx.get(f"{base}/me/{page}/g1/1", timeout=30)  # the same route, a seat that can be
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert answer.status_code == 404, (answer.status_code, answer.text[:200])
    assert len(answer.text.strip().splitlines()) <= 1 or "<html" in answer.text, answer.text[:200]
    assert small.status_code == 401, small.text  # no session: the page's own refusal still comes
    assert "Traceback" not in log.read_text(), log.read_text()[-2000:]
