"""One half of scripts/test.sh: ``python scripts/pytest_half.py SCRIPT_PID [PYTEST ARGS...]`` runs pytest with
SIGTERM taken as Ctrl-C and tethered to the script that started it.

- SIGTERM raises KeyboardInterrupt, as SIGINT does, so a half handed SIGTERM ends as pytest does on Ctrl-C, its
  fixtures' cleanup run (their containers, cgroups and processes removed). The script hands SIGTERM on when it
  started with SIGINT ignored (a ``… &`` job of a non-interactive shell, as CI harnesses start it), where
  neither it nor its halves can take SIGINT.
- Each half runs in a process group of its own (the script hands signals on to it), so a signal to the script's
  group, SIGKILL included, reached the script alone and both halves ran on. A thread looks once a second for the
  script (``SCRIPT_PID``); once it is gone (or a zombie) the half interrupts itself the same way.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

#: Seconds between two looks for the script.
LOOK_S = 1.0


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 - one read, closed by refcount
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def tether(script: int) -> None:
    """Interrupt this process (SIGTERM, taken as Ctrl-C) once ``script`` is gone."""
    while alive(script):
        time.sleep(LOOK_S)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> int:
    """Run pytest on ``sys.argv[2:]``, tethered to the script ``sys.argv[1]``; its exit status."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    script = int(sys.argv[1])
    del sys.argv[1]
    threading.Thread(target=tether, args=(script,), name="tether", daemon=True).start()
    sys.path[0] = os.getcwd()  # as ``python -m pytest`` has it (the tests import the repository's packages)
    import pytest

    return int(pytest.console_main())


if __name__ == "__main__":
    sys.exit(main())
