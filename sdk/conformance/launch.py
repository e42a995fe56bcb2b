"""Run one scenario: start the scripted referee on loopback, launch the bot, watch it, clean up.

The bot is launched the way the arena launches it (docs/tournament-config.md, What the arena gives
each bot process): its argv with the placeholders ``{python}``, ``{ticket}``, ``{referee}``,
``{seat}`` and ``{config_dir}`` (the current directory) replaced, and the environment variables
``ALLFOURS_TICKET`` and ``ALLFOURS_REFEREE`` set. It runs in its own session (process group), with
stdin closed, stdout and stderr in a pipe that the suite reads as it comes, keeping only the last
2 KiB (for the report): never a file, which a bot writing without end would grow until the disk is
full. While it runs, the peak resident memory of its process group (the sum of each process's
``VmHWM`` in /proc) is sampled every 100 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from allfours.v1 import referee_pb2 as pb
from arena.config import ENV_REFEREE, ENV_TICKET, expand_placeholders
from referee.streams import add_stream_method
from sdk.conformance.logs import RunLog
from sdk.conformance.referee import ScriptedReferee
from sdk.conformance.scenarios import Scenario

#: Bytes of the bot's output kept for the report.
TAIL_BYTES = 2048
#: Most bytes of the bot's output read once its run is over (what its pipe holds then, at most).
DRAIN_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """What a bot is allowed (the ``limits`` check; defaults stated in docs/bot-authors.md).

    - ``startup_s``: from launch to its Hello (seconds).
    - ``memory_mib``: peak resident memory of its processes (MiB).
    - ``exit_s``: from MatchEnd to the process's exit (seconds).
    - ``run_s``: a whole scenario at most (seconds), then the bot is killed.
    """

    startup_s: float = 10.0
    memory_mib: float = 512.0
    exit_s: float = 5.0
    run_s: float = 120.0


def _group_peak_rss_mib(pgid: int) -> float:
    """The sum of ``VmHWM`` (peak resident set) over the live processes of process group ``pgid``."""
    total_kib = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) != pgid:  # field 5 of /proc/PID/stat: the process group
                continue
            for line in Path(entry.path, "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total_kib += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total_kib / 1024


def sample_memory(pgid: int, log: RunLog) -> None:
    """Raise ``log.peak_rss_mib`` to the peak of process group ``pgid`` now (while it is alive: an exited
    process's peak is gone with it)."""
    log.peak_rss_mib = max(log.peak_rss_mib, _group_peak_rss_mib(pgid))


async def watch_memory(pgid: int, log: RunLog) -> None:
    """Keep ``log.peak_rss_mib`` at the peak of process group ``pgid``, sampled every 100 ms (until
    cancelled). A bot that allocates before its Hello and plays a short match may exit between two
    samples on a busy machine, so the callers also sample at fixed moments (the Hello; before the kill)."""
    while True:
        sample_memory(pgid, log)
        await asyncio.sleep(0.1)


def bot_argv(command: Sequence[str], ticket: str, referee: str, seat: int) -> list[str]:
    """``command`` with the arena's placeholders replaced (``arena.config.expand_placeholders``)."""
    values = {"python": sys.executable, "config_dir": os.getcwd(), "ticket": ticket, "referee": referee,
              "seat": str(seat)}
    return [expand_placeholders(arg, values) for arg in command]


def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the bot's process group (its session: the bot and anything it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def start_referee(scenario: Scenario, clock: Callable[[], float],
                        socket_dir: str | None = None) -> tuple[ScriptedReferee, grpc.aio.Server, str]:
    """A scripted referee for ``scenario`` with a fresh ticket, serving on 127.0.0.1 (any free port), or
    with a ``socket_dir`` on the unix socket ``unix:SOCKET_DIR/referee-SCENARIO.sock`` (mode 0666: a bot
    in a container without a network, the folder mounted at the same path, reaches it as any user)."""
    ref = ScriptedReferee(scenario, secrets.token_urlsafe(18), clock)
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024)])
    # Bytes that are not a PlayRequest reach the scripted referee as Undecodable (as they reach the real
    # one), so it rejects them as the real referee does instead of losing the stream.
    add_stream_method(server, "allfours.v1.RefereeService", "Play", ref.Play, pb.PlayRequest, pb.PlayResponse)
    if socket_dir is not None:
        path = os.path.join(socket_dir, f"referee-{scenario.name}.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        server.add_insecure_port(f"unix:{path}")
        await server.start()
        os.chmod(path, 0o666)
        return ref, server, f"unix:{path}"
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return ref, server, f"127.0.0.1:{port}"


async def run_scenario(scenario: Scenario, command: Sequence[str], limits: Limits,
                       socket_dir: str | None = None) -> RunLog:
    """Play ``scenario`` with the bot started by ``command``; return what happened (``socket_dir``: the
    referee listens on a unix socket there, :func:`start_referee`).

    :raises ValueError: for a command with an unknown placeholder.
    :raises OSError: if the command cannot be started (not found, not executable).
    """
    t0 = time.monotonic()
    ref, server, address = await start_referee(scenario, lambda: time.monotonic() - t0, socket_dir)
    ticket = ref.ticket
    argv = bot_argv(command, ticket, address, scenario.bot_seat)
    env = {**os.environ, ENV_TICKET: ticket, ENV_REFEREE: address}
    with OutputTail() as out:
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=out.fd, stderr=out.fd, start_new_session=True)
        except OSError:
            await server.stop(None)
            raise
        out.started()
        log = await _supervise(ref, proc, limits, t0)
        await server.stop(0.2)
        log.stderr_tail = out.text()
    log.wall_s = time.monotonic() - t0
    return log


