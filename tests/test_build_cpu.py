"""A competition build's own code is held to the build's CPU limit.

A submission's build runs its own code as root (npm's ``preinstall``, a pip sdist's ``setup.py``), for up to
``[competition] build_s`` (600 s by default), five times a day a competitor, while the league plays. Its
steps had a memory, pids, disk and files limit but no CPU limit: four busy loops in a ``preinstall`` took
every core of a 2-core host, and the running games' bots (whose moves are timed) and the arena shared what
was left. The steps now run under the build network's parent cgroup with a CPU quota of
:data:`arena.hosting.sandbox.BUILD_CPUS` cores for all of them together.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from arena.hosting.bots_build import build_image, plan_build
from arena.hosting.sandbox import run_key
from tests.docker_helpers import base_image, docker_client, file_in_image, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: Seconds each busy loop of the preinstall spins (wall time).
SPIN_S = 4
#: Busy loops at once: more than the cores a 2-core host has.
SPINNERS = 4
#: Cores the test's build network gives its builds (well below what the loops take on a busy host).
LIMIT = 0.25
#: The preinstall: SPINNERS busy loops for SPIN_S s, and the CPU its step's container took meanwhile (its cgroup's
#: cpuacct.usage, ns; v2: cpu.stat's usage_usec) and the wall time (ns), into /opt/bot/cpu.txt.
SPIN = f"""
used() {{
  if [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then cat /sys/fs/cgroup/cpuacct/cpuacct.usage
  else echo $(( $(sed -n 's/^usage_usec //p' /sys/fs/cgroup/cpu.stat) * 1000 )); fi
}}
before=$(used); start=$(date +%s%N)
for i in $(seq {SPINNERS}); do timeout {SPIN_S} sh -c 'while :; do :; done' & done
wait
after=$(used); end=$(date +%s%N)
echo "$((after - before)) $((end - start))" > /opt/bot/cpu.txt
"""


def test_a_builds_own_busy_loops_get_at_most_the_build_cpus(tmp_path: Path) -> None:
    """Four busy loops in a competition build's preinstall (on the run's build network, its parent cgroup)
    take at most about the network's ``cpus``: the CPU its step used over the wall time it spun. The test's
    limit is a quarter core (the default, :data:`arena.hosting.sandbox.BUILD_CPUS`, is one), so that the
    loops surely reach it on a host busy with other work: before, they took 1.12 cores here, at a load of 8."""
    from arena.hosting.sandbox import BuildNetwork

    client = docker_client()
    folder = tmp_path / "spinner"
    folder.mkdir()
    (folder / "bot.js").write_text("")
    (folder / "spin.sh").write_text(SPIN)
    (folder / "package.json").write_text(json.dumps({"name": "spinner", "version": "1.0.0", "main": "bot.js",
                                                     "scripts": {"preinstall": "sh spin.sh"}}))
    key = run_key(tmp_path / "out")
    tag = f"allfours-test/buildcpu-{key}:1"
    network = BuildNetwork(client, key, "buildcpu", cpus=LIMIT)
    network.open()
    try:
        image = build_image(plan_build(folder, "spinner", "1", tag=tag), base_image("node"), client=client,
                            timeout_s=300, network=network.name, cgroup_parent=network.cgroup_parent)
        used_ns, wall_ns = map(int, file_in_image(client, image, "/opt/bot/cpu.txt").split())
    finally:
        network.close()
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
    cores = used_ns / wall_ns
    assert cores <= LIMIT * 1.5, f"the build's busy loops took {cores:.2f} cores (limit {LIMIT})"
    assert leftovers(client, key) == []
