"""Prometheus metrics of the referee and the arena, scraped over HTTP from real processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from allfours.v1 import referee_pb2 as pb
from tests.configs import INSTANT, bots_toml
from tests.server_helpers import MD, ROOT, TOKEN, RefereeProc, finish, launch_bots


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample at ``url``: (name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_referee_counts_matches_decisions_latency_and_forfeits(tmp_path: Path) -> None:
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--metrics-port", "0",
                             "--grace", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            cwd=ROOT)
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline().split(), proc.stdout.readline().split()
        assert (first[0], second[0]) == ("METRICS", "PORT"), (first, second)
        url, port = f"http://127.0.0.1:{int(first[1])}/metrics", int(second[1])
        ref = RefereeProc(proc, port)
        before = scrape(url)
        assert before[("allfours_referee_matches_running", ())] == 0
        # one full match and one where seat 1 never joins (no_show)
        full = ref.create(players=2)
        bots = launch_bots(ref.address, full.tickets, ["random", "random"], tmp_path)
        full_result, _ = ref.result(full.match_id)
        finish(bots)
        lone = ref.create(players=2, join_ms=5000)
        bots = launch_bots(ref.address, lone.tickets[:1], ["random"], tmp_path)
        lone_result, _ = ref.result(lone.match_id)
        finish(bots)
        assert full_result.status == pb.MATCH_STATUS_COMPLETED and lone_result.status == pb.MATCH_STATUS_FORFEITED
        lines = [json.loads(x) for x in ref.record(full.match_id)]
        decisions = sum(1 for x in lines if x["type"] == "action" and x["by"] == "bot" and not x["out_of_turn"])
        after = scrape(url)
        ref.channel.close()
    finally:
        proc.terminate()
        proc.wait(15)
    assert after[("allfours_referee_matches_running", ())] == 0
    assert after[("allfours_referee_matches_total", (("status", "completed"),))] == 1
    assert after[("allfours_referee_matches_total", (("status", "forfeited"),))] == 1
    assert after[("allfours_referee_forfeits_total", (("reason", "no_show"),))] == 1
    assert after[("allfours_referee_decisions_total", ())] == decisions > 10
    assert after[("allfours_referee_decision_seconds_count", ())] == decisions
    assert 0 < after[("allfours_referee_decision_seconds_sum", ())] < decisions * 1.0
    assert MD  # the admin metadata the helpers use: the metrics endpoint needs none


def test_arena_serves_games_stored_while_it_runs(tmp_path: Path) -> None:
    cfg = tmp_path / "t.toml"
    cfg.write_text("""[tournament]
name = "metrics"
players = 2
games_per_pairing = 10
output = "out"
[[bots]]
name = "a"
command = ["x"]
[[bots]]
name = "b"
command = ["x"]
""")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--simulate", "0.3",
                             "--no-progress", "--metrics-port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("metrics: http://127.0.0.1:"), line
        url = line.split()[1]
        seen = 0.0
        deadline = time.monotonic() + 60
        while seen < 2 and time.monotonic() < deadline:
            seen = scrape(url).get(("allfours_arena_games_stored_total", ()), 0.0)
            time.sleep(0.2)
        assert 2 <= seen <= 10
        # no referee runs in this process (simulated games): none of the referee's metrics, which read 0
        names = {name for name, _ in scrape(url)}
        assert not [n for n in names if n.startswith("allfours_referee_")], sorted(names)
        assert "process_cpu_seconds_total" in names  # the rest of the registry is still served
    finally:
        proc.wait(60)
    assert proc.returncode == 0


def test_arena_reports_the_lobby_workers_per_bot(tmp_path: Path) -> None:
    """Local lobby workers (mode = "worker", 3 of one bot and 2 of the other) show in
    ``allfours_arena_workers_connected{bot}`` while the tournament runs."""
    cfg = tmp_path / "t.toml"
    cfg.write_text("""[tournament]
