"""Static checks run as tests, so the README's one test command covers them: ruff over the tree,
``mypy --strict`` over the pure rules engine, and generated protobuf stubs matching the .proto."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_clean() -> None:
    r = _run(sys.executable, "-m", "ruff", "check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict_on_rules_engine() -> None:
    r = _run(sys.executable, "-m", "mypy", "--strict", "referee/rules", "referee/dealing.py")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="scripts/check_proto.sh needs bash")
def test_generated_stubs_are_current() -> None:
    r = _run("bash", "scripts/check_proto.sh")
    assert r.returncode == 0, r.stdout + r.stderr


def test_buf_lint_clean() -> None:
    buf = shutil.which("buf") or str(Path(sys.executable).parent / "buf")
    if not Path(buf).exists():
        pytest.skip("buf is not installed (it comes with the test extras: pip install -e '.[test]')")
    r = subprocess.run([buf, "lint"], cwd=ROOT / "proto", capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
