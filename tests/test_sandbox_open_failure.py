"""A container sandbox that cannot be made leaves nothing behind (a real dockerd and iptables): ``arena run``
gets no sandbox to close when :meth:`Sandbox.open` fails, so what open made before the failing step (the
network, its firewall chain) must go there. A kernel without iptables' ``connlimit`` match (the chain's first
rule, the bound on a container's connections) left the network and the chain until the next run; so would one
without ``hashlimit`` (its second, the bound on their rate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docker_helpers import docker_client, leftovers

pytestmark = [pytest.mark.docker]


@pytest.mark.parametrize("match", ["connlimit", "hashlimit"])
def test_a_sandbox_whose_firewall_rule_fails_leaves_no_network_or_chain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, match: str) -> None:
    """``match``: the rule that fails (the bound on connections open at once, first; the bound on their rate,
    second, after the first made its rule: both go)."""
    import arena.hosting.sandbox as sandbox_module
    from arena.hosting.sandbox import Sandbox, SandboxError, run_key

    real = sandbox_module._iptables

    def no_match(*args: str, check: bool = True) -> bool:  # as a kernel without the match answers
        if match in args:
            raise SandboxError(f"iptables -m {match} failed: Couldn't load match `{match}'")
        return real(*args, check=check)

    monkeypatch.setattr(sandbox_module, "_iptables", no_match)
    client = docker_client()
    key = run_key(tmp_path)
    sandbox = Sandbox(client, key, f"openfail-{tmp_path.name[-8:]}")
    try:
        with pytest.raises(SandboxError, match=match):
            sandbox.open(reaper=False)
        left = leftovers(client, key)
    finally:
        monkeypatch.undo()
        sandbox.close()
    assert left == [], left


#: Runs in a child (the limit is the process's): a soft open-file limit of 1024 under a hard one of 8192,
#: what a service manager commonly gives, then the arena's container sandbox for 256 games of 4 seats.
RAISE = r"""
import resource, sys
from arena.cli.commands import open_sandbox
import arena.cli.commands
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 8192))
class Stop(Exception):
    pass
def stop(*a, **k):
    raise Stop
import arena.hosting.sandbox as s
s.docker_client = stop  # the limit is what is checked; no docker
from types import SimpleNamespace
config = SimpleNamespace(concurrency=int(sys.argv[1]), players=4, competition=None,
                         bots=[SimpleNamespace(in_container=True, workers=0)], name="t")
try:
    open_sandbox(config, __import__("pathlib").Path("/nonexistent"), [])
except Stop:
    print("opened", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
except Exception as e:
    print("refused", e)
"""


@pytest.mark.parametrize(("concurrency", "said"), [
    (32, "opened 5120"),  # 128 containers: 32 connections each and the arena's own 1024
    (256, "refused the arena may open 8192 files (ulimit -n, hard), 33792 needed for 1024 containers at once"),
])
def test_the_arena_holds_the_open_files_its_containers_may_take(concurrency: int, said: str) -> None:
    """Each container may hold 32 connections to the arena (the sandbox's firewall), each one of the arena's
    open files: at the common soft limit of 1024, 32 containers of one entrant (a tournament of 8 games at
    once, four seats) held every one, and the arena accepted no connection of any bot."""
    import subprocess
    import sys

    from tests.docker_helpers import ROOT

    r = subprocess.run([sys.executable, "-c", RAISE, str(concurrency)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.stdout.startswith(said), (r.stdout, r.stderr[-2000:])