name = "lobby-metrics"
players = 2
games_per_pairing = 40
concurrency = 2
output = "out"
[[bots]]
name = "a"
mode = "worker"
workers = 3
command = ["{python}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"]
cwd = "ROOT"
[[bots]]
name = "b"
mode = "worker"
workers = 2
command = ["{python}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"]
cwd = "ROOT"
""".replace("ROOT", str(ROOT)))
    cmd = [sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--metrics-port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[1]
        want = {("a",): 3.0, ("b",): 2.0}
        seen: dict[tuple[str, ...], float] = {}
        deadline = time.monotonic() + 60
        while seen != want and time.monotonic() < deadline and proc.poll() is None:
            samples = scrape(url)
            seen = {tuple(v for _, v in labels): value for (name, labels), value in samples.items()
                    if name == "allfours_arena_workers_connected"}
            time.sleep(0.1)
        assert seen == want
        # the embedded referee runs in this process: its metrics are served beside the arena's
        assert ("allfours_referee_matches_running", ()) in samples
    finally:
        proc.wait(120)
    assert proc.returncode == 0


def test_arena_serve_serves_metrics_of_its_league(tmp_path: Path) -> None:
    """`arena serve --metrics-port` (the long-running league, which had no metrics at all: only
    `arena run` served them): the games it stores are counted as they are stored, the embedded
    referee's metrics beside them; SIGTERM still stops it with exit 0."""
    cfg = tmp_path / "t.toml"
    cfg.write_text("""[tournament]
name = "serve-metrics"
players = 2
games_per_pairing = 4
concurrency = 1
output = "out"
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
""" + bots_toml("one", "two", command=INSTANT, sandbox='"none"', cwd=f'"{ROOT}"'))
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--metrics-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("metrics: http://127.0.0.1:"), line
        url = line.split()[1]
        samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        deadline = time.monotonic() + 120
        sums: set[float] = set()  # stored + pending, at every scrape while the 4 games are played
        while time.monotonic() < deadline and proc.poll() is None:
            samples = scrape(url)
            stored = samples.get(("allfours_arena_games_stored_total", ()), 0.0)
            sums.add(stored + samples.get(("allfours_arena_games_pending", ()), 0.0))
            if samples.get(("allfours_arena_games_stored_total", ()), 0.0) >= 4:
                break
            time.sleep(0.05)
        assert samples.get(("allfours_arena_games_stored_total", ()), 0.0) == 4
        assert max(sums) <= 4, sums  # pending falls as each game is stored (not once the loop counts again)
        assert ("allfours_referee_matches_running", ()) in samples  # its referee is embedded
        assert samples[("allfours_referee_matches_total", (("status", "completed"),))] == 4
        while time.monotonic() < deadline and samples.get(("allfours_arena_games_pending", ())) != 0:
            time.sleep(0.2)  # set as the serve loop counts them again, once the 4 are stored
            samples = scrape(url)
        assert samples[("allfours_arena_games_pending", ())] == 0
        assert ("allfours_arena_submissions", (("status", "failed"),)) not in samples  # no [competition] here
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out


