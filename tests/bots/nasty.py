"""A bot that leaves processes behind and floods its output, then plays like ``arena.testing.instant_bot``.

``python -m tests.bots.nasty TAG MEGABYTES`` starts three sleepers with ``TAG-child`` in their argv —
a plain child, a child in a new session (``setsid``) and a double-forked daemon (its parent exits at
once, so it is orphaned) — writes ``MEGABYTES`` MiB to stdout, then plays the first legal action
until the match ends (referee and ticket from the environment the arena sets).
"""

from __future__ import annotations

import os
import subprocess
import sys

from arena.testing import instant_bot


def live_with_tag(tag: str) -> list[int]:
    """Pids of live (not zombie) processes with ``tag`` in their command line (for leftover counts)."""
    out = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmd and state != "Z":
            out.append(int(name))
    return out


def main() -> int:
    tag, megabytes = sys.argv[1], int(sys.argv[2])
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)", tag + "-child"]
    subprocess.Popen(sleeper, stdout=subprocess.DEVNULL)
    subprocess.Popen(sleeper, stdout=subprocess.DEVNULL, start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, sleeper)
        os._exit(0)
    block = b"x" * (1 << 20)
    for _ in range(megabytes):
        sys.stdout.buffer.write(block)
    sys.stdout.flush()
    return instant_bot.main([])


if __name__ == "__main__":
    sys.exit(main())
