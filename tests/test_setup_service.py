"""scripts/setup.sh's ``start_service``: a daemon it starts keeps none of its caller's descriptors.

The bug it fixes: land.sh holds its landing lock (``flock`` on fd 9) while it runs scripts/setup.sh;
dockerd started there inherited fd 9 and held the lock for as long as it ran, so no later landing
could take it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _start_service_function() -> str:
    """The ``start_service`` function's text, cut out of scripts/setup.sh (which, run, sets up the machine)."""
    lines = (ROOT / "scripts" / "setup.sh").read_text().splitlines()
    start = lines.index("start_service() {")
    end = lines.index("}", start)
    return "\n".join(lines[start:end + 1])


def test_a_started_service_does_not_hold_the_callers_lock(tmp_path: Path) -> None:
    lock, pidfile = tmp_path / "land.lock", tmp_path / "pid"
    script = (f'set -euo pipefail\nSUDO=""\n{_start_service_function()}\n'
              f'exec 9>"{lock}"\nflock 9\n'
              f'start_service /dev/null bash -c \'echo $$ > "{pidfile}"; exec sleep 30\'\n'
              f'for _ in $(seq 1 50); do [ -s "{pidfile}" ] && break; sleep 0.1; done\n')
    subprocess.run(["bash", "-c", script], check=True, timeout=30)
    daemon = int(pidfile.read_text())
    try:
        assert Path(f"/proc/{daemon}").exists(), "the service is not running"
        # The caller has exited; its lock must be free although the service still runs.
        free = subprocess.run(["flock", "-n", str(lock), "true"], timeout=10)
        assert free.returncode == 0, "the service inherited the caller's lock"
    finally:
        subprocess.run(["kill", str(daemon)], check=False)
        deadline = time.monotonic() + 5
        while Path(f"/proc/{daemon}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
