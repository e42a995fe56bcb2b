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
