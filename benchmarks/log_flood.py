"""What a bot flooding its output costs the host: ``python benchmarks/log_flood.py [--seconds 5] [--containers]``.

**Process bots** (the default sandbox): the arena reads a bot's output pipe into its capped log
(:class:`arena.hosting.procs.BotProcess`); past the cap it drops the rest at most
:data:`arena.hosting.procs.DRAIN_BYTES_PER_S` a second, so a bot writing faster waits in its writes. The
baseline of the same run is that drain unthrottled (the constant raised to 1 TB/s: the arena before, which
read all a bot wrote). One row each, a JSON object:

- ``arena_cpu_s``: CPU seconds of this process (the arena's pump) over the run, ``arena_share``: that over
  the run's seconds (1.0: a whole core), ``discarded_mb``: output dropped, ``ratio``: ``arena_cpu_s`` over
  the throttled row's.

**Containers** (``--containers``, a real dockerd): a container's output goes through docker's logging
(containerd's shim reads the container's pipe, dockerd copies it to the log driver) on the host's CPU, outside
the container's CPU quota. One container (1 CPU, 256 MiB) floods short lines under each log setting, and a
quiet one (``sleep``) is the baseline: ``host_cpu_s`` (dockerd, containerd and the shims), ``host_share``,
``lines_kept`` (``docker logs``) and ``ratio`` over the quiet one's. Settings: ``json-file`` as the sandbox
sets it (blocking), ``json-file`` non-blocking with a 1 MiB buffer, ``local``, and ``none``. Docker has no
setting that bounds this cost (``none`` still copies the pipe); the arena does not bound it yet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: The flood: short lines, as fast as one process writes them.
FLOOD = "import sys\nline = b'x\\n' * 4096\nwhile True:\n    sys.stdout.buffer.write(line)\n"
#: Log settings measured: (name, docker LogConfig type, its config).
SETTINGS: list[tuple[str, str, dict[str, str]]] = [
    ("json-file", "json-file", {"max-size": "1m", "max-file": "2"}),
    ("json-file non-blocking", "json-file", {"max-size": "1m", "max-file": "2", "mode": "non-blocking",
                                             "max-buffer-size": "1m"}),
    ("local", "local", {"max-size": "1m", "max-file": "2"}),
    ("none", "none", {}),
]
_HOST_PROCESSES = ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2")


def host_cpu_s() -> float:
    """CPU seconds (user + system) of every dockerd, containerd and shim process now."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        if name in _HOST_PROCESSES:
            fields = text[text.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def container_cpu_s(container_id: str) -> float:
    """The container's own CPU seconds (cgroup v2 ``cpu.stat`` or v1 ``cpuacct.usage``; 0.0 if unreadable)."""
    for path in (f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat",
                 f"/sys/fs/cgroup/docker/{container_id}/cpu.stat"):
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except OSError:
            continue
    try:
        return int(Path(f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage").read_text()) / 1e9
    except OSError:
        return 0.0


def measure(client: Any, image: str, kind: str, config: dict[str, str], command: list[str],
            seconds: float) -> dict[str, Any]:
    """Run ``command`` in a container with log driver ``kind`` for ``seconds``; what it cost (see the docstring)."""
    from docker.types import LogConfig

    from arena.hosting.sandbox import BotUsers, Limits

    api, limits = client.api, Limits()
    host_config = api.create_host_config(nano_cpus=int(limits.cpus * 1e9), mem_limit=f"{limits.memory_mb}m",
                                         memswap_limit=f"{limits.memory_mb}m", read_only=True, cap_drop=["ALL"],
                                         network_mode="none", log_config=LogConfig(type=kind, config=config))
    created = api.create_container(image, command=command, user=BotUsers().next(), host_config=host_config)
    cid = created["Id"]
    try:
        before = host_cpu_s()
        api.start(cid)
        time.sleep(seconds)
        bot = container_cpu_s(cid)
        api.kill(cid)
        api.wait(cid, timeout=30)
        host = host_cpu_s() - before
        kept = 0
        if kind != "none":
            kept = api.logs(cid, stdout=True, stderr=True).count(b"\n")
    finally:
        api.remove_container(cid, force=True)
    return {"host_cpu_s": round(host, 2), "host_share": round(host / seconds, 2), "bot_cpu_s": round(bot, 2),
            "lines_kept": kept}


def flood_process(seconds: float, work: Path) -> dict[str, Any]:
    """One process bot flooding its output for ``seconds``: the arena's CPU and what it dropped."""
    import resource

    from arena.hosting.procs import BotProcess

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    before = cpu()
    bot = BotProcess.start([sys.executable, "-c", FLOOD], cwd=str(work), env=dict(os.environ),
                           log_path=work / "seat.log", log_limit=1 << 20)
    time.sleep(seconds)
    used = cpu() - before
    discarded = bot.pump.discarded
    bot.stop()
    return {"arena_cpu_s": round(used, 2), "arena_share": round(used / seconds, 2), "discarded_mb": discarded >> 20}


def process_rows(seconds: float) -> None:
    """Print the process rows: the drain as the arena has it, then unthrottled (the baseline)."""
    import tempfile

    from arena.hosting import procs

    with tempfile.TemporaryDirectory() as work:
        throttled = flood_process(seconds, Path(work))
        print(json.dumps({"setting": f"process, drained at {procs.DRAIN_BYTES_PER_S >> 20} MiB/s", **throttled,
                          "ratio": 1.0}), flush=True)
        kept = procs.DRAIN_BYTES_PER_S
        procs.DRAIN_BYTES_PER_S = 1 << 40
        try:
            free = flood_process(seconds, Path(work))
        finally:
            procs.DRAIN_BYTES_PER_S = kept
        free["ratio"] = round(free["arena_cpu_s"] / max(throttled["arena_cpu_s"], 0.01), 1)
        print(json.dumps({"setting": "process, drained as fast as written (before)", **free}), flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--containers", action="store_true", help="also the container rows (needs dockerd)")
    args = p.parse_args(argv)
    process_rows(args.seconds)
    if not args.containers:
        return
    import docker
    from tests.docker_helpers import base_image

    client = docker.from_env(timeout=60)
    image = base_image("python")
    quiet = measure(client, image, "json-file", SETTINGS[0][2], ["sleep", "600"], args.seconds)
    print(json.dumps({"setting": "quiet (sleep, json-file)", **quiet}), flush=True)
    for name, kind, config in SETTINGS:
        row = measure(client, image, kind, config, ["python3", "-c", FLOOD], args.seconds)
        row["ratio"] = round(row["host_cpu_s"] / max(quiet["host_cpu_s"], 0.01), 1)
        print(json.dumps({"setting": name, **row}), flush=True)


if __name__ == "__main__":
    main()
