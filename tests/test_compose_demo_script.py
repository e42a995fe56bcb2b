"""docker/compose-demo.sh's Ctrl-C handling at each of its steps, with stand-in `docker-compose` and
`docker` commands (no daemon, so the moment of the interrupt is chosen, not raced as with the real
stack in test_docker_compose.py): wherever the interrupt lands, the script exits 130, takes the stack
down last, and never goes on to follow the arena. The stand-in docker-compose catches SIGINT and
ends normally, as the real (Python) one does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import default_signals

ROOT = Path(__file__).resolve().parent.parent

FAKE_COMPOSE = """#!{python}
import os, pathlib, sys, time
log = pathlib.Path(os.environ["FAKE_LOG"])
with log.open("a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
pathlib.Path(os.environ["FAKE_LOG"] + "." + sys.argv[1]).touch()  # "this step is under way"
with open(os.environ["FAKE_LOG"] + ".results", "a") as f:  # compose.yaml's bind-mount source, as compose sees it
    f.write(os.environ.get("ALLFOURS_RESULTS", "") + "\\n")
if sys.argv[1] == "up":  # the secrets' folder and the token variables, as compose sees them
    import json
    folder = pathlib.Path(os.environ.get("ALLFOURS_SECRETS", "/nonexistent"))
    listed = folder.iterdir() if folder.is_dir() else []
    files = {{p.name: [oct(p.stat().st_mode & 0o777), p.read_text()] for p in listed}}
    seen = {{"folder": str(folder), "mode": oct(folder.stat().st_mode & 0o777) if folder.is_dir() else None,
            "files": files, "token_vars": sorted(k for k in os.environ if "TOKEN" in k)}}
    pathlib.Path(os.environ["FAKE_LOG"] + ".secrets").write_text(json.dumps(seen))
if sys.argv[1] == "build" and os.environ.get("FAKE_BUILT_ID"):  # the build gives the tag to this image
    pathlib.Path(os.environ["FAKE_LOG"] + ".image").write_text(os.environ["FAKE_BUILT_ID"] + "\\n")
if sys.argv[1] == os.environ["FAKE_STEP"]:  # the step to interrupt lasts; the others end at once
    try:
        time.sleep(8)
    except KeyboardInterrupt:
        pass  # as docker-compose does: it catches the interrupt and ends normally
if sys.argv[1] == "ps":
    print("0123456789ab")
if sys.argv[1] == "logs":  # the arena's own line: its results folder inside its container
    print("output: /results  (leaderboard.html, ratings.json, ratings.csv, games.jsonl)", flush=True)
"""

FAKE_DOCKER = """#!/bin/sh
echo "docker $*" >> "$FAKE_LOG"
case "$1 $2" in
  "image inspect")  # the id of the image the tag names: the file $FAKE_LOG.image (empty or none: no image)
    [ -s "$FAKE_LOG.image" ] || exit 1
    cat "$FAKE_LOG.image"; exit 0 ;;
  "image rm") exit "${FAKE_RM_STATUS:-0}" ;;
  "inspect --format")  # the container's state: restarting while exit statuses of $FAKE_WAIT_CODES are left
    waits=$(cat "$FAKE_LOG.waits" 2>/dev/null | wc -l)
    if [ "$waits" -lt "$(echo ${FAKE_WAIT_CODES:-0} | wc -w)" ]; then state=restarting; else state=exited; fi
    echo "$state 2026-12-06T14:11:00.5Z"; exit 0 ;;
  "logs -f")  # the restarted arena's log, from its last exit on
    echo "tournament compose-demo: 12 games scheduled, 4 already played"
    echo "output: /results  (leaderboard.html, ratings.json, ratings.csv, games.jsonl)"; exit 0 ;;
esac
# `docker wait ID`: the arena's container ends after a while, with the next status of $FAKE_WAIT_CODES
touch "$FAKE_LOG.wait"
sleep "${FAKE_WAIT_S:-8}"
echo x >> "$FAKE_LOG.waits"
echo ${FAKE_WAIT_CODES:-0} | cut -d' ' -f"$(cat "$FAKE_LOG.waits" | wc -l)"
"""


def _stand_ins(tmp_path: Path, step: str) -> dict[str, str]:
    """The stand-in commands in ``tmp_path/bin``; the script's environment (``step`` lasts)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker-compose").write_text(FAKE_COMPOSE.format(python=sys.executable))
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "DOCKER": str(bin_dir / "docker"),
        "FAKE_LOG": str(tmp_path / "calls.log"),
        "FAKE_STEP": step,
        "ALLFOURS_BASE": "allfours-base-node:test",  # given: the script makes no base image
        "ALLFOURS_RESULTS": str(tmp_path / "results"),
    }


