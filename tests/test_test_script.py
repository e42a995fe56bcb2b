"""scripts/test.sh, the README's test command's runner: the suite as two pytest processes at once (the
tests marked ``docker`` beside the others). Its exit status must fail when either half fails, every line
must say which half wrote it, and every test module that drives dockerd must carry the mark (else it
would run in the other half, beside the docker tests it was meant to follow)."""

from __future__ import annotations

import ast
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import default_signals

ROOT = Path(__file__).resolve().parents[1]

TWO_HALVES = """
import pytest


@pytest.mark.docker
def test_in_the_docker_half():
    assert {docker_ok}


def test_in_the_host_half():
    assert {host_ok}
"""


def run_script(tmp_path: Path, docker_ok: bool, host_ok: bool) -> subprocess.CompletedProcess[str]:
    """scripts/test.sh on a module of two tests, one a half, each passing or failing as told."""
    module = tmp_path / "test_halves.py"
    module.write_text(TWO_HALVES.format(docker_ok=docker_ok, host_ok=host_ok))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(ROOT / "scripts/test.sh"), str(module),
                           "-W", "ignore::pytest.PytestUnknownMarkWarning"],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize(("docker_ok", "host_ok", "code"), [(True, True, 0), (False, True, 1), (True, False, 1)])
def test_the_script_fails_when_either_half_fails(tmp_path: Path, docker_ok: bool, host_ok: bool, code: int) -> None:
    done = run_script(tmp_path, docker_ok, host_ok)
    assert done.returncode == code, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert any(line.startswith("[docker] ") and "1 passed" in line for line in lines) is docker_ok, done.stdout
    assert any(line.startswith("[host] ") and "1 passed" in line for line in lines) is host_ok, done.stdout
    assert any(line.startswith("[docker] ") and "1 deselected" in line for line in lines), done.stdout
    assert lines[-1] == (f"scripts/test.sh: docker half exit {0 if docker_ok else 1}, "
                         f"host half exit {0 if host_ok else 1}"), done.stdout


