"""TLS end to end: ``referee serve --tls-cert/--tls-key`` (a real process) and SDK bots connecting
with ``python -m sdk.run --tls-ca`` play a match to the end; plaintext is refused by that server."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "tls-test-token"
MD = (("authorization", f"Bearer {TOKEN}"),)

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the test makes its throwaway certificate with the openssl command")


def make_cert(d: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, valid for a day."""
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


@contextlib.contextmanager
def tls_admin(address: str, cert: Path) -> Iterator[pb_grpc.AdminServiceStub]:
    """The admin service of the TLS referee at ``address``, trusting ``cert``."""
    with grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())) as ch:
        yield pb_grpc.AdminServiceStub(ch)


def two_seat_match(admin: pb_grpc.AdminServiceStub, names: list[str]) -> pb.CreateMatchResponse:
    """A new head-to-head match of one game to 5 with these seat names."""
    return admin.CreateMatch(pb.CreateMatchRequest(rules=pb.RuleSet(players=2, target=5), seat_names=names, games=1),
                             metadata=MD, timeout=10)


@contextlib.contextmanager
def tls_referee(tmp_path: Path, env: dict[str, str]) -> Iterator[str]:
    """``referee serve`` with the certificate of :func:`make_cert` (made in ``tmp_path`` beforehand): its address."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    ref = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--tls-cert", str(cert),
                            "--tls-key", str(key), "--log-level", "warning"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    try:
        assert ref.stdout is not None
        line = ref.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"127.0.0.1:{line.split()[1]}"
    finally:
        ref.terminate()
        ref.wait(15)


def test_tls_match_end_to_end_and_plaintext_refused(tmp_path: Path) -> None:
    cert = make_cert(tmp_path)[0]
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    with tls_referee(tmp_path, env) as address:
        with tls_admin(address, cert) as admin:
            created = two_seat_match(admin, ["a", "b"])
            bots = [subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot",
                                      "--referee", address, f"--ticket={t}", "--tls-ca", str(cert),
                                      "--log-level", "warning"],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for t in created.tickets]
            result = None
            for m in admin.WatchMatch(pb.WatchMatchRequest(match_id=created.match_id), metadata=MD, timeout=120):
                if m.HasField("result"):
                    result = m.result
            outs = [b.communicate(timeout=60) for b in bots]
            assert [b.returncode for b in bots] == [0, 0], outs
            assert result is not None and result.status == pb.MATCH_STATUS_COMPLETED
            assert max(result.games[0].scores) >= 5
        # The same server does not speak plaintext.
        with grpc.insecure_channel(address) as plain:
            with pytest.raises(grpc.RpcError) as e:
                pb_grpc.AdminServiceStub(plain).ListMatches(pb.ListMatchesRequest(), metadata=MD, timeout=5)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]


def test_workers_of_a_tls_referee_are_told_tls(tmp_path: Path) -> None:
    """issue 24, item 9: with ``referee_tls_ca`` the arena speaks TLS to its external referee and each
    Assignment says ``referee_tls`` (it said plaintext always: every seat of a worker bot was a no-show)."""
    make_cert(tmp_path)  # cert.pem, named by the config below
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    with tls_referee(tmp_path, env) as address:
        bots = "".join(f'\n[[bots]]\nname = "{n}"\nmode = "worker"\ncommand = ["{{python}}", "-m", '
                       f'"arena.testing.instant_bot"]\ncwd = "{ROOT}"\nsandbox = "none"\n' for n in ("a", "b"))
        cfg = tmp_path / "tls.toml"
        cfg.write_text(f'[tournament]\nname = "tls"\nplayers = 2\ngames_per_pairing = 2\noutput = "out"\n'
                       f'referees = ["{address}"]\nreferee_tls_ca = "cert.pem"\n'
                       f'[tournament.time_control]\njoin_ms = 20000\n{bots}')
        done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap",
                               "50"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr
        games = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
        assert len(games) == 2 and all(g["terminations"] == ["normal"] * 2 for g in games), games


def test_a_tls_referee_that_joins_through_dns_is_dialled_over_tls(tmp_path: Path) -> None:
    """DnsWatch connects a referee that appears under a ``dns:`` name with the run's ``referee_tls_ca``
    (it dialled plaintext, which a TLS referee refuses, so the new referee never joined); the pool's
    first referee is the same TLS one, reached through :func:`connect_referees`."""
    from arena.play.referees import DnsWatch, connect_referees

    cert = make_cert(tmp_path)[0].read_bytes()
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    with tls_referee(tmp_path, env) as address:
        port = int(address.rsplit(":", 1)[1])
        pool = connect_referees([address], TOKEN, tls_ca=cert)
        try:
            assert [c.tls for c in pool.conns] == [True]
            # the name answers with the same referee under another spelling of its address: to the
            # watch, 127.0.0.1:PORT left the name and localhost:PORT is a new referee
            watch = DnsWatch(pool, [f"dns:referee:{port}"], TOKEN, lookup=lambda name, p: ["localhost"],
                             tls_ca=cert)
            watch.check()
            joined = [c for c in pool.alive if c.address == f"localhost:{port}"]
            assert len(joined) == 1 and joined[0].tls and joined[0].healthy()
            assert pool.retired == {address: "gone from DNS"}
        finally:
            pool.close()


def _play_against_python(tmp_path: Path, env: dict[str, str], other: list[str],
                         other_env: dict[str, str]) -> tuple[pb.MatchResult | None, list[tuple[int, str, str]]]:
    """A match on a TLS referee between ``other`` (a command taking ``--referee A --ticket=T`` appended) and
    the Python SDK's random bot: the result and each bot's exit status, stdout and stderr."""
    cert = tmp_path / "cert.pem"
    with tls_referee(tmp_path, env) as address, tls_admin(address, cert) as admin:
        created = two_seat_match(admin, ["other", "py"])
        cmds = [[*other, "--referee", address, f"--ticket={created.tickets[0]}"],
                [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee", address,
                 f"--ticket={created.tickets[1]}", "--tls-ca", str(cert), "--log-level", "warning"]]
        bots = [subprocess.Popen(c, cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for c, e in zip(cmds, [{**env, **other_env}, env], strict=True)]
        result = None
        for m in admin.WatchMatch(pb.WatchMatchRequest(match_id=created.match_id, result_only=True),
                                  metadata=MD, timeout=120):
            if m.HasField("result"):
                result = m.result
        outs = [b.communicate(timeout=60) for b in bots]
        return result, [(b.returncode, o, e) for b, (o, e) in zip(bots, outs, strict=True)]


def test_the_nodejs_bot_plays_a_tls_referee(tmp_path: Path) -> None:
    """``node bot.js --tls-ca F`` (and ``ALLFOURS_TLS_CA``) dials a referee over TLS: the bot had no
    ``--tls-ca`` (a usage error) and, outside worker mode, ignored ``ALLFOURS_TLS_CA`` (plaintext, which a
    TLS referee refuses: the seat was a no-show with 'no connection within the reconnect window')."""
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules is missing (run scripts/setup.sh)")
    cert = make_cert(tmp_path)[0]
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    for flag, extra in (([], {"ALLFOURS_TLS_CA": str(cert)}), (["--tls-ca", str(cert)], {})):
        result, bots = _play_against_python(tmp_path, env, ["node", "sample_bots/js/bot.js", *flag], extra)
        assert [b[0] for b in bots] == [0, 0], bots
        assert result is not None and result.status == pb.MATCH_STATUS_COMPLETED, bots


def test_the_cpp_bot_plays_a_tls_referee(tmp_path: Path) -> None:
    """``allfours-cpp-bot --tls-ca F`` (and ``ALLFOURS_TLS_CA``) dials a referee over TLS: it dialled
    plaintext always and had no ``--tls-ca`` (a usage error)."""
    binary = ROOT / "sample_bots/cpp/build/allfours-cpp-bot"
    require(binary.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    cert = make_cert(tmp_path)[0]
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    for flag, extra in (([], {"ALLFOURS_TLS_CA": str(cert)}), (["--tls-ca", str(cert)], {})):
        result, bots = _play_against_python(tmp_path, env, [str(binary), *flag], extra)
        assert [b[0] for b in bots] == [0, 0], bots
        assert result is not None and result.status == pb.MATCH_STATUS_COMPLETED, bots


def test_tls_hints_name_what_to_change() -> None:
    """The gRPC texts of a failed TLS connection (as grpcio, Node.js and Debian's C++ gRPC print them,
    measured on a referee in another network namespace) get one hint each; any other text none."""
    from referee.tls import tls_hint

    a = "10.0.0.5:50051"
    closed = "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:10.0.0.5:50051: Socket closed"
    assert tls_hint(closed, a, None) == (
        f" (does {a} serve TLS? then pass --tls-ca with the certificate the host gives out)")
    for plain in ("SSL_ERROR_SSL: error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER",
                  "SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number"):
        assert tls_hint(plain, a, "--tls-ca ca.pem") == f" ({a} does not speak TLS: leave out --tls-ca)"
    expired = "CERTIFICATE_VERIFY_FAILED: certificate has expired: OK"
    assert tls_hint(expired, a, "--tls-ca ca.pem") == (
        f" (the certificate {a} serves has expired: ask its host to renew it)")
    for name in ("Custom verification check failed with error: UNAUTHENTICATED: Hostname Verification Check failed.",
                 "Peer name 10.0.0.5 is not in peer certificate"):
        assert "is not made out to this address" in tls_hint(name, a, "--tls-ca ca.pem")
    other = "CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate: OK"
    assert tls_hint(other, a, "--tls-ca ca.pem") == (
        f" (the certificate of {a} is not the one of --tls-ca ca.pem: ask the host for theirs)")
    assert tls_hint("Connection refused", a, None) == tls_hint("Connection refused", a, "--tls-ca x") == ""


def test_sdk_run_says_what_to_change_about_tls(tmp_path: Path) -> None:
    """``sdk.run`` against a TLS referee without ``--tls-ca``, and a worker with ``--tls-ca`` against a
    plaintext lobby port, end with one line saying what to change (they said only gRPC's ``Socket closed``
    or an OpenSSL code, the worker after 300 s of retries at INFO level)."""
    cert = make_cert(tmp_path)[0]
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT), "ALLFOURS_BOT_TOKEN": "t" * 32}
    with tls_referee(tmp_path, env) as address:
        plain = subprocess.run([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee",
                                address, "--ticket=t0", "--connect-timeout", "2", "--log-level", "error"],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 1
    assert plain.stderr.strip().splitlines()[-1].endswith(
        f"(does {address} serve TLS? then pass --tls-ca with the certificate the host gives out)"), plain.stderr
    # a plaintext gRPC server (a referee) stands in for a lobby without TLS: the handshake fails first
    ref = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--log-level", "warning"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    try:
        assert ref.stdout is not None
        lobby = f"127.0.0.1:{ref.stdout.readline().split()[1]}"
        worker = subprocess.run([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                                 lobby, "--tls-ca", str(cert), "--reconnect", "2", "--log-level", "error"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        ref.terminate()
        ref.wait(15)
    assert worker.returncode == 1, worker.stderr
    assert worker.stderr.strip().splitlines()[-1].endswith(f"({lobby} does not speak TLS: leave out --tls-ca)"), (
        worker.stderr)


def test_the_embedded_referee_serves_the_lobbys_tls_to_remote_workers(tmp_path: Path) -> None:
    """With ``lobby_tls_cert``/``lobby_tls_key`` the embedded referee serves TLS with the same pair and
    every Assignment says ``referee_tls``: only the lobby was TLS, so a remote worker's ticket, its
    hand and every decision crossed the network in plaintext (and a ticket read off the wire could
    take the seat back within its grace). The games still end normally, against a per-game bot outside
    the sandbox too (it dials the referee's plaintext unix socket)."""
    import socket
    import threading

    from sdk.worker import LobbyWorker, sdk_player

    cert = make_cert(tmp_path)[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = tmp_path / "lg.toml"
    cfg.write_text(f'[tournament]\nname = "lg"\nplayers = 2\ngames_per_pairing = 2\noutput = "out"\n'
                   f'lobby = "127.0.0.1:{port}"\nlobby_tls_cert = "cert.pem"\nlobby_tls_key = "key.pem"\n'
                   '[[bots]]\nname = "a"\nremote = true\n[[bots]]\nname = "b"\nsandbox = "none"\n'
                   f'command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot"]\ncwd = "{ROOT}"\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    arena = [sys.executable, "-m", "arena.cli"]
    tokens = {n: subprocess.run([*arena, "token", str(cfg), n], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=60, check=True).stdout.split()[0] for n in ("a",)}
    run = subprocess.Popen([*arena, "run", str(cfg), "--no-progress", "--bootstrap", "50"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    told: list[tuple[str, bool]] = []
    ca = cert.read_bytes()

    def worker(name: str) -> None:
        from sample_bots.random_bot import RandomBot

        play = sdk_player(RandomBot, name, tls_ca=ca)

        def recorded(a: object) -> None:
            told.append((a.referee, a.referee_tls))  # type: ignore[attr-defined]
            play(a)  # type: ignore[arg-type]

        LobbyWorker(recorded, f"127.0.0.1:{port}", tokens[name], name, games=2, tls_ca=ca, reconnect_s=60).run()

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in ("a",)]
    for t in threads:
        t.start()
    out, _ = run.communicate(timeout=240)
    for t in threads:
        t.join(60)
    assert run.returncode == 0, out
    games = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(games) == 2 and all(g["terminations"] == ["normal"] * 2 for g in games), games
    assert len(told) == 2 and all(tls for _, tls in told), told


def test_the_embedded_referees_port_can_be_fixed_for_a_firewall(tmp_path: Path) -> None:
    """``arena run --referee-port P``: remote workers are told the embedded referee at port P, so a host
    behind a firewall opens the lobby's port and P (it was any free port, new at every start: nothing
    to open but everything). A port out of range is one usage line."""
    import socket
    import threading

    from sample_bots.random_bot import RandomBot
    from sdk.worker import LobbyWorker, sdk_player

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    lobby, referee = ports
    cfg = tmp_path / "lg.toml"
    cfg.write_text(f'[tournament]\nname = "lg"\nplayers = 2\ngames_per_pairing = 2\noutput = "out"\n'
                   f'lobby = "127.0.0.1:{lobby}"\n[[bots]]\nname = "a"\nremote = true\n'
                   f'[[bots]]\nname = "b"\nsandbox = "none"\n'
                   f'command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot"]\ncwd = "{ROOT}"\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    arena = [sys.executable, "-m", "arena.cli"]
    bad = subprocess.run([*arena, "run", str(cfg), "--referee-port", "70000"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2, bad.stderr
    assert "--referee-port: must be a whole number 0..65535, not '70000'" in bad.stderr, bad.stderr
    token = subprocess.run([*arena, "token", str(cfg), "a"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60, check=True).stdout.split()[0]
    run = subprocess.Popen([*arena, "run", str(cfg), "--no-progress", "--bootstrap", "50", "--referee-port",
                            str(referee)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    told: list[str] = []
    play = sdk_player(RandomBot, "a")

    def recorded(a: object) -> None:
        told.append(a.referee)  # type: ignore[attr-defined]
        play(a)  # type: ignore[arg-type]

    worker = threading.Thread(target=LobbyWorker(recorded, f"127.0.0.1:{lobby}", token, "a", games=2,
                                                 reconnect_s=60).run, daemon=True)
    worker.start()
    out, _ = run.communicate(timeout=240)
    worker.join(60)
    assert run.returncode == 0, out
    assert told == [f"127.0.0.1:{referee}"] * 2, told


def test_the_health_check_speaks_tls(tmp_path: Path) -> None:
    """``python -m referee.healthcheck --tls-ca F [--tls-name N] HOST:PORT`` checks a referee that serves
    TLS (the images' health check dialled plaintext only, so a TLS referee in a container or a Swarm task
    was always unhealthy); without ``--tls-ca`` it says so in its line. ``referee create-match`` without
    ``--tls-ca`` against it gets the same hint."""
    cert = make_cert(tmp_path)[0]
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "referee.healthcheck", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)

    with tls_referee(tmp_path, env) as address:
        port = address.rsplit(":", 1)[1]
        assert check("--tls-ca", str(cert), address).returncode == 0
        assert check("--tls-ca", str(cert), "--tls-name", "localhost", f"127.0.0.1:{port}").returncode == 0
        plain = check(address)
        create = subprocess.run([sys.executable, "-m", "referee.cli", "create-match", "--referee", address, "a", "b"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    hint = f"(does {address} serve TLS? then pass --tls-ca with the certificate the host gives out)"
    assert plain.returncode == 1 and plain.stderr.strip().endswith(hint), plain.stderr
    assert create.returncode == 1 and create.stderr.strip().endswith(hint), create.stderr
    assert check("--tls-ca", str(tmp_path / "none.pem"), address).returncode == 2


def test_the_nodejs_bot_names_a_bad_ca_file_in_one_line(tmp_path: Path) -> None:
    """A CA file that is missing or holds no PEM certificate, given by ``ALLFOURS_TLS_CA`` or ``--tls-ca``,
    per game or to a worker, is one line and exit status 2 before any dial (a worker's was a Node.js
    stack trace, a file without a certificate a handshake error at the first dial)."""
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules is missing (run scripts/setup.sh)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bot = ["node", str(ROOT / "sample_bots/js/bot.js")]
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    missing = {"ALLFOURS_TLS_CA": str(tmp_path / "missing.pem")}
    for extra, args in ((missing, ["--referee", "127.0.0.1:9", "--ticket=t"]),
                        ({}, ["--referee", "127.0.0.1:9", "--ticket=t", "--tls-ca", str(not_pem)]),
                        ({"ALLFOURS_TLS_CA": str(not_pem), "ALLFOURS_BOT_TOKEN": "x"}, ["--arena", "127.0.0.1:9"])):
        r = subprocess.run([*bot, *args], env={**env, **extra}, capture_output=True, text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("bot.js: "), (args, r.stderr)
        assert "missing.pem" in lines[0] or "is not a PEM certificate" in lines[0], r.stderr



def test_the_nodejs_bot_says_why_a_tls_connection_failed_in_one_line(tmp_path: Path) -> None:
    """A plaintext bot at a TLS referee, or a ``--tls-ca`` bot at a plaintext one (or with another
    certificate), said only ``no connection within the reconnect window`` (and Node.js's two-line
    DEP0123 warning for a TLS dial of an IP address). Now one line with gRPC's status and details
    (OpenSSL's reason) and the TLS hint, exit 1."""
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules is missing (run scripts/setup.sh)")
    cert = make_cert(tmp_path)[0]
    other = tmp_path / "other"
    other.mkdir()
    other_cert = make_cert(other)[0]
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    plain = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--log-level", "warning"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)

    def bot(address: str, *extra: str) -> tuple[int, str]:
        r = subprocess.run(["node", str(ROOT / "sample_bots/js/bot.js"), "--referee", address, "--ticket=t",
                            "--connect-timeout-ms", "1000", *extra], env=env, capture_output=True, text=True,
                           timeout=60)
        return r.returncode, r.stderr.strip()

    try:
        assert plain.stdout is not None
        plain_address = f"127.0.0.1:{plain.stdout.readline().split()[1]}"
        with tls_referee(tmp_path, env) as address:
            runs = {"plaintext": bot(address), "no TLS there": bot(plain_address, "--tls-ca", str(cert)),
                    "another certificate": bot(address, "--tls-ca", str(other_cert))}
    finally:
        plain.terminate()
        plain.wait(15)
    for case, (code, err) in runs.items():
        assert code == 1 and "\n" not in err and ": UNAVAILABLE: No connection established. " in err, (case, err)
    assert runs["plaintext"][1].endswith("pass --tls-ca with the certificate its host gives out)"), runs
    assert "wrong version number" in runs["no TLS there"][1], runs
    assert "signed certificate" in runs["another certificate"][1], runs


def test_the_cpp_bot_names_a_bad_ca_file_in_one_line(tmp_path: Path) -> None:
    """A CA file that cannot be read or holds no PEM certificate (``ALLFOURS_TLS_CA`` or ``--tls-ca``) is one
    line and exit status 2 before any dial (one without a certificate was a handshake error at the first)."""
    binary = ROOT / "sample_bots/cpp/build/allfours-cpp-bot"
    require(binary.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    missing = {"ALLFOURS_TLS_CA": str(tmp_path / "missing.pem")}
    for extra, args in ((missing, ["--referee", "127.0.0.1:9", "--ticket=t"]),
                        ({}, ["--referee", "127.0.0.1:9", "--ticket=t", "--tls-ca", str(not_pem)])):
        r = subprocess.run([str(binary), *args], env={**env, **extra}, capture_output=True, text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("allfours-cpp-bot: "), (args, r.stderr)
        assert "missing.pem" in lines[0] or "is not a PEM certificate" in lines[0], r.stderr


def _remote_listener_serves_seats_only(address: str, creds: grpc.ChannelCredentials | None) -> None:
    """Health answers SERVING at ``address`` and the AdminService is not there: CreateMatch, even with the
    right token, is UNIMPLEMENTED."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    channel = grpc.secure_channel(address, creds) if creds else grpc.insecure_channel(address)
    with channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as e:
            pb_grpc.AdminServiceStub(channel).CreateMatch(pb.CreateMatchRequest(
                rules=pb.RuleSet(players=2, target=5), seat_names=["a", "b"], games=1), metadata=MD, timeout=10)
        assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED, e.value


def test_the_embedded_referees_remote_listener_serves_tls_seats_and_no_admin(tmp_path: Path) -> None:
    """The listener remote workers dial when the embedded referee's own address is the container sandbox's
    gateway (:class:`arena.play.referees.RemoteListener`): over TLS with the lobby's pair, bots play a
    match there on tickets the main address gave; plaintext is refused there; no AdminService; a port in
    use is one line; it stops with the referee."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from arena.play.referees import RefereeError, RemoteListener, connect_referees

    cert, key = make_cert(tmp_path)
    pool = connect_referees([], None, remote=RemoteListener("127.0.0.1", 0, "localhost",
                                                            (cert.read_bytes(), key.read_bytes())))
    conn = pool.conns[0]
    try:
        assert conn.remote is not None and conn.remote.startswith("localhost:") and conn.remote_tls
        assert conn.remote != conn.address and not conn.tls  # the main address is as it was
        creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        _remote_listener_serves_seats_only(conn.remote, creds)
        with grpc.insecure_channel(conn.remote) as plain, pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest(), timeout=5)
        created = conn.admin.CreateMatch(pb.CreateMatchRequest(
            rules=pb.RuleSet(players=2, target=5), seat_names=["a", "b"], games=1), metadata=conn.metadata, timeout=10)
        bots = [subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee",
                                  conn.remote, f"--ticket={t}", "--tls-ca", str(cert), "--log-level", "warning"],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for t in created.tickets]
        outs = [b.communicate(timeout=120)[0] for b in bots]
        assert [b.returncode for b in bots] == [0, 0], outs
        final = None
        for ev in conn.admin.WatchMatch(pb.WatchMatchRequest(match_id=created.match_id, result_only=True),
                                        metadata=conn.metadata, timeout=60):
            final = ev.result if ev.HasField("result") else final
        assert final is not None and final.status == pb.MATCH_STATUS_COMPLETED, final
        with pytest.raises(RefereeError, match=r"^the embedded referee cannot listen for remote workers: cannot bind"):
            RemoteListener("127.0.0.1", int(conn.remote.rsplit(":", 1)[1])).open(conn)
    finally:
        pool.close()
    with grpc.insecure_channel(conn.remote.replace("localhost", "127.0.0.1")) as gone, pytest.raises(grpc.RpcError):
        health_pb2_grpc.HealthStub(gone).Check(health_pb2.HealthCheckRequest(), timeout=5)


def test_a_plaintext_remote_listener_serves_seats_and_no_admin() -> None:
    """:meth:`referee.server.ThreadedReferee.listen_remote` without a TLS pair: plaintext, health and seats
    only (no AdminService)."""
    from referee.server import ThreadedReferee

    with ThreadedReferee(grace_s=1.0, admin_token=TOKEN) as ref:
        port = ref.listen_remote("127.0.0.1")
        assert port not in (0, ref.port)
        _remote_listener_serves_seats_only(f"127.0.0.1:{port}", None)


@pytest.mark.parametrize(("key", "what"), [("lobby_tls_cert", "certificate"), ("lobby_tls_key", "private key"),
                                           ("referee_tls_ca", "certificate")])
def test_a_config_naming_a_file_that_is_not_pem_is_one_line(tmp_path: Path, key: str, what: str) -> None:
    """A config's ``lobby_tls_cert``/``lobby_tls_key``/``referee_tls_ca`` naming a file that is not PEM (a
    wrong file, swapped names) met gRPC's own error: three log lines and "the embedded referee could not
    start: Failed to bind to address 127.0.0.1:0", naming neither the key nor the file. It is one config
    error line now, exit 2, before anything starts."""
    cert, private = make_cert(tmp_path)
    (tmp_path / "notes.txt").write_text("not a PEM file\n")
    files = {"lobby_tls_cert": cert.name, "lobby_tls_key": private.name, "referee_tls_ca": cert.name, key: "notes.txt"}
    referees = 'referees = ["127.0.0.1:1"]\n' if key == "referee_tls_ca" else ""
    tls = "".join(f'{k} = "{v}"\n' for k, v in files.items() if k != "referee_tls_ca" or referees)
    (tmp_path / "bot").mkdir()
    cfg = tmp_path / "pem.toml"
    cfg.write_text(f'[tournament]\nname = "pem"\nplayers = 2\noutput = "out"\nlobby = "127.0.0.1:0"\n{referees}{tls}'
                   + "".join(f'[[bots]]\nname = "{n}"\nmode = "worker"\ncwd = "bot"\n'
                             + ('sandbox = "none"\n' if referees else "")  # an external referee: trusted bots
                             + 'command = ["{python}", "-m", "arena.testing.instant_bot"]\n' for n in "ab"))
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "ALLFOURS_ADMIN_TOKEN": "t"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"config error: {cfg}: tournament.{key}: is not a PEM {what} (no line with "
        f"{'PRIVATE KEY-----' if what == 'private key' else '-----BEGIN CERTIFICATE-----'!r}) "
        f"(got {str(tmp_path / 'notes.txt')!r})"], done.stderr
