"""``referee serve`` configuration errors: one line on stderr, exit 2, no traceback, nothing started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server_helpers import ROOT


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": "t", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "referee.cli", "serve", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)


def assert_one_line_error(out: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("referee"), lines[0]
    for e in expected:
        assert e in lines[0], lines[0]
    assert "PORT" not in out.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["--port", "99999"], ["--port", "0..65535", "99999"]),
    (["--port", "-1"], ["--port", "0..65535", "-1"]),
    (["--port", "x"], ["--port"]),
    (["--grace", "-3"], ["--grace", ">= 0"]),
    (["--grace", "nan"], ["--grace"]),
    (["--tls-cert", "/nope.pem", "--tls-key", "/nope.key"], ["--tls-cert", "/nope.pem"]),
    (["--tls-cert", "/nope.pem"], ["--tls-key"]),
    (["--record-dir", "/proc/nope"], ["--record-dir", "/proc/nope"]),
])
def test_bad_settings_give_one_line_and_exit_2(args: list[str], expected: list[str]) -> None:
    assert_one_line_error(serve("--port", "0", *args) if args[0] != "--port" else serve(*args), *expected)


def test_record_dir_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert_one_line_error(serve("--port", "0", "--record-dir", str(f)), "--record-dir", str(f), "not a directory")


def test_tls_files_that_are_not_pem(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("garbage\n")
    key.write_text("garbage\n")
    assert_one_line_error(serve("--port", "0", "--tls-cert", str(cert), "--tls-key", str(key)), "--tls-cert",
                          "PEM")


def test_a_busy_port_is_one_line_naming_the_reason_and_exit_1() -> None:
    """A port another program holds: gRPC's own words were two lines, a C-core log line and
    `Failed to bind to address …; set GRPC_VERBOSITY=debug …`, neither naming the reason in the line we print;
    now one line says it, as `arena web` does (docs/protocol.md, Server settings)."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        out = serve("--port", str(port))
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert out.stderr.strip() == f"referee: cannot bind 127.0.0.1:{port}: Address already in use", out.stderr
    assert "PORT" not in out.stdout


@pytest.mark.parametrize("module", ["referee.replay", "referee.verify", "referee.healthcheck"])
def test_the_small_tools_answer_help_and_refuse_extra_arguments(module: str) -> None:
    """`python -m referee.healthcheck --help` dialled a referee named `--help` (`referee --help: UNAVAILABLE`,
    exit 1); replay and verify printed their usage for `--help` as an error (exit 2). `--help` is a question:
    the usage on stdout, exit 0; two arguments are a usage error: the usage on stderr, exit 2."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    asked = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=60)
    assert (asked.returncode, asked.stderr) == (0, ""), asked
    assert asked.stdout.startswith(f"usage: python -m {module} "), asked.stdout
    wrong = subprocess.run([sys.executable, "-m", module, "a", "b"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=60)
    assert wrong.returncode == 2 and wrong.stderr.startswith(f"usage: python -m {module} "), wrong
