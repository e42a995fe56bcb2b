"""Run one scenario: start the scripted referee on loopback, launch the bot, watch it, clean up.

The bot is launched the way the arena launches it (docs/tournament-config.md, What the arena gives
each bot process): its argv with the placeholders ``{python}``, ``{ticket}``, ``{referee}``,
``{seat}`` and ``{config_dir}`` (the current directory) replaced, and the environment variables
``ALLFOURS_TICKET`` and ``ALLFOURS_REFEREE`` set. It runs in its own session (process group), with
stdin closed, stdout and stderr in a private temporary file (0600, removed afterwards; the last
2 KiB are kept for the report). While it runs, the peak resident memory of its process group
(the sum of each process's ``VmHWM`` in /proc) is sampled every 100 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.config import ENV_REFEREE, ENV_TICKET, expand_placeholders
from referee import wire
from sdk.conformance.lobby import ScriptedLobby
from sdk.conformance.referee import RunLog, ScriptedReferee
from sdk.conformance.scenarios import Scenario
from sdk.worker import LOBBY_ENV, NAME_ENV, TOKEN_ENV

#: Bytes of the bot's output kept for the report.
TAIL_BYTES = 2048


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


async def _watch_memory(pgid: int, log: RunLog) -> None:
    while True:
        log.peak_rss_mib = max(log.peak_rss_mib, _group_peak_rss_mib(pgid))
        await asyncio.sleep(0.1)


def bot_argv(command: Sequence[str], ticket: str, referee: str, seat: int) -> list[str]:
    """``command`` with the arena's placeholders replaced (``arena.config.expand_placeholders``)."""
    values = {"python": sys.executable, "config_dir": os.getcwd(), "ticket": ticket, "referee": referee,
              "seat": str(seat)}
    return [expand_placeholders(arg, values) for arg in command]


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _referee(scenario: Scenario, clock: Callable[[], float]) -> tuple[ScriptedReferee, grpc.aio.Server, str]:
    """A scripted referee for ``scenario`` with a fresh ticket, serving on 127.0.0.1 (any free port)."""
    ref = ScriptedReferee(scenario, secrets.token_urlsafe(18), clock)
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024)])
    pb_grpc.add_RefereeServiceServicer_to_server(ref, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return ref, server, f"127.0.0.1:{port}"


async def run_scenario(scenario: Scenario, command: Sequence[str], limits: Limits) -> RunLog:
    """Play ``scenario`` with the bot started by ``command``; return what happened.

    :raises ValueError: for a command with an unknown placeholder.
    :raises OSError: if the command cannot be started (not found, not executable).
    """
    t0 = time.monotonic()
    ref, server, address = await _referee(scenario, lambda: time.monotonic() - t0)
    ticket = ref.ticket
    argv = bot_argv(command, ticket, address, scenario.bot_seat)
    env = {**os.environ, ENV_TICKET: ticket, ENV_REFEREE: address}
    with tempfile.TemporaryFile(prefix="conformance-") as out:  # created 0600 and unlinked at once
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=out, stderr=out, start_new_session=True)
        except OSError:
            await server.stop(None)
            raise
        log = await _supervise(ref, proc, limits, t0)
        await server.stop(0.2)
        log.stderr_tail = _tail(out)
    log.wall_s = time.monotonic() - t0
    return log


def _tail(out: Any) -> str:
    out.seek(0, os.SEEK_END)
    out.seek(max(0, out.tell() - TAIL_BYTES))
    return str(out.read().decode("utf-8", "replace"))


async def _play_beside(ref: ScriptedReferee, proc: asyncio.subprocess.Process, limits: Limits,
                       join_s: float) -> RunLog:
    """Run the match beside the bot process; stop the match if the process ends first."""
    match = asyncio.ensure_future(ref.play(join_s))
    exited = asyncio.ensure_future(proc.wait())
    log = ref.log
    try:
        done, _ = await asyncio.wait({match, exited}, timeout=limits.run_s, return_when=asyncio.FIRST_COMPLETED)
        if match not in done:
            if exited in done:  # the bot ended before the match: give its last messages a moment
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(match), 0.5)
            if not match.done():
                match.cancel()
                log.failure = log.failure or (f"the bot's process ended (status {proc.returncode}) before the match"
                                              if exited.done() else f"the run took longer than {limits.run_s:.0f} s")
    finally:
        if not exited.done():
            exited.cancel()
    return log


