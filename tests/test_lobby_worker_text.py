"""A remote worker's own words on the public board: a worker that answered its Assignment with a Ready naming
another match was refused, and the refusal, which quoted the match id the worker sent (80 characters of its
own choosing), was also why it left: the game's reasons, published in games.jsonl, the leaderboard and the
web's games list. The refusal now quotes nothing of the worker's. A real ``arena run`` with a remote bot and
a hostile worker (a real process) over the real lobby port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from web_helpers import ROOT, free_port

pytestmark = pytest.mark.slow

WORDS = "VISIT-evil.example any words I like"

_WORKER = textwrap.dedent("""
    import os, queue, sys, grpc
    from allfours.v1 import lobby_pb2 as lpb, lobby_pb2_grpc as lg
    def requests(out):
        while True:
            yield out.get()
    for game in range(2):  # a duplicate pair: a Connect for each game, each refused
        out = queue.Queue()
        out.put(lpb.ConnectRequest(register=lpb.Register(token=os.environ["T"], bot_name="far",
                                                         protocol_version="allfours.v1")))
        try:
            for reply in lg.LobbyServiceStub(grpc.insecure_channel(sys.argv[1])).Connect(
                    requests(out), wait_for_ready=True, timeout=240):
                if reply.WhichOneof("msg") == "assignment":  # a Ready for a match of its own words
                    out.put(lpb.ConnectRequest(ready=lpb.Ready(match_id=sys.argv[2])))
        except grpc.RpcError as e:
            print(e.code().name, e.details(), flush=True)
""")


def _config(tmp_path: Path, lobby: str) -> Path:
    cfg = tmp_path / "r.toml"
    cfg.write_text(textwrap.dedent(f"""
        [tournament]
        name = "words"
        players = 2
        games_per_pairing = 2
        concurrency = 1
        output = "out"
        lobby = "{lobby}"
        no_show_s = 120

        [tournament.time_control]
        join_ms = 2000

        [[bots]]
        name = "far"
        version = "1"
        remote = true

        [[bots]]
        name = "random"
        version = "1"
        command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"]
        cwd = "{ROOT / 'sample_bots'}"
    """))
    return cfg


def test_a_workers_own_words_in_a_ready_are_not_published(tmp_path: Path) -> None:
    lobby = f"127.0.0.1:{free_port()}"
    cfg = _config(tmp_path, lobby)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    made = subprocess.run([sys.executable, "-m", "arena.cli", "token", str(cfg), "far"], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)
    assert made.returncode == 0, made.stderr
    run = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    # the worker dials when it is ready, however late: each game waits for it (no_show_s), so no game is
    # forfeited for a slow start on a busy machine
    worker = subprocess.Popen([sys.executable, "-c", _WORKER, lobby, WORDS], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env={**env, "T": made.stdout.strip()}, cwd=ROOT)
    try:
        console, _ = run.communicate(timeout=600)
        told, _ = worker.communicate(timeout=300)
    finally:
        for proc in (run, worker):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    # the worker itself is told why, in one line a game
    assert told.startswith("INVALID_ARGUMENT Ready names"), told
    assert run.returncode == 0, console
    out = tmp_path / "out"
    reasons = [r for line in (out / "games.jsonl").read_text().splitlines() for r in json.loads(line)["reasons"]]
    assert any("worker w1 left during the game: Ready names" in r for r in reasons), reasons
    for published in (out / "leaderboard.html", out / "ratings.json"):  # the public board
        assert WORDS not in published.read_text(), published.name
    # nor the host's files: the refusal has no quote of the worker's for public_reason to cut
    assert WORDS not in (out / "games.jsonl").read_text() and WORDS not in console