class OutputTail:
    """The bot's output (stdout and stderr): a pipe whose write end :attr:`fd` the bot gets and whose read
    end the running event loop reads as it comes, keeping only its last :data:`TAIL_BYTES` (the suite
    kept all of it in a temporary file and read the end: a bot writing without end filled the disk). Use
    it as a context manager inside the event loop; call :meth:`started` once the bot has the write end."""

    def __init__(self) -> None:
        self._read_fd, self.fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        self._tail = bytearray()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._read_fd, self._read)

    def __enter__(self) -> OutputTail:
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.remove_reader(self._read_fd)
        os.close(self._read_fd)
        self.started()

    def started(self) -> None:
        """Close the suite's copy of the write end (the bot has its own): the bot's exit ends the output."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _read(self) -> bool:
        """Read what the pipe holds now (at most 64 KiB) into the tail; whether more may come (not at its end)."""
        try:
            data = os.read(self._read_fd, 65536)
        except BlockingIOError:
            return True
        if not data:
            self._loop.remove_reader(self._read_fd)
            return False
        self._tail += data
        del self._tail[:-TAIL_BYTES]
        return True

    def text(self) -> str:
        """The last :data:`TAIL_BYTES` of the output, decoded (bad bytes replaced), once what the pipe holds
        now is read (at most :data:`DRAIN_BYTES` more: a process the bot left behind may write on)."""
        for _ in range(DRAIN_BYTES // 65536):
            if not self._read() or not select.select([self._read_fd], [], [], 0)[0]:
                break
        return bytes(self._tail).decode("utf-8", "replace")


async def play_beside(ref: ScriptedReferee, proc: asyncio.subprocess.Process, limits: Limits,
                      join_s: float, since: str = "the launch") -> RunLog:
    """Run the match beside the bot process (a Hello within ``join_s`` s of ``since``); stop the match if
    the process ends first."""
    match = asyncio.ensure_future(ref.play(join_s, since))
    exited = asyncio.ensure_future(proc.wait())
    log = ref.log
    try:
        done, _ = await asyncio.wait({match, exited}, timeout=limits.run_s, return_when=asyncio.FIRST_COMPLETED)
        if match not in done:
            if exited in done:  # the bot ended before the match did: give its last messages a moment
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(match), 0.5)
            if not match.done():
                match.cancel()
                when = "during the match" if log.hellos else "before it joined the match"
                log.failure = log.failure or (f"the bot's process ended (status {proc.returncode}) {when}"
                                              if exited.done() else f"the run took longer than {limits.run_s:.0f} s")
    finally:
        if not exited.done():
            exited.cancel()
    return log


async def _supervise(ref: ScriptedReferee, proc: asyncio.subprocess.Process, limits: Limits, t0: float) -> RunLog:
    """One scenario, one bot process: the match, then its exit; the process group is killed at the end."""
    memory = asyncio.ensure_future(watch_memory(proc.pid, ref.log))
    ref.on_hello = functools.partial(sample_memory, proc.pid, ref.log)  # the bot is alive at its Hello
    exited = asyncio.ensure_future(proc.wait())
    log = ref.log
    try:
        await play_beside(ref, proc, limits, limits.startup_s + 5)
        if log.hellos:
            log.startup_s = log.hellos[0].at
        if log.match_end_sent:
            try:
                await asyncio.wait_for(asyncio.shield(exited), limits.exit_s)
                log.exit_after_end_s = (time.monotonic() - t0) - (log.match_end_at or 0.0)
            except TimeoutError:
                pass
        ref.drain()
    finally:
        memory.cancel()
        if proc.returncode is None:
            kill_group(proc)
            await proc.wait()
            log.notes.append("killed: still running when the run ended")
        else:
            log.exit_code = proc.returncode
            kill_group(proc)  # any child it left behind
    return log
