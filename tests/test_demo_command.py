"""The README's demo command on a machine without the C++ toolchain or Node.js (issue 24): the demo
(scripts/demo.sh) seats the sample bots that can run, says in one line which it left out and why,
and the others play the tournament to its leaderboard, sandboxed as in the full demo (bubblewrap).

The machine is this one with a PATH that lacks node, npm, cmake and g++ (every other program of
/usr/bin and /bin is linked into the test's own bin folder).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.config import load_config

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
#: What a fresh Debian machine lacks (the C++ sample bot's toolchain, Node.js).
MISSING = {"node", "nodejs", "npm", "npx", "cmake", "g++", "c++", "gcc", "cc", "protoc", "grpc_cpp_plugin"}


def readme_command(marker: str) -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    body = lines[lines.index(f"<!-- {marker} -->") + 1 : lines.index(f"<!-- /{marker} -->")]
    (cmd,) = [x for x in body if x.strip() and not x.startswith("```")]
    return cmd


def bare_path(tmp: Path) -> str:
    """A PATH with this machine's programs except :data:`MISSING`, then the venv's (python, arena)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for folder in (Path("/usr/bin"), Path("/bin")):
        for prog in folder.iterdir():
            if prog.name not in MISSING and not (bin_dir / prog.name).exists():
                (bin_dir / prog.name).symlink_to(prog)
    return f"{Path(sys.executable).parent}:{bin_dir}"


def test_demo_seats_the_bots_that_can_run_and_says_which_it_left_out(tmp_path: Path) -> None:
    """The demo part of the README command (after `pip install -e .`) with no node and no C++ toolchain:
    one line names nodejs and cpp and why, the Python sample bots (random, heuristic and the search bot at
    its demo level) play every game to the end, as many as the full demo (60: 3 pairings of 20 games),
    each in its sandbox (seeing its own folder, not the repository; none named unsandboxed on the
    leaderboard)."""
    command = readme_command("demo-command")
    demo = command.split("pip install -e . && ", 1)[1]  # this venv has the project installed already
    env = {**os.environ, "PATH": bare_path(tmp_path)}
    out_dir = ROOT / "arena-out" / "demo-without-nodejs-cpp"
    subprocess.run(["rm", "-rf", str(out_dir)], check=True)
    try:
        r = subprocess.run(["bash", "-c", f"{demo} --no-progress --bootstrap 20"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        said = [x for x in r.stderr.splitlines() if x.startswith("demo: left out")]
        assert len(said) == 1 and "nodejs (no node" in said[0] and "cpp (cmake not found" in said[0], r.stderr
        games = [json.loads(x) for x in (out_dir / "games.jsonl").read_text().splitlines()]
        seated = {g["a"] for g in games} | {g["b"] for g in games}
        assert len(games) == 60 and seated == {"random", "heuristic", "search"}
        assert all(g["terminations"] == ["normal"] * 4 for g in games)
        assert (out_dir / "leaderboard.html").stat().st_size > 0
        assert 'id="unsandboxed"' not in (out_dir / "leaderboard.html").read_text()
        bots = load_config(ROOT / "examples" / ".demo-without-nodejs-cpp.toml").bots
        assert [b.name for b in bots] == ["random", "heuristic", "search"]
        assert all(b.jailed and b.cwd == str(ROOT / "sample_bots") for b in bots), bots
    finally:
        subprocess.run(["rm", "-rf", str(out_dir)], check=True)
        (ROOT / "examples" / ".demo-without-nodejs-cpp.toml").unlink(missing_ok=True)


def test_demo_says_why_bubblewrap_could_not_be_installed(tmp_path: Path) -> None:
    """Without bubblewrap and with an apt that fails (no network in a fresh container), the demo says
    apt's own error lines (they were hidden), then arena run stops with its one line naming the package."""
    path = bare_path(tmp_path)
    for name in ("bwrap", "apt-get"):
        (tmp_path / "bin" / name).unlink(missing_ok=True)
    apt = tmp_path / "bin" / "apt-get"
    apt.write_text("#!/bin/sh\necho 'Reading package lists...'\n"
                   "echo 'E: Unable to locate package bubblewrap' >&2\nexit 100\n")
    apt.chmod(0o755)
    try:
        r = subprocess.run(["bash", "scripts/demo.sh", "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "PATH": path}, timeout=300)
    finally:  # the config demo.sh writes for the bots it seats, and any output, are this test's to remove
        subprocess.run(["rm", "-rf", str(ROOT / "arena-out" / "demo-without-nodejs-cpp")], check=True)
        (ROOT / "examples" / ".demo-without-nodejs-cpp.toml").unlink(missing_ok=True)
    lines = r.stderr.splitlines()
    assert r.returncode != 0, r.stdout[-2000:]
    assert "demo: could not install bubblewrap; apt said:" in lines, r.stderr
    assert "  E: Unable to locate package bubblewrap" in lines and "Reading package lists..." not in r.stderr
    assert any("bubblewrap" in x and x.startswith("error:") for x in lines), r.stderr
