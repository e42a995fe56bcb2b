"""Static checks run as tests, so the README's one test command covers them: ruff over the tree,
``mypy --strict`` over the packages of :data:`STRICT` (the referee with its rules engine, the SDK, the
arena), generated protobuf stubs matching the .proto, and no function of the product code
longer than :data:`MAX_FUNCTION_LINES`."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Longest function (``def`` line to its last line, docstring included) in the product code.
MAX_FUNCTION_LINES = 60
#: The product code: every package but the tests.
PRODUCT = ("referee", "sdk", "arena", "sample_bots")


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_clean() -> None:
    r = _run(sys.executable, "-m", "ruff", "check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


#: The packages ``mypy --strict`` checks, whole: a new module of one of them is checked from its first
#: commit. gRPC, protobuf, scipy and the docker SDK ship no types (their values are Any: pyproject.toml).
STRICT = ("referee", "sdk", "arena")


def test_mypy_strict_on_referee_sdk_and_arena() -> None:
    """The referee (the rules engine with it), the SDK (its conformance checker included) and the
    arena, in one run."""
    r = _run(sys.executable, "-m", "mypy", "--strict", *STRICT)
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


def long_functions(root: Path = ROOT, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` for every function or method of :data:`PRODUCT` longer than ``limit``
    lines (generated stubs and node_modules aside)."""
    found = []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")) or "node_modules" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > limit:
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_functions_are_under_sixty_lines() -> None:
    found = long_functions()
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n" + "\n".join(found)


def test_the_length_check_sees_a_long_method(tmp_path: Path) -> None:
    body = "\n".join(f"        x{k} = {k}" for k in range(60))
    (tmp_path / "arena").mkdir()
    source = f"class C:\n    def short(self):\n        pass\n\n    def long(self):\n{body}\n"
    (tmp_path / "arena" / "m.py").write_text(source)
    assert long_functions(tmp_path) == [f"{Path('arena', 'm.py')}:5 long (61 lines)"]
