"""The validation episode: the conformance suite (:mod:`sdk.conformance`) against a built image.

Each scenario starts the image in a container with no network at all (``--network none``), read-only,
no capabilities, the submission's memory, CPU and process limits, as a uid of its own and group 10001
(one uid a validation, :data:`VALIDATION_USERS`: its containers are all the one submission's), its output kept by
docker up to the game containers' cap (:data:`LOGS`); the scripted
referee listens on a unix socket in a fresh folder mounted read-only at the same path
(``--socket-dir``; connecting to a socket needs no write access to its file system), the only thing
the container reaches, and a bot cannot write into the host's folder. Every container of a validation
carries the label ``org.allfours.validate=KEY`` and is removed afterwards, whatever happened; in
``arena serve`` it carries the run's label too (``org.allfours.run``), so that if the arena is killed,
its sandbox's reaper removes it with the game containers (the suite dies with the arena, but the
``docker run`` it started would go on as an orphan, and the container with it).

:func:`validate_image` returns a :class:`Verdict`: passed, or the failing checks with what the bot did, or
(its ``fault``) why the suite could not judge the bot: it did not run or crashed, or docker failed under
it (after failing checks docker is asked for the image: no answer, or no image, and the checks are not
the bot's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from arena.competition.book import LOG_TAIL_CHARS
from arena.hosting.sandbox import LABEL_RUN, OPEN_FILES, BotUsers, Limits
from arena.hosting.tempdirs import pid_temp_dir
from arena.hosting.tether import tether_command

#: Debian's docker CLI (the conformance suite starts each scenario's bot with it).
DOCKER = shutil.which("docker") or "/usr/bin/docker"
#: The label every validation container carries (value: the validation's key).
LABEL = "org.allfours.validate"
#: Seconds the whole suite may take before the submission is rejected.
VALIDATE_TIMEOUT_S = 900
#: Seconds from a container's launch to its Hello (a container starts slower than a process).
STARTUP_S = 30.0
#: The cap of what docker keeps of a container's output (a game's containers' own): docker's default
#: json-file log has none, and ``docker run`` streaming the output to the suite does not keep it off disk.
LOGS = Limits()
#: The uids of validations' containers (:class:`arena.hosting.sandbox.BotUsers`: one a validation, shared by
#: no other bot container, so no per-uid count of the kernel joins a submission to another bot).
VALIDATION_USERS = BotUsers()


@dataclass(frozen=True, slots=True)
class Verdict:
    """``passed``; ``failing``: the names of the failing checks; ``detail``: what the bot did in each (or
    why the suite could not run), for the competitor; ``fault``: when the suite could not judge the bot
    (it did not run, crashed, or docker failed under it: the arena's trouble, not a failing check), one
    line saying why, for the host; else ``""``."""

    passed: bool
    failing: tuple[str, ...]
    detail: str
    fault: str = ""


def container_command(image: str, key: str, socket_dir: str, cpus: float, memory_mb: int,
                      run: str = "") -> list[str]:
    """The ``docker run`` argv of one scenario's bot (see the module docstring); ``run``: the run key
    it is labelled with too (:data:`arena.hosting.sandbox.LABEL_RUN`), or ``""``."""
    labels = ["--label", f"{LABEL}={key}"] + (["--label", f"{LABEL_RUN}={run}"] if run else [])
    return [DOCKER, "run", "--rm", "--init", "--network", "none", "--read-only",
            "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=16m", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--memory", f"{memory_mb}m", "--memory-swap", f"{memory_mb}m",
            "--pids-limit", "64", "--ulimit", f"nofile={OPEN_FILES}:{OPEN_FILES}", "--cpus", f"{cpus:g}",
            "--user", VALIDATION_USERS.next(), "--ipc", "private",
            "--no-healthcheck",  # never the image's own (arena.hosting.sandbox.NO_HEALTHCHECK)
            "--log-driver", "json-file", "--log-opt", f"max-size={LOGS.log_max_size}",
            "--log-opt", f"max-file={LOGS.log_files}", *labels, "-v", f"{socket_dir}:{socket_dir}:ro",
            "-e", "HOME=/tmp", "-e", "ALLFOURS_TICKET", "-e", "ALLFOURS_REFEREE", image]


def remove_containers(key: str) -> None:
    """Remove every container of validation ``key`` (docker CLI; errors ignored)."""
    ids = subprocess.run([DOCKER, "ps", "-aq", "--filter", f"label={LABEL}={key}"], capture_output=True,
                         text=True, timeout=60).stdout.split()
    if ids:
        subprocess.run([DOCKER, "rm", "-f", *ids], capture_output=True, timeout=120)


def verdict_of(stdout: str, stderr: str, status: int | None = None) -> Verdict:
    """The verdict of the suite's ``--json`` output, or, with none (a usage error, a crash: ``status``,
    its exit status), a verdict whose ``fault`` says the suite did not run. Its ``detail`` fits in
    :data:`LOG_TAIL_CHARS`: the failing checks first (only they cut, at their end, if they alone do not
    fit), then the bot's output of as many scenarios as fit, each its last 1,500 characters at most
    (the book keeps a detail's end, so an overlong one would lose the checks)."""
    try:
        report = json.loads(stdout)
    except ValueError:
        last = (stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        how = "" if status is None else f" (exit status {status})"
        return Verdict(False, ("suite",), f"the conformance suite did not run: {stderr.strip()[-1500:]}",
                       f"the conformance suite did not run{how}: {last.strip()[:300]}")
    failing = [c for c in report.get("checks", []) if c.get("status") == "fail"]
    lines = [f"{c['check']}: expected {c['expected']}; the bot: {c['did']}" for c in failing]
    if report.get("failure"):
        lines.append(str(report["failure"])[:600])
    checks = "\n".join(lines)
    if len(checks) > LOG_TAIL_CHARS - 100:
        checks = checks[: LOG_TAIL_CHARS - 100] + " …"
    lines = [checks] if checks else []
    tails = [(str(s), str(t).strip()) for s, t in (report.get("output_tails") or {}).items() if str(t).strip()]
    room = LOG_TAIL_CHARS - sum(len(line) + 1 for line in lines)
    for k, (scenario, tail) in enumerate(tails):
        head = f"the bot's own output ({scenario}):\n"
        if room < len(head) + 200:
            lines.append(f"(the bot's output of {len(tails) - k} more scenario(s) left out)")
            break
        shown = tail[-min(1500, room - len(head) - 80):]
        lines.append(head + shown)
        room -= len(head) + len(shown) + 1
    return Verdict(bool(report.get("passed")), tuple(str(c["check"]) for c in failing), "\n".join(lines))


#: The name of a validation's socket folder in the temp folder: ``allfours-validate-<arena pid>-XXXX``
#: (:mod:`arena.hosting.tempdirs`: the next start removes those of a killed arena).
SOCKET_DIR_PREFIX = "allfours-validate-"


def validate_image(image: str, key: str, checks: Sequence[str], cpus: float = 1.0, memory_mb: int = 512,
                   players: int = 2, run: str = "") -> Verdict:
    """Run the conformance ``checks`` (empty: every per-game check) against ``image`` (see the module
    docstring); ``key`` labels its containers, and so does ``run``, the run key of ``arena serve``'s
    sandbox (its reaper removes them if the arena is killed)."""
    with pid_temp_dir(SOCKET_DIR_PREFIX) as sockets:
        argv = [sys.executable, "-m", "sdk.conformance", "--json", "--players", str(players),
                "--startup-limit", str(STARTUP_S), "--memory-limit", str(memory_mb), "--socket-dir", sockets]
        for check in checks:
            argv += ["--only", check]
        argv += ["--", *container_command(image, key, sockets, cpus, memory_mb, run)]
        argv = tether_command(argv)  # the suite dies with the arena (not preexec_fn: arena.hosting.tether)
        os.chmod(sockets, 0o755)
        remove_containers(key)  # left by a validation of this submission that a killed arena cut short
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=VALIDATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Verdict(False, ("suite",), f"the conformance suite took over {VALIDATE_TIMEOUT_S} s")
        finally:
            remove_containers(key)
    verdict = verdict_of(r.stdout, r.stderr, r.returncode)
    if verdict.passed or verdict.fault:
        return verdict
    trouble = docker_trouble(image)
    return Verdict(False, verdict.failing, verdict.detail, trouble) if trouble else verdict


def docker_trouble(image: str) -> str:
    """Why the failing checks of a validation of ``image`` may be docker's doing, not the bot's: docker
    does not answer, or the image is gone (one line); ``""`` when docker shows the image."""
    try:
        r = subprocess.run([DOCKER, "image", "inspect", "--format", "{{.Id}}", image], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"docker failed during the validation: {type(e).__name__}: {e}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        return f"docker failed during the validation (docker image inspect {image}: {last.strip()[:300]})"
    return ""
