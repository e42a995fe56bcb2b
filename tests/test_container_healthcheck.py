"""A prebuilt image's own HEALTHCHECK never runs in the arena's containers.

``arena submit --image`` hands the arena an image whose config the competitor wrote, and a docker image
may declare a health check (``HEALTHCHECK --interval=1ms CMD …``): dockerd then execs that command in
every container of the image, back to back, each exec a ``runc exec`` run by containerd's shim on the
host, outside the container's CPU quota (measured here: about 4.9 s of dockerd, containerd and shim CPU
in 10 s for one container probing ``/bin/true``, none without the check). A bot's game containers
(:meth:`arena.hosting.sandbox.Sandbox.start`) and its validation's
(:func:`arena.competition.validate.container_command`) turn the image's check off.
"""

from __future__ import annotations

import io
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import base_image, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: A bot image whose check leaves a mark in its container's /tmp at every probe, every millisecond.
DOCKERFILE = """FROM {base}
HEALTHCHECK --interval=1ms --timeout=2s --retries=1000 CMD ["/bin/sh", "-c", "echo x >> /tmp/probed"]
USER 10001:10001
ENTRYPOINT ["sleep", "60"]
"""
#: Seconds given to dockerd to run a first probe (it runs one within milliseconds of the start).
PROBE_WAIT_S = 5.0


@pytest.fixture(scope="module")
def client() -> Any:
    return docker_client()


@pytest.fixture(scope="module")
def probing_image(client: Any) -> Any:
    tag = f"allfours-test-healthcheck:{int(time.time() * 1000)}"
    dockerfile = io.BytesIO(DOCKERFILE.format(base=base_image("python")).encode())
    image, _ = client.images.build(fileobj=dockerfile, tag=tag, rm=True, forcerm=True)
    try:
        yield tag
    finally:
        client.images.remove(image.id, force=True)


def probes_seen(client: Any, container_id: str) -> tuple[dict[str, Any] | None, bool]:
    """The container's ``State.Health`` (None: no check) and whether its check left its mark, once a probe
    was seen or :data:`PROBE_WAIT_S` passed."""
    deadline = time.monotonic() + PROBE_WAIT_S
    health = None
    while time.monotonic() < deadline:
        health = client.api.inspect_container(container_id)["State"].get("Health")
        if health and health.get("Log"):
            break
        time.sleep(0.2)
    marked = client.api.exec_create(container_id, ["test", "-e", "/tmp/probed"])
    client.api.exec_start(marked["Id"])
    return health, client.api.exec_inspect(marked["Id"])["ExitCode"] == 0


def test_a_game_container_runs_no_health_check_of_its_image(client: Any, probing_image: str, tmp_path: Path) -> None:
    """A game's container (``Sandbox.start``) of an image declaring a health check: docker runs no probe."""
    from arena.hosting.sandbox import Limits, Sandbox

    sandbox = Sandbox(client, run_key(tmp_path), f"healthcheck-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        bot = sandbox.start(probing_image, "prober", "g00001-s0", {}, Limits(cpus=0.5, memory_mb=64))
        health, marked = probes_seen(client, bot.container.id)
        bot.stop(exit_wait_s=0)
    finally:
        sandbox.close()
    assert health is None and not marked, f"the image's health check ran in the bot's container: {health}"
    assert leftovers(client, run_key(tmp_path)) == []


def test_a_validation_container_runs_no_health_check_of_its_image(client: Any, probing_image: str,
                                                                  tmp_path: Path) -> None:
    """A validation scenario's ``docker run`` (``container_command``) of such an image: no probe either."""
    from arena.competition.validate import container_command, remove_containers

    key = f"healthcheck-{tmp_path.name[-8:]}"
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    argv = container_command(probing_image, key, str(sockets), 0.5, 64)
    run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        found: list[str] = []
        while not found and time.monotonic() < deadline and run.poll() is None:
            found = [c["Id"] for c in client.api.containers(filters={"label": f"org.allfours.validate={key}"})]
            time.sleep(0.2)
        assert found, "the validation's container did not start"
        health, marked = probes_seen(client, found[0])
    finally:
        remove_containers(key)
        threading.Thread(target=run.wait, daemon=True).start()
    assert health is None and not marked, f"the image's health check ran in the validation's container: {health}"
