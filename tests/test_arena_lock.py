"""The output folder's lock (arena/tournament/lock.py): one arena process per folder, whatever is done
to the files in it, taken before anything else starts.

The lock is a ``flock`` on the folder itself; ``arena.tournament.lock`` only describes the holder. Real
``arena run`` processes: deleting that file mid-run does not let a second run in; a run on a new folder
locks it before it reaches its referees (a second one is refused without starting anything: no embedded
referee), and a run stopped before it wrote anything leaves no folder behind.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.tournament.lock import LOCK_NAME, OutputLocked, held, lock_output
from tests.configs import INSTANT, bots_toml
from tests.conftest import stored_games

ROOT = Path(__file__).resolve().parent.parent

CONFIG = f"""
[tournament]
name = "locked"
players = 4
games_per_pairing = 6
concurrency = 2
master_seed = "{"4c" * 32}"
output = "runs/out"
[tournament.time_control]
join_ms = 20000
""" + bots_toml("a", "b", "c", "d", command=INSTANT, cwd='"bots"', sandbox='"none"')


def config_file(tmp_path: Path) -> Path:
    (tmp_path / "bots").mkdir(exist_ok=True)
    (tmp_path / "runs").mkdir(exist_ok=True)
    path = tmp_path / "locked.toml"
    path.write_text(CONFIG)
    return path


def arena_run(config: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "arena.cli", "run", str(config), "--output", str(out), "--no-progress",
            "--bootstrap", "0", *extra]


def stored(out: Path) -> int:
    return stored_games(out / "arena.sqlite")


def wait_until(cond, proc: subprocess.Popen[str], timeout: float = 120) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``cond`` until true, ``proc`` ended or ``timeout`` seconds passed; returns ``cond()``."""
    deadline = time.monotonic() + timeout
    while not cond() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(cond())