def test_the_results_folder_printed_is_the_hosts(tmp_path: Path) -> None:
    """Seen following README: the demo printed the arena's `output: /results`, the folder inside its
    container; the host's folder (ALLFOURS_RESULTS, default arena-out/compose) is printed instead."""
    env = {**_stand_ins(tmp_path, "none"), "FAKE_WAIT_S": "1"}
    done = subprocess.run(["bash", "docker/compose-demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"output: {tmp_path / 'results'}  (leaderboard.html" in done.stdout, done.stdout
    assert "/results " not in done.stdout.replace(str(tmp_path / "results"), "HOST"), done.stdout
    assert f"the results are in {tmp_path / 'results'}" in done.stderr, done.stderr


def test_a_relative_results_folder_reaches_compose_absolute(tmp_path: Path) -> None:
    """Seen following docs/deploy.md: `ALLFOURS_RESULTS=arena-out/x bash docker/compose-demo.sh` failed
    at once (`Named volume "arena-out/x:/results:rw" is used in service "arena" but no declaration was
    found`): docker-compose reads a bind-mount source that starts with neither `/` nor `.` as a named
    volume. The script made the folder and printed its absolute path but handed compose the relative
    one; every docker-compose call now gets the absolute path (relative to the repository, as before)."""
    rel = f"arena-out/compose-test-{os.getpid()}"  # inside the repository: neither `/` nor `.` first
    env = {**_stand_ins(tmp_path, "none"), "FAKE_WAIT_S": "1", "ALLFOURS_RESULTS": rel}
    try:
        done = subprocess.run(["bash", "docker/compose-demo.sh"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (ROOT / rel).is_dir()
    finally:
        shutil.rmtree(ROOT / rel, ignore_errors=True)
    seen = (tmp_path / "calls.log.results").read_text().splitlines()
    assert seen and set(seen) == {str(ROOT / rel)}, seen


def test_tokens_reach_compose_as_secret_files_only(tmp_path: Path) -> None:
    """docker inspect showed every token of the stack (each was a container's environment variable).
    The script now writes them as files for compose.yaml's `secrets:` in a private folder (0700, files
    0444: the services' user reads the bind-mounted file): a token given in the environment is kept, the
    others are drawn; docker-compose's environment holds no token, and the folder is gone afterwards."""
    given = "given-admin-token-0123456789abcdef"
    env = {**_stand_ins(tmp_path, "none"), "FAKE_WAIT_S": "1", "ALLFOURS_ADMIN_TOKEN": given,
           "TMPDIR": str(tmp_path)}
    done = subprocess.run(["bash", "docker/compose-demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "calls.log.secrets").read_text())
    assert seen["mode"] == "0o700" and seen["token_vars"] == [], seen
    files = seen["files"]
    assert sorted(files) == ["admin_token", "metrics_token", "token_heuristic", "token_nodejs", "token_random"], files
    assert all(mode == "0o444" for mode, _ in files.values()), files
    assert files["admin_token"][1].strip() == given
    drawn = [text.strip() for name, (_, text) in files.items() if name != "admin_token"]
    assert len(set(drawn)) == 4 and all(len(t) >= 32 for t in drawn), drawn
    assert not Path(seen["folder"]).exists()


def test_an_arena_that_docker_restarts_is_waited_for(tmp_path: Path) -> None:
    """Seen hosting the demo: the arena's process killed mid-run (a crash) was started again by docker
    (compose.yaml's restart policy, on-failure 3 times) to resume from its store, but `docker wait` had
    returned 137 at the first exit and the script took the stack down under the resumed arena (3 of 12
    games stored, exit status 137). It now waits again while the container is restarting: the status is
    the resumed arena's, and its log is shown (docker-compose's `logs -f` had ended with the first run)."""
    env = {**_stand_ins(tmp_path, "none"), "FAKE_WAIT_S": "1", "FAKE_WAIT_CODES": "137 0"}
    done = subprocess.run(["bash", "docker/compose-demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "the arena exited with status 137; docker starts it again" in done.stderr, done.stderr
    assert "the arena exited with status 0;" in done.stderr, done.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [c for c in calls if c.startswith("docker wait")] == ["docker wait 0123456789ab"] * 2, calls
    # the resumed arena's log is followed too, from the exit on, its results folder the host's
    assert "docker logs -f --since 2026-12-06T14:11:00.5Z 0123456789ab" in calls, calls
    assert "12 games scheduled, 4 already played" in done.stdout, done.stdout
    assert done.stdout.count(f"output: {tmp_path / 'results'}  (") == 2, done.stdout
    assert calls[-1] == "down --remove-orphans -t 5", calls


def test_an_arena_that_fails_for_good_ends_the_demo_with_its_status(tmp_path: Path) -> None:
    """The arena's last exit (its restart policy spent, or none due): the demo ends with that status."""
    env = {**_stand_ins(tmp_path, "none"), "FAKE_WAIT_S": "1", "FAKE_WAIT_CODES": "3"}
    done = subprocess.run(["bash", "docker/compose-demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3, done.stderr
    assert "starts it again" not in done.stderr, done.stderr


OLD_ID = "sha256:" + "0" * 64
NEW_ID = "sha256:" + "1" * 64


@pytest.mark.parametrize(("before", "built", "rm_status", "removed", "said"), [
    (OLD_ID, NEW_ID, 0, True, "compose-build: removed the image allfours:dev named before (" + "0" * 64 + ")"),
    (OLD_ID, NEW_ID, 1, True, "compose-build: kept the image allfours:dev named before (" + "0" * 64 + "): a "
                              "container or another tag uses it; once none does (the stack recreated on the new "
                              "one): docker image rm " + "0" * 64),
    (OLD_ID, OLD_ID, 0, False, None),  # nothing changed: the build kept the image
    (None, NEW_ID, 0, False, None),  # the first build: no image before
], ids=["replaced", "still-used", "unchanged", "first-build"])
def test_a_rebuild_removes_the_image_it_replaced(tmp_path: Path, before: str | None, built: str, rm_status: int,
                                                removed: bool, said: str | None) -> None:
    """Each run of the demo after a code change left the previous allfours:dev on the host's disk, dangling
    (about 770 MB; 4 such images on this project's machine in a day). docker/compose-build.sh removes the
    image the tag named before once the build gave the tag to a new one, after the build and before the
    stack starts, not forced: docker's refusal (a container or another tag still uses it) leaves it,
    said in one line, and the demo goes on."""
    env = {**_stand_ins(tmp_path, "none"), "FAKE_WAIT_S": "1", "FAKE_BUILT_ID": built,
           "FAKE_RM_STATUS": str(rm_status)}
    if before is not None:
        (tmp_path / "calls.log.image").write_text(before + "\n")
    done = subprocess.run(["bash", "docker/compose-demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    rm = f"docker image rm {OLD_ID}"
    assert (rm in calls) is removed, calls
    if removed:
        assert calls.index("build") < calls.index(rm) < calls.index("up -d --scale referee=2 --scale nodejs=2"), calls
    assert [line for line in done.stderr.splitlines() if line.startswith("compose-build:")] == \
        ([said] if said else []), done.stderr


@pytest.mark.parametrize("step", ["build", "up", "ps", "logs", "wait"])
def test_ctrl_c_at_each_step_takes_the_stack_down(tmp_path: Path, step: str) -> None:
    """Ctrl-C (SIGINT to the process group) while ``step`` runs: exit 130, ``down`` called last."""
    env = _stand_ins(tmp_path, step)
    log = tmp_path / "calls.log"
    proc = subprocess.Popen(default_signals(["bash", "docker/compose-demo.sh"]), cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{log}.{step}").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    calls = log.read_text().splitlines()
    assert proc.returncode == 130, (calls, err)
    assert err.rstrip().endswith("compose-demo: taking the stack down"), err
    assert calls[-1] == "down --remove-orphans -t 5", calls
    assert "the arena exited" not in err, err  # it did not play on


FAKE_SWARM_DOCKER = """#!/bin/sh
# a manager whose stack's arena task fails 4 times, saying why on its stderr
case "$1 $2" in
  "info --format") echo active ;;
  "service logs")
    echo "tournament compose-demo: 12 games scheduled"
    echo "error: referee 10.0.5.10:50051 is not reachable: UNAVAILABLE: failed to connect" >&2
    echo "error from daemon in stream: Error grabbing logs: node n3 is not available" >&2
    sleep 30 ;;
  "service ps") printf 't1\\nt2\\nt3\\nt4\\n' ;;
  "inspect --format") sleep 1; echo "failed 1" ;;
esac
exit 0
"""


def test_swarm_demo_shows_the_arenas_own_error_lines(tmp_path: Path) -> None:
    """docker/swarm-demo.sh follows the arena with `docker service logs`, whose stderr holds the service's
    own stderr: the script sent it to /dev/null, so an arena that failed 4 times showed no reason, only
    `the arena failed 4 times (last exit status 1)`. Its error line is shown now; the CLI's own
    `error from daemon in stream` (a node gone) is not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_SWARM_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "DOCKER": str(bin_dir / "docker"), "ALLFOURS_SKIP_BUILD": "1",
           "ALLFOURS_RESULTS": str(tmp_path / "results"), "ALLFOURS_SECRETS": str(tmp_path / "secrets")}
    done = subprocess.run(["bash", "docker/swarm-demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tournament compose-demo: 12 games scheduled" in done.stdout
    assert "error: referee 10.0.5.10:50051 is not reachable" in done.stderr, done.stderr
    assert "error from daemon in stream" not in done.stderr, done.stderr
    assert "the arena failed 4 times (last exit status 1)" in done.stderr
