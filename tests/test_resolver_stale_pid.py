"""close_resolver puts its rule in the container's network namespace or nowhere, never in another process's.

Docker answers a container's pid (``State.Pid``); when the container's init exits right after that answer, its
pid is free, and the next process the machine starts takes it once the pid counter has come round (a bot's own
forks turn that counter; kernel.pid_max is 32768 on a small host). The likeliest taker is ``nsenter`` itself,
the arena's next child: ``--net=/proc/PID/ns/net`` is then its own namespace, the arena's, and the rule lands
there, unseen (iptables succeeds). The test makes that happen on purpose, in a network and pid namespace of its
own (``unshare``, as root, like the arena): the freed pid is handed to the next process through the namespace's
own ``ns_last_pid``. Nothing is changed on the host.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import subprocess, sys
sys.path.insert(0, sys.argv[1])
from arena.hosting.sandbox import close_resolver

class Exited:
    '''A container docker said runs as ``pid`` (as just fetched), whose init has exited since.'''
    id = "0" * 64
    def __init__(self, pid):
        self.attrs = {"State": {"Pid": pid, "Running": True}}
    def reload(self):
        pass

gone = subprocess.Popen(["true"])
gone.wait()  # the container's init, exited: its pid is free
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(gone.pid - 1))  # the next process started takes it (the counter came round)
close_resolver(Exited(gone.pid))
print(subprocess.run(["iptables", "-w", "10", "-S", "OUTPUT"], capture_output=True, text=True, check=True).stdout)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="network namespaces")
def test_a_freed_pid_taken_by_nsenter_puts_no_rule_in_the_arenas_namespace() -> None:
    """The container's pid freed between docker's answer and the rule and taken by nsenter: no rule lands in
    the arena's own namespace (on batchB it did: ``-A OUTPUT -d 127.0.0.11/32 -j REJECT …``)."""
    r = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount-proc", sys.executable, "-c", SCRIPT,
                        str(ROOT)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "-P OUTPUT ACCEPT" in r.stdout, r.stdout  # iptables read the scratch namespace
    assert "127.0.0.11" not in r.stdout, r.stdout