async def _supervise(ref: ScriptedReferee, proc: asyncio.subprocess.Process, limits: Limits, t0: float) -> RunLog:
    """One scenario, one bot process: the match, then its exit; the process group is killed at the end."""
    memory = asyncio.ensure_future(_watch_memory(proc.pid, ref.log))
    exited = asyncio.ensure_future(proc.wait())
    log = ref.log
    try:
        await _play_beside(ref, proc, limits, limits.startup_s + 5)
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
            _kill_group(proc)
            await proc.wait()
            log.notes.append("killed: still running when the run ended")
        else:
            log.exit_code = proc.returncode
            _kill_group(proc)  # any child it left behind
    return log


async def run_lobby(scenarios: Sequence[Scenario], command: Sequence[str], limits: Limits) -> dict[str, RunLog]:
    """Lobby mode: launch the bot once as a worker of a scripted lobby and play every scenario as one
    Assignment after another (sdk/conformance/lobby.py). Every returned log carries the same
    :class:`~sdk.conformance.lobby.LobbyLog` in ``lobby``; the start-up time is the Register's, the
    peak memory the worker's over the whole run.

    :raises ValueError: for a command with an unknown placeholder.
    :raises OSError: if the command cannot be started.
    """
    t0 = time.monotonic()
    clock = lambda: time.monotonic() - t0  # noqa: E731
    lobby = ScriptedLobby(secrets.token_urlsafe(18), "conformance-bot", clock)
    server = grpc.aio.server()
    lpb_grpc.add_LobbyServiceServicer_to_server(lobby, server)
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    env = {k: v for k, v in os.environ.items() if k not in (ENV_TICKET, ENV_REFEREE)}
    env.update({LOBBY_ENV: address, TOKEN_ENV: lobby.log.token, NAME_ENV: lobby.log.bot_name})
    logs: dict[str, RunLog] = {}
    peak = RunLog(scenario="lobby", ticket="")
    with tempfile.TemporaryFile(prefix="conformance-") as out:
        try:
            proc = await asyncio.create_subprocess_exec(*bot_argv(command, "", "", 0), env=env,
                                                        stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
                                                        start_new_session=True)
        except OSError:
            await server.stop(None)
            raise
        memory = asyncio.ensure_future(_watch_memory(proc.pid, peak))
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lobby.registered.wait(), limits.startup_s + 5)
            for sc in scenarios:
                logs[sc.name] = await _assignment(lobby, sc, proc, limits, clock)
        finally:
            memory.cancel()
            lobby.close()
            _kill_group(proc)
            await proc.wait()
            await server.stop(0.2)
        tail = _tail(out)
    startup = lobby.log.registers[0].at if lobby.log.registers else None
    for log in logs.values():
        log.lobby, log.startup_s, log.peak_rss_mib, log.stderr_tail = lobby.log, startup, peak.peak_rss_mib, tail
    return logs


async def _assignment(lobby: ScriptedLobby, sc: Scenario, proc: asyncio.subprocess.Process, limits: Limits,
                      clock: Callable[[], float]) -> RunLog:
    """One scenario in lobby mode: its referee, the Assignment, the match, then the worker's Ready."""
    ref, server, address = await _referee(sc, clock)
    try:
        if proc.returncode is not None or not lobby.registered.is_set():
            ref.log.failure = (f"the worker's process has ended (status {proc.returncode})" if proc.returncode
                               is not None else "the worker never registered at the lobby")
            return ref.log
        lobby.assign(lpb.Assignment(match_id=ref.match_id, seat=sc.bot_seat, ticket=ref.ticket, referee=address,
                                    rules=wire.rules_to_pb(sc.rules), time_control=ref.time_control()))
        started = clock()
        log = await _play_beside(ref, proc, limits, 10.0)
        if log.match_end_sent:
            await lobby.wait_ready(ref.match_id, log.match_end_at or 0.0, limits.exit_s)
        ref.drain()
        log.wall_s = clock() - started
        return log
    finally:
        await server.stop(0.2)