def test_a_file_of_one_half_passes_though_the_other_half_has_no_test(tmp_path: Path) -> None:
    """``scripts/test.sh`` given one test file (as the README allows) leaves one half without a test: pytest's exit
    5 there failed the whole script though every test given passed."""
    module = tmp_path / "test_one_half.py"
    module.write_text("def test_in_the_host_half():\n    assert True\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "scripts/test.sh"), str(module)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "docker half exit 5, host half exit 0" in done.stdout, done.stdout
    empty = tmp_path / "test_empty.py"
    empty.write_text("")
    none = subprocess.run(["bash", str(ROOT / "scripts/test.sh"), str(empty)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert none.returncode == 5, none.stdout + none.stderr


def test_a_test_marked_docker_half_runs_in_the_docker_half(tmp_path: Path) -> None:
    """A slow test that does not drive dockerd but is marked ``docker_half`` runs in the docker half (that evens
    out the two halves' time), once: not in the host half too, and the others stay in the host half."""
    module = tmp_path / "test_docker_half.py"
    module.write_text("import pytest\n\n\n@pytest.mark.docker_half\ndef test_moved():\n    pass\n\n\n"
                      "def test_stays():\n    pass\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "scripts/test.sh"), str(module), "-v"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("[docker] ") and "::test_moved PASSED" in line for line in lines), done.stdout
    assert any(line.startswith("[host] ") and "::test_stays PASSED" in line for line in lines), done.stdout
    assert not any("::test_moved" in line for line in lines if line.startswith("[host] ")), done.stdout
    assert not any("::test_stays" in line for line in lines if line.startswith("[docker] ")), done.stdout


def test_the_docker_half_mark_is_registered_and_used() -> None:
    """``docker_half`` is a registered mark (pyproject.toml) that the script's docker half selects, and the
    modules carrying it do not drive dockerd (those are marked ``docker``)."""
    assert "docker_half:" in (ROOT / "pyproject.toml").read_text()
    assert 'first="docker or docker_half"' in (ROOT / "scripts/test.sh").read_text()
    moved = [p.name for p in sorted((ROOT / "tests").glob("test_*.py"))
             if _marked(ast.parse(p.read_text()), "docker_half")]
    assert moved, "no module is marked docker_half: drop the mark, or mark the slow host modules it was for"
    assert not [m for m in moved if _uses_docker(ast.parse((ROOT / "tests" / m).read_text()))], moved


SLOW_HALVES = """
import pathlib
import time

import pytest


@pytest.mark.docker
def test_d():
    pathlib.Path({started!r}, "docker").touch()
    time.sleep(600)


def test_h():
    pathlib.Path({started!r}, "host").touch()
    time.sleep(600)
"""

# a Python that ignores SIGINT and execs its arguments: the landing CI's shell, a `… &` job of a
# non-interactive shell, starts scripts/test.sh so
IGNORE_INTERRUPTS = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                     "os.execvp(sys.argv[1], sys.argv[1:])")


@pytest.mark.parametrize(("sent", "interrupts", "to_group"), [
    pytest.param(signal.SIGINT, "default", False, id="SIGINT"),
    pytest.param(signal.SIGTERM, "default", False, id="SIGTERM"),
    pytest.param(signal.SIGHUP, "default", False, id="SIGHUP"),
    pytest.param(signal.SIGTERM, "ignored", False, id="SIGTERM-interrupts-ignored"),
    pytest.param(signal.SIGKILL, "default", True, id="SIGKILL-to-its-group"),
])
def test_a_signal_to_the_script_ends_both_halves(tmp_path: Path, sent: signal.Signals, interrupts: str,
                                                 to_group: bool) -> None:
    """Ctrl-C (SIGINT), a cancelled CI step (SIGTERM), a closed terminal (SIGHUP) or a runner's kill of the
    script's process group (SIGKILL) ends both pytest halves as pytest ends on Ctrl-C (its fixtures' cleanup run,
    "KeyboardInterrupt" said by each) and fails the script: a script's background jobs ignore SIGINT, so both
    halves ran on after the script was interrupted. A script started with SIGINT ignored (the landing CI: its
    halves ignore it too, and bash can change neither) hands SIGTERM on, which each half takes as Ctrl-C; before,
    it handed on SIGINT, which they ignored, and the script waited on them for ever, and then SIGTERM, which ended
    them without their cleanup. The halves are in process groups of their own, so SIGHUP (not handed on) and
    SIGKILL of the script's group (which cannot be) left both running; each half now ends itself once the script
    is gone. The script is started with its signals set as the case says, not as this test's runner inherited
    them (under the landing CI this test's SIGINT did nothing and timed out)."""
    started = tmp_path / "started"
    started.mkdir()
    module = tmp_path / "test_slow_halves.py"
    module.write_text(SLOW_HALVES.format(started=str(started)))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    argv = ["bash", str(ROOT / "scripts/test.sh"), str(module), "-s"]
    if interrupts == "ignored":
        argv = [sys.executable, "-c", IGNORE_INTERRUPTS, *argv]
    # a session of its own: every process the script starts is in it, so the cleanup finds them all
    script = subprocess.Popen(default_signals(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while sorted(p.name for p in started.iterdir()) != ["docker", "host"]:  # both halves are in their test
            assert time.monotonic() < deadline and script.poll() is None, "the halves did not start"
            time.sleep(0.2)
        if to_group:
            os.killpg(script.pid, sent)
        else:
            script.send_signal(sent)
        out = _ended(script)
        assert out.count("KeyboardInterrupt") >= 2, out  # each half ended as pytest does on Ctrl-C, said so
    finally:
        _leave_nothing(script)


@pytest.mark.parametrize("delay_s", [0.0, 0.02, 0.05, 0.1, 0.2, 0.4])
def test_a_signal_as_the_script_starts_leaves_nothing_running(tmp_path: Path, delay_s: float) -> None:
    """SIGTERM whenever it comes as the script starts its halves: nothing is left running. The trap was set once
    both halves had started, so a signal between the two starts ended the script (its default action) and left
    the first half, in a process group of its own, running. Each case sends it after another short wait."""
    started = tmp_path / "started"
    started.mkdir()
    module = tmp_path / "test_slow_halves.py"
    module.write_text(SLOW_HALVES.format(started=str(started)))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    script = subprocess.Popen(default_signals(["bash", str(ROOT / "scripts/test.sh"), str(module), "-s"]),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              start_new_session=True)
    try:
        time.sleep(delay_s)
        script.send_signal(signal.SIGTERM)
        _ended(script)
    finally:
        _leave_nothing(script)


def test_a_mark_expression_among_the_arguments_is_refused(tmp_path: Path) -> None:
    """``-m`` is the halves' own: given to the script, it replaced each half's expression, and every test it
    selected ran in both halves at once. Now it is one line of error and exit status 2, before any test runs."""
    for given in (["-m", "docker"], ["-mdocker"]):
        done = subprocess.run(["bash", str(ROOT / "scripts/test.sh"), str(tmp_path), *given], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and done.stdout == "", (given, done.stdout, done.stderr)
        assert done.stderr.strip().splitlines() == [
            "scripts/test.sh: -m is the halves' own (docker / not docker): select tests with -k or files"], done.stderr


def _ended(script: subprocess.Popen[str]) -> str:
    """The output of ``script`` (started in a session of its own) once it has failed, as it must once signalled,
    and nothing it started is left running (within 30 s)."""
    out, _ = script.communicate(timeout=120)
    assert script.returncode != 0, out
    deadline = time.monotonic() + 30
    while _session(script.pid):
        assert time.monotonic() < deadline, f"still running: {_commands(_session(script.pid))}\n{out}"
        time.sleep(0.2)
    return out


def _leave_nothing(script: subprocess.Popen[str]) -> None:
    """Kill whatever of ``script``'s session still runs: a timed-out or failed case leaves nothing behind either."""
    for pid in _session(script.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if script.poll() is None:
        script.kill()
    script.wait(30)


def _session(sid: int) -> list[int]:
    """Pids of the live processes (not zombies) in session ``sid``: for a script started with
    ``start_new_session``, the script and everything it started (its halves' shells, pytest and prefixers)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        state, _ppid, _pgrp, session = stat[stat.rindex(")") + 2:].split()[:4]
        if int(session) == sid and state != "Z":
            pids.append(int(d.name))
    return pids


def _commands(pids: list[int]) -> list[str]:
    """The command lines of ``pids`` (for a failure message; a process gone by then is left out)."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return found


def _uses_docker(tree: ast.Module) -> bool:
    """Whether a test module imports the docker SDK or tests/docker_helpers.py."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "docker" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module in ("docker", "tests.docker_helpers"):
            return True
    return False


def _marked(tree: ast.Module, mark: str) -> bool:
    """Whether the module's ``pytestmark`` names ``pytest.mark.<mark>`` (``docker`` is not ``docker_half``)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return re.search(rf"\bpytest\.mark\.{mark}\b", ast.unparse(node.value)) is not None
    return False


def test_every_module_that_drives_dockerd_is_marked_docker() -> None:
    unmarked = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        if _uses_docker(tree) and not _marked(tree, "docker"):
            unmarked.append(path.name)
    assert unmarked == [], f"add `pytestmark = pytest.mark.docker` to {unmarked}"
    assert _marked(ast.parse((ROOT / "tests/test_docker_sandbox.py").read_text()), "docker")  # the check sees a mark
