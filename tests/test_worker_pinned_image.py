"""A worker-mode container bot's image is the one its pool started with (a real dockerd).

The runner pins a per-game container bot's tag to docker's image ID (tests/test_container_pinned_image.py), but a
worker pool (:class:`arena.hosting.workers.container.ContainerWorkers`) started each worker, and each restart of a
worker that died, by the tag: a tag moved meanwhile (``arena bots build`` again, ``docker tag``) had the restarted
workers play another image than the ones still running, under the same bot and version, with no reload (a reload
keeps a pool whose spec is unchanged)."""

from __future__ import annotations

import types
import uuid
from pathlib import Path

import pytest

from tests.docker_helpers import base_image, docker_client, open_sandbox, remove_images, tag_variant

pytestmark = [pytest.mark.slow, pytest.mark.docker]


class Tokens:
    """The lobby's token book as a worker's start uses it (issue one, revoke it)."""

    def issue(self, name: str) -> str:
        return uuid.uuid4().hex

    def revoke(self, digest: str) -> None:
        pass


def test_a_restarted_worker_runs_the_image_its_pool_started_with(tmp_path: Path) -> None:
    """A worker restarted after its bot's tag moved to image B starts image A, the pool's; once A is gone, the
    restart fails in one line naming it (not B)."""
    from arena.config import BotSpec
    from arena.hosting.workers.container import ContainerWorkers
    from arena.hosting.workers.local import Slot

    client = docker_client()
    tag = f"allfours-test-wpin-{uuid.uuid4().hex[:8]}:1"
    ids = [tag_variant(client, base_image("python"), tag, "a")]
    sandbox = open_sandbox(client, tmp_path / "out", f"wpin-{tmp_path.name[-8:]}")
    pool = ContainerWorkers(BotSpec("boxed", "1", (), image=tag, mode="worker"), 1, sandbox, "127.0.0.1:1")
    died: list[str] = []
    pool._ctx = types.SimpleNamespace(lobby=types.SimpleNamespace(tokens=Tokens()), log_dir=tmp_path / "logs",
                                      log_limit=4096)
    pool._died = lambda slot, what: died.append(what)  # type: ignore[method-assign]
    pool.log_dir.mkdir(parents=True)
    slot = Slot(0)
    images: list[str] = []
    moved = unmoved = None
    try:
        for step in ("start", "restart", "restart after A is gone"):
            if step == "restart":
                unmoved = getattr(pool, "tag_moved", lambda: None)()  # (asserted last: the images first)
                ids.append(tag_variant(client, base_image("python"), tag, "b"))  # the tag moves to B
                moved = getattr(pool, "tag_moved", lambda: None)()  # a reload starts a new pool (below)
            if step == "restart after A is gone":
                client.images.remove(ids[0], force=True)
            pool._launch(slot)
            if slot.proc is not None:
                images.append(slot.proc.container.attrs["Image"])
                slot.proc.stop(0.0)
                slot.proc = None
    finally:
        sandbox.close()
        remove_images(client, ids)
    assert images == [ids[0], ids[0]], (images, ids)
    assert (unmoved, moved) == (False, True)
    assert len(died) == 1 and "\n" not in died[0] and ids[0].removeprefix("sha256:")[:12] in died[0], died


def test_a_reload_restarts_a_pool_whose_tag_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reload (:meth:`arena.lobby.setup.LobbySetup.update`) with the same spec keeps a pool whose tag names its
    image still, and stops and starts again one whose tag moved (it kept every such pool: the moved tag never
    played, nor did a reload take it)."""
    import arena.lobby.setup as setup_module
    from arena.config import BotSpec
    from arena.lobby.setup import LobbySetup

    class Kind:
        def __init__(self, bot: BotSpec, moved: bool) -> None:
            self.bot, self.moved, self.stopped, self.started = bot, moved, False, False

        def tag_moved(self) -> bool:
            return self.moved

        def stop(self) -> None:
            self.stopped = True

        def start(self, ctx: object) -> None:
            self.started = True

    still = BotSpec("still", "1", (), image="allfours-bots/still:1", mode="worker")
    moved = BotSpec("moved", "1", (), image="allfours-bots/moved:1", mode="worker")
    kinds = {"still": Kind(still, False), "moved": Kind(moved, True)}
    setup = LobbySetup(lobby=types.SimpleNamespace(address="127.0.0.1:1"), kinds=dict(kinds), ctx=object())
    monkeypatch.setattr(setup_module, "make_worker_kind", lambda bot, *rest: Kind(bot, False))
    monkeypatch.setattr(setup, "reload_tokens", lambda *args: None)
    setup.update(types.SimpleNamespace(bots=[still, moved], players=2, concurrency=1), None)
    assert setup.kinds["still"] is kinds["still"] and not kinds["still"].stopped
    assert kinds["moved"].stopped and setup.kinds["moved"] is not kinds["moved"] and setup.kinds["moved"].started
