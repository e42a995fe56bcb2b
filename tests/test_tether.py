"""arena/hosting/tether.py: a helper process that dies with the arena, started without ``preexec_fn``.

The bug it fixes (a red CI): the competition's validation started the conformance suite with a
``preexec_fn``; with gRPC busy in another thread of the arena, the forked child ran gRPC's fork
handlers, its poller thread hit a closed epoll descriptor and the child aborted before exec ("the
conformance suite did not run: ... epoll_wait error: Bad file descriptor").
"""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from arena.hosting.tether import tether_command
from tests.conftest import running

ROOT = Path(__file__).resolve().parent.parent


def test_no_product_code_forks_with_python_code_in_the_child() -> None:
    """``preexec_fn`` (Python code between fork and exec) in a process that uses gRPC can abort the child
    (module docstring): the arena, the referee, the SDK and the tests never pass it."""
    found = []
    for file in sorted(f for d in ("arena", "referee", "sdk", "tests") for f in (ROOT / d).rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        found += [f"{file.relative_to(ROOT)}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.keyword) and n.arg == "preexec_fn"]
    assert not found, f"preexec_fn in a gRPC process: {found}; use arena.hosting.tether"


def test_tethered_children_start_while_grpc_is_busy() -> None:
    """Spawned as the validation spawns its suite, 150 times while another thread keeps gRPC busy (as
    the arena's lobby and referee do): every child runs (with ``preexec_fn`` here, 67 of 300 aborted)."""
    server = grpc.server(futures.ThreadPoolExecutor(2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stop = threading.Event()

    def busy() -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while not stop.is_set():
                stub.Check(health_pb2.HealthCheckRequest(), timeout=30)

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        failed = []
        for k in range(150):
            r = subprocess.run(tether_command([sys.executable, "-c", f"print({k})"]),
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or r.stdout.strip() != str(k):
                failed.append((r.returncode, r.stderr[-300:]))
        assert not failed, failed[:3]
    finally:
        stop.set()
        thread.join(30)
        server.stop(0)


def test_a_tethered_child_dies_with_the_thread_that_started_it() -> None:
    """The tether's point: the parent is SIGKILLed, the child (which would sleep 300 s) goes at once."""
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "from arena.hosting.tether import tether_command\n"
         "child = subprocess.Popen(tether_command([sys.executable, '-c', 'import time; time.sleep(300)']))\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(300)\n"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    deadline = time.monotonic() + 60
    while Path(f"/proc/{child}/cmdline").read_bytes().find(b"sleep(300)") < 0:  # exec'd: the tether is tied
        assert time.monotonic() < deadline
        time.sleep(0.01)
    parent.kill()
    parent.wait(30)
    while running(child):  # reparented, then killed by the tether
        assert time.monotonic() < deadline, f"tethered child {child} outlived its parent"
        time.sleep(0.05)


def test_the_tether_says_what_is_wrong_in_one_line() -> None:
    r = subprocess.run([sys.executable, "-m", "arena.hosting.tether", "oops"], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 2 and r.stderr == "usage: python -m arena.hosting.tether PID -- COMMAND [ARG...]\n"
    r = subprocess.run([sys.executable, "-m", "arena.hosting.tether", "1", "--", "true"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 137 and r.stderr == ""  # PID 1 is not its parent: the parent is gone already
