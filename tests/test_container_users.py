"""Each bot container runs as a uid of its own (:class:`arena.hosting.sandbox.BotUsers`), so no count the kernel
keeps per uid of the host joins two bots (a real dockerd, the sandbox's own containers).

With no user namespace, inotify instances (``fs.inotify.max_user_instances``), inotify and epoll watches and
POSIX message queue bytes are counted over every process of a host uid. When every bot container ran as 10001,
a seat that held all its uid's inotify instances made its partner's next ``inotify_init1`` fail (``EMFILE``):
a denial of service and a channel between two containers the sandbox keeps apart, one bit a probe. This test
failed before the fix (the partner's call got errno 24).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import base_image, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: The holder: open inotify instances until the kernel refuses one (or 4,000), write how many and the errno of
#: the refusal to /tmp/held, then keep them while the container lives.
HOLD = """
import ctypes, json, os, time
libc = ctypes.CDLL(None, use_errno=True)
held = []
while len(held) < 4000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    held.append(fd)
with open("/tmp/held.part", "w") as f:
    json.dump({"held": len(held), "errno": ctypes.get_errno()}, f)
os.rename("/tmp/held.part", "/tmp/held")
time.sleep(600)
"""

#: The partner's probe: one ``inotify_init1``, the ids it runs as and its ``HOME`` (one JSON object).
PROBE = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
print(json.dumps({"fd": fd, "errno": ctypes.get_errno() if fd < 0 else 0, "uid": os.getuid(), "gid": os.getgid(),
                  "home": os.environ.get("HOME")}))
"""


def held_by(bot: Any, wait_s: float = 60.0) -> dict[str, int]:
    """What the holder in ``bot``'s container wrote to /tmp/held, once it has (``AssertionError`` after ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        code, out = bot.container.exec_run(["cat", "/tmp/held"])
        if code == 0:
            return json.loads(out.decode())
        time.sleep(0.2)
    raise AssertionError("the holder never said how many inotify instances it holds")


def test_a_seat_holding_its_uids_inotify_instances_leaves_its_partner_its_own(tmp_path: Path) -> None:
    """Seat 0 holds every inotify instance its uid may have; seat 2 (its partner, same sandbox) still gets one."""
    from arena.hosting.sandbox import BOT_GROUP, Limits, Sandbox

    client = docker_client()
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    sandbox = Sandbox(client, run_key(tmp_path), f"users-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        limits = Limits(cpus=1.0, memory_mb=200)
        holder = sandbox.start(base_image("python"), "same", "g00001-s0", {}, limits, command=["python3", "-c", HOLD])
        partner = sandbox.start(base_image("python"), "same", "g00001-s2", {}, limits, command=["sleep", "600"])
        held = held_by(holder)
        code, out = partner.container.exec_run(["python3", "-c", PROBE])
        _, holder_ids = holder.container.exec_run(["id", "-u"])
        holder.stop(exit_wait_s=0)
        partner.stop(exit_wait_s=0)
    finally:
        sandbox.close()
    assert code == 0, out
    probe = json.loads(out.decode())
    # the holder filled its uid's count: it stopped at the host's limit, refused with EMFILE
    assert held == {"held": limit, "errno": 24}, held
    assert probe["fd"] >= 0, f"the partner's inotify_init1 failed with errno {probe['errno']}: the seats share a uid"
    assert probe["uid"] != int(holder_ids.decode()), (probe, holder_ids)
    assert probe["gid"] == BOT_GROUP and probe["uid"] != 0 and probe["home"] == "/tmp", probe
    assert leftovers(client, run_key(tmp_path)) == []


def test_each_container_and_each_validation_gets_a_uid_of_its_own() -> None:
    """A sandbox's uids never repeat in a long run of starts; a validation's ``docker run`` gets another one."""
    from arena.competition.validate import container_command
    from arena.hosting.sandbox import BOT_GROUP, BOT_UIDS, BotUsers

    users = BotUsers()
    given = [users.next() for _ in range(20_000)]
    uids = {int(u.split(":")[0]) for u in given}
    assert len(uids) == len(given) and all(u in BOT_UIDS for u in uids)
    assert {u.split(":")[1] for u in given} == {str(BOT_GROUP)}

    def user_of(argv: list[str]) -> str:
        return argv[argv.index("--user") + 1]

    first, second = (user_of(container_command("IMAGE", k, "/tmp/s", 1.0, 256)) for k in ("a", "b"))
    assert first != second and int(first.split(":")[0]) in BOT_UIDS and first.endswith(f":{BOT_GROUP}")
