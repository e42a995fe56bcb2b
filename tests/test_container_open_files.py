"""A bot container's processes hold at most :data:`arena.hosting.sandbox.OPEN_FILES` open files each.

Docker gave each container dockerd's own ``nofile`` limit (20,000 here) and the sandbox 64 processes, so one
container could hold 1.28 million open files: each is a ``struct file`` of the host's one file table
(``fs.file-max``, 2,466,239 on this 2-core host), and 200,000 eventfds cost the container only 91 MB of its
memory (measured), so a 512 MiB bot could hold about half the host's table, and two or three of them at once
(two games of one entrant, partners at a table of four) all of it: every process of the host, the arena and
dockerd among them, then failing to open a file (ENFILE).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import base_image, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: Four processes each open eventfds until refused (or 4,000), then say how many: one JSON list.
HOARD = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
readers = []
for _ in range(4):
    r, w = os.pipe()
    if os.fork() == 0:
        n = 0
        while n < 4000 and libc.eventfd(0, 0) >= 0:
            n += 1
        os.write(w, str(n).encode())
        os._exit(0)
    os.close(w)
    readers.append(r)
print(json.dumps([int(os.read(r, 32)) for r in readers]))
"""


@pytest.fixture(scope="module")
def client() -> Any:
    return docker_client()


def test_a_bots_processes_hold_few_open_files_each(client: Any, tmp_path: Path) -> None:
    """Four processes of a bot container (``Sandbox.start``) each open what they can: at most OPEN_FILES."""
    from arena.hosting.sandbox import OPEN_FILES, Limits, Sandbox

    sandbox = Sandbox(client, run_key(tmp_path), f"openfiles-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        bot = sandbox.start(base_image("python"), "hoarder", "g00001-s0", {}, Limits(cpus=1.0, memory_mb=200),
                            command=["sleep", "600"])
        code, out = bot.container.exec_run(["python3", "-c", HOARD])
        bot.stop(exit_wait_s=0)
    finally:
        sandbox.close()
    assert code == 0, out
    held = json.loads(out.decode())
    assert len(held) == 4 and max(held) <= OPEN_FILES, f"each process held {held} open files"
    assert leftovers(client, run_key(tmp_path)) == []


def test_a_validation_container_holds_few_open_files_a_process(tmp_path: Path) -> None:
    """The validation's ``docker run`` (``container_command``) sets the same limit."""
    from arena.competition.validate import container_command
    from arena.hosting.sandbox import OPEN_FILES

    argv = container_command("IMAGE", "key", str(tmp_path), 1.0, 256)
    assert f"nofile={OPEN_FILES}:{OPEN_FILES}" in argv