def test_arena_serve_reports_a_competitions_submissions_by_status(tmp_path: Path) -> None:
    """With a [competition] table, `arena serve --metrics-port` reports the book's submissions by status,
    every status (0 included): a `failed` one (the arena's fault) waits for the host's
    `arena competition retry`, which nothing but a log line told the host before. Needs dockerd (the
    competition's container sandbox), as every `arena serve` with a [competition] table."""
    from arena.competition.book import STATUSES, CompetitionBook

    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    with CompetitionBook(out) as book:
        book.add_competitor("alice")
        for k, status in enumerate(("failed", "failed", "rejected")):
            sub = book.add_submission("alice", f"bot{k}", "1", "python", "bot:Bot")
            book.set_status(sub.id, status, "build", "why")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        lobby = s.getsockname()[1]
    cfg = tmp_path / "t.toml"
    cfg.write_text(f"""[tournament]
name = "submission-metrics-{os.getpid()}"
players = 2
games_per_pairing = 2
concurrency = 1
output = "out"
lobby = "127.0.0.1:{lobby}"
[competition]
image_prefix = "allfours-metrics-test"
""" + bots_toml("one", "two", command=INSTANT, sandbox='"none"', cwd=f'"{ROOT}"'))
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--metrics-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[1]
        seen: dict[str, float] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not seen:
            seen = {dict(labels)["status"]: value for (name, labels), value in scrape(url).items()
                    if name == "allfours_arena_submissions"}
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        log = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, log
    assert seen == {status: {"failed": 2.0, "rejected": 1.0}.get(status, 0.0) for status in STATUSES}, log


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    """(status, body) of a GET of ``url``, with ``Authorization: Bearer token`` when given."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _only_with_the_token(url: str, token: str) -> str:
    """Check ``url`` answers 401 without the token or with another, and return its metrics with it."""
    for other in (None, "wrong", token + "x", token[:-1]):
        status, body = _get(url, other)
        assert status == 401, (other, status)
        assert body == "metrics need the metrics token: Authorization: Bearer <ALLFOURS_METRICS_TOKEN>\n"
        assert "allfours_" not in body
    status, body = _get(url, token)
    assert status == 200
    return body


def test_a_metrics_token_keeps_the_referee_s_metrics_from_anyone_without_it(tmp_path: Path) -> None:
    """On a network the bots share (a compose stack's), a bot reached the metrics port and read which
    entrants play now; with ``ALLFOURS_METRICS_TOKEN_FILE`` (a Docker secret) a scrape needs the token."""
    secret = tmp_path / "metrics_token"
    secret.write_text("scrape-me-0123456789\n")
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT),
           "ALLFOURS_METRICS_TOKEN_FILE": str(secret)}
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--metrics-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().split()
        assert first[0] == "METRICS", first
        body = _only_with_the_token(f"http://127.0.0.1:{int(first[1])}/metrics", "scrape-me-0123456789")
        assert "allfours_referee_matches_running 0.0" in body
    finally:
        proc.terminate()
        proc.wait(15)


def test_a_metrics_token_given_twice_or_unreadable_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT),
           "ALLFOURS_METRICS_TOKEN_FILE": str(tmp_path / "missing")}
    ref = subprocess.run([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--metrics-port", "0"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert ref.returncode == 2 and "PORT" not in ref.stdout
    assert ref.stderr.startswith("referee: ") and "ALLFOURS_METRICS_TOKEN_FILE" in ref.stderr
    assert len(ref.stderr.strip().splitlines()) == 1
    cfg = tmp_path / "t.toml"
    cfg.write_text('[tournament]\nname = "m"\nplayers = 2\noutput = "out"\n' + bots_toml("a", "b"))
    env["ALLFOURS_METRICS_TOKEN"] = "also-here"
    env["ALLFOURS_METRICS_TOKEN_FILE"] = str(cfg)
    run = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--simulate", "0", "--no-progress",
                          "--metrics-port", "0"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert run.returncode == 2
    assert (run.stdout + run.stderr).strip() == (
        "error: $ALLFOURS_METRICS_TOKEN and $ALLFOURS_METRICS_TOKEN_FILE are both set: give the secret once")
    assert not (tmp_path / "out").exists()  # refused before the tournament's folder is made


def test_the_arena_s_metrics_behind_its_token(tmp_path: Path) -> None:
    cfg = tmp_path / "t.toml"
    cfg.write_text('[tournament]\nname = "m"\nplayers = 2\ngames_per_pairing = 10\noutput = "out"\n'
                   + bots_toml("a", "b"))
    env = {**os.environ, "ALLFOURS_METRICS_TOKEN": "arena-scrape-token"}
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--simulate", "0.3",
                             "--no-progress", "--metrics-port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("metrics: http://127.0.0.1:"), line
        body = _only_with_the_token(line.split()[1], "arena-scrape-token")
        assert "allfours_arena_games_stored_total" in body
    finally:
        proc.wait(60)
    assert proc.returncode == 0


def _closed_by_server(s: socket.socket, wait_s: float) -> bool:
    """Whether the server closed ``s`` (it reads EOF, or a reset) within ``wait_s`` seconds."""
    s.settimeout(wait_s)
    try:
        return s.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_silent_clients_neither_hold_the_metrics_port_nor_pile_up_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that connects and sends nothing (or a byte now and then: a slowloris) held a thread of
    the metrics server for ever, and each one more: on a network the bots share (a compose stack's), a
    bot could pile up thousands of threads in the referee's process. Now a client has CLIENT_TIMEOUT_S
    for each read of its request, and at most MAX_CLIENTS are served at once (one more is closed at
    once); once the silent ones are gone, a scrape with the token is served."""
    from referee import metrics

    port = metrics.serve(0, token="scrape-token")
    silent = socket.create_connection(("127.0.0.1", port))
    assert _closed_by_server(silent, 60), "a silent client was never cut off"
    silent.close()

    monkeypatch.setattr(metrics._Quiet, "timeout", 60)
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(metrics.MAX_CLIENTS)]
    extra = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    try:
        assert all(_closed_by_server(s, 30) for s in extra), "clients beyond MAX_CLIENTS were served"
        assert not _closed_by_server(held[0], 0.2)  # the first ones still wait for their request
    finally:
        for s in held + extra:
            s.close()
    url = f"http://127.0.0.1:{port}/metrics"
    deadline = time.monotonic() + 60
    status = 0
    while status != 200 and time.monotonic() < deadline:
        try:
            status = _get(url, "scrape-token")[0]
        except OSError:  # refused while the closed clients' threads end
            time.sleep(0.1)
    assert status == 200
