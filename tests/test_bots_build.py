"""`arena bots build`: its checks (no docker needed) and a Node.js bot built and played in a container."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.bots_build import DOCKER_DIR, BuildError, build_image, plan_build
from arena.hosting.sandbox import run_key
from tests.docker_helpers import ROOT, base_image, build_bot, docker_client, leftovers, play_against_random_in_container


def test_plan_finds_the_kind_and_entry(tmp_path: Path) -> None:
    js = ROOT / "sample_bots" / "js"
    p = plan_build(js, "jsbot", "1.0")
    assert (p.kind, p.entry, p.tag) == ("node", "bot.js", "allfours-bots/jsbot:1.0")
    (tmp_path / "mine.py").write_text("class Mine: pass\n")
    p = plan_build(tmp_path, "mine", "2", entry="mine:Mine", tag="x/y:z")
    assert (p.kind, p.entry, p.tag) == ("python", "mine:Mine", "x/y:z")


def test_the_build_finds_the_projects_dockerfiles() -> None:
    """The Dockerfiles live in the project's docker/ folder, wherever the module sits in the package."""
    assert DOCKER_DIR == ROOT / "docker"
    for name in ("bot-python.Dockerfile", "bot-node.Dockerfile", "base-image.sh"):
        assert (DOCKER_DIR / name).is_file(), name


def test_a_node_entry_must_be_a_file_inside_the_folder(tmp_path: Path) -> None:
    """A submission's package.json "main" (or --entry) naming a host file outside the folder was accepted
    whenever that file existed: an oracle of which files the arena's host holds (issue 22's intake)."""
    import json

    (tmp_path / "package.json").write_text(json.dumps({"main": "../" * 12 + "etc/passwd"}))
    with pytest.raises(BuildError, match="a file inside the folder") as e:
        plan_build(tmp_path, "a", "1")
    assert "\n" not in str(e.value)
    with pytest.raises(BuildError, match="a file inside the folder"):
        plan_build(tmp_path, "a", "1", "/etc/passwd")
    (tmp_path / "bot.js").write_text("")
    assert plan_build(tmp_path, "a", "1", "./bot.js").entry == "./bot.js"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nowhere", "a", "1", None), "nowhere: not a folder"),
        ((".", "Big Name", "1", None), "--name 'Big Name'"),
        ((".", "a", "1 2", None), "--version '1 2'"),
        ((".", "a", "1", None), "a Python bot needs --entry module:Class (got None)"),
        ((".", "a", "1", "missing:Bot"), "no missing.py in the folder"),
    ],
)
def test_plan_errors_are_one_line(tmp_path: Path, args: tuple[Any, ...], message: str) -> None:
    folder = tmp_path / args[0] if args[0] != "." else tmp_path
    with pytest.raises(BuildError) as e:
        plan_build(folder, *args[1:])
    assert message in str(e.value) and "\n" not in str(e.value)


def test_cli_refuses_a_bad_folder_with_status_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "build", str(tmp_path), "--name", "a",
                        "--version", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "a Python bot needs --entry module:Class" in r.stderr, r.stderr


@pytest.mark.slow
def test_node_bot_built_from_debian_packages_plays_in_a_container(tmp_path: Path) -> None:
    """The sample Node.js bot, built with `arena bots build` on the Debian node base (npm ci with the
    host's CA bundle), plays a container game against a Python command bot to a normal end."""
    client = docker_client()
    tag = build_bot(ROOT / "sample_bots" / "js", "jsbot", "1", base_image("node"))
    assert client.images.get(tag).labels["org.allfours.bot"] == "jsbot"
    played = play_against_random_in_container(tmp_path, "js", tag, 128)
    assert len(played) == 2 and all(g["terminations"] == ["normal", "normal"] for g in played), played
    assert leftovers(client, run_key(tmp_path / "out")) == []


@pytest.mark.slow
def test_a_python_bot_without_requirements_txt_builds(tmp_path: Path) -> None:
    """issue 24, item 9: requirements.txt is optional (docs/deploy.md): a folder with only the bot's
    module builds (Docker 20.10 failed it: ``COPY failed: no source files were specified``)."""
    client = docker_client()
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copyfile(ROOT / "sample_bots" / "random_bot.py", folder / "plain.py")
    tag = build_bot(folder, "plainbot", "1", base_image("python"), entry="plain:RandomBot")
    try:
        assert client.images.get(tag).labels["org.allfours.bot"] == "plainbot"
        probe = ["python", "-c", "import plain, sdk; print(plain.RandomBot.__name__)"]
        out = client.containers.run(tag, entrypoint=probe, remove=True, network_disabled=True)
        assert out.decode().strip() == "RandomBot"
    finally:
        client.images.remove(tag, force=True)


class _EndlessBuild:
    """A docker client whose build sends a line every 20 ms and never ends (no daemon needed)."""

    def __init__(self) -> None:
        self.api = self
        self.closed = False

    def build(self, **_: Any) -> Any:
        def lines() -> Any:
            while not self.closed:
                time.sleep(0.02)
                yield {"stream": "still building\n"}

        return lines()

    def close(self) -> None:
        self.closed = True


def test_a_build_that_keeps_talking_is_stopped_at_the_time_limit_in_all(tmp_path: Path) -> None:
    """The build time limit counts in all, not only silence: a build streaming output past ``timeout_s``
    is given up with one line, and its connection closed (docker stops a build whose client went)."""
    (tmp_path / "chatty.py").write_text("class Bot:\n    pass\n")
    plan = plan_build(tmp_path, "chatty", "1", "chatty:Bot", "allfours-test/chatty:1")
    client = _EndlessBuild()
    over = r"^the build of allfours-test/chatty:1 went over the build time limit of 1 s$"
    with pytest.raises(BuildError, match=over):
        build_image(plan, "allfours-base:none", client=client, timeout_s=1)
    assert client.closed


def test_a_builds_own_code_is_held_to_the_build_memory_limit(tmp_path: Path) -> None:
    """A Node.js bot's package.json scripts (``preinstall``) run as root inside the build, as do a Python
    bot's sdists: a submitted bot's own code, which had no memory limit there (the host's memory was
    its to take). A build whose code takes more than ``memory_mb`` fails with one line."""
    docker_client()
    (tmp_path / "bot.js").write_text("")
    hog = "node -e \"const b = Buffer.alloc(600 * 1024 * 1024, 1); console.log(b.length)\""
    (tmp_path / "package.json").write_text(f'{{"name": "hog", "version": "1.0.0", "main": "bot.js", '
                                           f'"scripts": {{"preinstall": {json.dumps(hog)}}}}}')
    plan = plan_build(tmp_path, "buildhog", "1", tag="allfours-test/buildhog:1")
    with pytest.raises(BuildError, match=r"^the build of allfours-test/buildhog:1 failed: ") as e:
        image = build_image(plan, base_image("node"), memory_mb=256, timeout_s=300)
        docker_client().images.remove(image, force=True)
    assert "\n" not in str(e.value)
