"""scripts/test.sh, the README's test command's runner: the suite as two pytest processes at once (the
tests marked ``docker`` beside the others). Its exit status must fail when either half fails, every line
must say which half wrote it, and every test module that drives dockerd must carry the mark (else it
would run in the other half, beside the docker tests it was meant to follow)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_an_interrupt_ends_both_halves(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the script): a script's background jobs ignore SIGINT, so both pytest processes ran on
    after the script was interrupted. Now each half is handed the interrupt and ends; the script fails."""
    import signal
    import time

    module = tmp_path / "test_slow_halves.py"
    module.write_text("import time\nimport pytest\n\n\n@pytest.mark.docker\ndef test_d():\n    time.sleep(600)\n"
                      "\n\ndef test_h():\n    time.sleep(600)\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    script = subprocess.Popen(["bash", str(ROOT / "scripts/test.sh"), str(module), "-s"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while len(_running(module)) < 2:  # both halves have started their test
            assert time.monotonic() < deadline and script.poll() is None, "the halves did not start"
            time.sleep(0.2)
        time.sleep(2)  # let each reach its test's sleep (collection done)
        script.send_signal(signal.SIGINT)
        out, _ = script.communicate(timeout=120)
    finally:
        if script.poll() is None:
            script.kill()
    try:
        assert script.returncode != 0, out
        deadline = time.monotonic() + 30
        while _running(module):
            assert time.monotonic() < deadline, f"pytest halves still running: {_running(module)}"
            time.sleep(0.2)
        assert "KeyboardInterrupt" in out, out  # each half ended as pytest does on Ctrl-C, and said so
    finally:
        for pid in _running(module):  # the old script's halves slept on: leave nothing behind
            os.kill(pid, signal.SIGKILL)


def _running(module: Path) -> list[int]:
    """Pids of live pytest processes given ``module`` on their command line."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if d.name.isdigit() and b"pytest" in cmd and str(module).encode() in cmd:
            pids.append(int(d.name))
    return pids


def _uses_docker(tree: ast.Module) -> bool:
    """Whether a test module imports the docker SDK or tests/docker_helpers.py."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "docker" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module in ("docker", "tests.docker_helpers"):
            return True
    return False


def _marked_docker(tree: ast.Module) -> bool:
    """Whether the module's ``pytestmark`` names ``pytest.mark.docker``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return "pytest.mark.docker" in ast.unparse(node.value)
    return False


def test_every_module_that_drives_dockerd_is_marked_docker() -> None:
    unmarked = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        if _uses_docker(tree) and not _marked_docker(tree):
            unmarked.append(path.name)
    assert unmarked == [], f"add `pytestmark = pytest.mark.docker` to {unmarked}"
    assert _marked_docker(ast.parse((ROOT / "tests/test_docker_sandbox.py").read_text()))  # the check sees a mark