def test_the_lock_is_on_the_folder_and_the_file_only_describes_it(tmp_path: Path) -> None:
    """Held: the description names this process; deleting it leaves the folder locked (a second taker
    is refused, naming this pid from the kernel's lock table). Let go: the description is gone; a
    folder the lock made (with its parents) and left empty is removed, one already there is kept."""
    new = tmp_path / "made" / "out"
    with lock_output(new) as path:
        assert path == new / LOCK_NAME and path.read_text().startswith(f"pid {os.getpid()} on host ")
        assert oct(path.stat().st_mode & 0o777) == oct(0o600)
        path.unlink()
        assert held(new)
        taker = ("from pathlib import Path\nfrom arena.tournament.lock import lock_output\n"
                 f"with lock_output(Path({str(new)!r})): pass\n")
        refused = subprocess.run([sys.executable, "-c", taker], capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and "OutputLocked" in refused.stderr, refused.stderr
        assert f"in use by another arena (pid {os.getpid()}); " in refused.stderr, refused.stderr
    assert not held(new) and not (tmp_path / "made").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    with lock_output(kept):
        (kept / "arena.sqlite").write_text("")
        with pytest.raises(OutputLocked), lock_output(kept):  # a second open of the folder in this process, too
            pass
    assert sorted(p.name for p in kept.iterdir()) == ["arena.sqlite"]


def test_deleting_the_lock_file_does_not_let_a_second_run_in(tmp_path: Path) -> None:
    """The reviewer's repro: `arena run` going, its lock file deleted, a second `arena run` on the folder.
    It took a new lock and played the remaining games too (stored rows then pointed at record files of
    other matches); now it is refused with one line naming the first run's pid, and the first plays
    every game once. The first clears its description when it ends; a later run then goes ahead."""
    cfg = config_file(tmp_path)
    out = tmp_path / "runs" / "shared"
    first = subprocess.Popen(arena_run(cfg, out, "--simulate", "0.3"), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: stored(out) >= 1, first), "the first run stored no game"
        (out / LOCK_NAME).unlink()
        second = subprocess.run(arena_run(cfg, out, "--simulate", "0.03"), cwd=ROOT, capture_output=True,
                                text=True, timeout=60)
        assert first.poll() is None, "the first run ended before the second was refused"
    finally:
        first_err = first.communicate(timeout=120)[1]
    assert first.returncode == 0, first_err
    assert second.returncode == 1, second.stdout + second.stderr
    lines = (second.stdout + second.stderr).strip().splitlines()
    assert lines == [f"error: output folder {out} is in use by another arena (pid {first.pid}); wait for it to "
                     "finish or use another --output"], lines
    rows = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["game_id"] for r in rows}) == 36
    assert not (out / LOCK_NAME).exists()
    again = subprocess.run(arena_run(cfg, out, "--simulate", "0.03"), cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and "36 already played" in again.stdout, again.stdout + again.stderr


def test_a_new_folder_is_locked_before_the_referees_are_reached(tmp_path: Path) -> None:
    """Two `arena run` on one new folder: the first is held while it reaches its referee (a referee name
    whose address answers nothing; the process is stopped there with SIGSTOP). It reached the referees
    before it took the lock, so a second run (embedded referee, --verbose) started its referee (and
    sandbox: with container bots it removed the first's containers) before the lock refused it. Now the
    first holds the lock by then: the second's whole output is the refusal (no ``referee_started``
    line). The first, stopped (SIGTERM) while it waits for its referee, ends at once and leaves no folder
    behind (an unreachable referee does not either: test_arena_referees.py)."""
    cfg = config_file(tmp_path)
    out = tmp_path / "runs" / "new" / "out"
    with socket.socket() as silent:  # bound, never listening: a connection is refused
        silent.bind(("127.0.0.1", 0))
        referee = f"dns:localhost:{silent.getsockname()[1]}"  # a name: the arena waits 30 s for its replicas
        env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": "t" * 32}
        first = subprocess.Popen(arena_run(cfg, out, "--referee", referee), cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        try:
            locked = wait_until(lambda: f"pid {first.pid} " in _text(out / LOCK_NAME), first)
            first.send_signal(signal.SIGSTOP)
            assert locked, "the first run did not lock the new folder before reaching its referee"
            assert not (out / "arena.sqlite").exists()
            second = subprocess.run(arena_run(cfg, out, "--verbose"), cwd=ROOT, capture_output=True, text=True,
                                    timeout=120)
        finally:
            first.send_signal(signal.SIGTERM)  # stopped while it waits for its referee: it ends at once
            first.send_signal(signal.SIGCONT)
            first_out, first_err = first.communicate(timeout=120)
    assert second.returncode == 1, second.stdout + second.stderr
    lines = (second.stdout + second.stderr).strip().splitlines()
    assert len(lines) == 1, lines  # nothing started: no referee_started line
    refusal = f"error: output folder {out} is in use by another arena (pid {first.pid} on host "
    assert lines[0].startswith(refusal), lines
    assert first.returncode == 143, first_out + first_err
    assert first_err.strip().splitlines()[-1] == ("interrupted (SIGTERM): stored games are kept; run the same "
                                                  "command to resume"), first_err
    assert not (tmp_path / "runs" / "new").exists()  # made for a tournament that never began: removed


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@pytest.mark.parametrize("verb", ["run", "serve"])
def test_the_closers_run_before_the_lock_is_let_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   verb: str) -> None:
    """What the arena opened for a folder (workers, lobby, referees, sandboxes, the store) is closed while
    it still holds the folder's lock: a second arena that takes the folder the moment the first lets go
    never meets the first's workers or sandbox (a container sandbox removes the leftovers labelled with
    the folder's run). `arena serve` closed them after the lock was let go. A probe put among the
    command's closers (its tournament replaced by one that returns at once) tries the lock: refused."""
    from rich.console import Console

    from arena.cli import commands
    from arena.cli.parser import parser

    cfg, out = config_file(tmp_path), tmp_path / "runs" / "out"
    seen: list[str] = []

    def probe() -> None:
        try:
            with lock_output(out):
                seen.append("free")
        except OutputLocked:
            seen.append("held")

    if verb == "serve":
        def serve_league(args, config, output, console, closers, error, web_sock=None) -> int:  # type: ignore[no-untyped-def]
            closers.append(probe)
            return 0
        monkeypatch.setattr(commands, "_serve_league", serve_league)
    else:
        real_maker = commands._runner_maker

        def runner_maker(config, args, output, console, closers):  # type: ignore[no-untyped-def]
            closers.append(probe)
            return real_maker(config, args, output, console, closers)
        monkeypatch.setattr(commands, "_runner_maker", runner_maker)
        monkeypatch.setattr(commands, "_open_and_play", lambda *a: 0)
    args = parser().parse_args([verb, str(cfg), "--output", str(out)])
    quiet = Console(file=io.StringIO())
    status = (commands.serve_command(args, quiet, quiet) if verb == "serve"
              else commands.run_command(args, quiet, quiet))
    assert status == 0
    assert seen == ["held"]


def changes_holder(folder: Path) -> subprocess.Popen[str]:
    """A process holding ``folder``'s competition.lock (:func:`arena.tournament.lock.lock_changes`): it prints
    ``held`` once it has it and lets go at a line on its stdin."""
    return subprocess.Popen([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                             "from arena.tournament.lock import lock_changes\n"
                             "with lock_changes(Path(sys.argv[1])):\n    print('held', flush=True)\n"
                             "    sys.stdin.readline()\n", str(folder)], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_a_change_waits_its_turn_and_one_that_never_gets_it_names_the_holder(tmp_path: Path) -> None:
    """The host's changes of a competition (lock_changes: docs/competition.md, "Disqualifying a competitor") take
    turns on OUTPUT/competition.lock: one held by another process refuses the next after its wait, in one line
    naming the holder's pid; once let go the next has it at once. The file stays (0600) for the next turn."""
    from arena.tournament.lock import CHANGES_LOCK, lock_changes

    folder = tmp_path / "out"
    holder = changes_holder(folder)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(OutputLocked) as e, lock_changes(folder, wait_s=0.3):
            pass
        said = str(e.value)
        assert f"in use by another host command (pid {holder.pid})" in said and "\n" not in said, said
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with lock_changes(folder, wait_s=30):
        assert (folder / CHANGES_LOCK).stat().st_mode & 0o777 == 0o600


def test_a_change_waiting_on_a_lock_file_removed_meanwhile_takes_its_turn_on_the_new_one(tmp_path: Path) -> None:
    """A change waits on the file it opened; the file is removed (a host tidying up) while another process holds
    it. Given the turn on the removed file, lock_changes looked the path up to check it still locked the file every
    command locks, and the missing path raised FileNotFoundError (the command ended `error: FileNotFoundError: …`,
    nothing done) instead of opening the file again, as it does for a file replaced meanwhile."""
    import threading

    from arena.tournament.lock import CHANGES_LOCK, lock_changes

    folder = tmp_path / "out"
    holder = changes_holder(folder)
    ends: list[object] = []

    def change() -> None:
        try:
            with lock_changes(folder, wait_s=120):
                ends.append((folder / CHANGES_LOCK).is_file())
        except BaseException as e:  # what the test reports
            ends.append(e)

    waiter = threading.Thread(target=change)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "held\n"
        waiter.start()
        lock = str(folder / CHANGES_LOCK)
        while lock not in _open_files():  # the waiter opened the file
            assert waiter.is_alive(), ends
            time.sleep(0.01)
        os.unlink(lock)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
        waiter.join(timeout=120)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert ends == [True], ends  # the first version: [FileNotFoundError(...)]


def _open_files() -> list[str]:
    """What this process's open descriptors name (those closed meanwhile left out)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return out
