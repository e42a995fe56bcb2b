"""A competition (docs/competition.md, issue 22) with real processes, a real dockerd and real sockets.

The host makes competitor tokens (`arena competitor add`: printed once, only the SHA-256 kept); `arena
serve` with a [competition] table serves the Submission service on the lobby's port; competitors submit
with `arena submit`: a good Python bot is built, validated by the conformance suite in a container
without a network, enrolled as name@version without SIGHUP, plays and is rated; a bot that breaks the
protocol is rejected with its failing checks; hostile archives are refused with their line; a quota is
hit with when to retry; a competitor is refused another's submission; freeze stops submissions; a
restart of `arena serve` mid-build loses nothing.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.competition.client import SubmissionClient, pack
from arena.config import ConfigError, check_bot_cwds, load_config, parse_config
from arena.hosting.shepherd import descendants
from tests.conftest import running
from tests.docker_helpers import base_image, docker0_address, docker_client

pytestmark = pytest.mark.docker  # drives dockerd: scripts/test.sh runs it beside the other tests

if TYPE_CHECKING:
    from arena.competition.book import CompetitionBook, Submission

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "allfours-compete-test"

CONFIG = """
[tournament]
name = "{name}"
players = 2
games_per_pairing = 2
concurrency = 2
output = "out"
lobby = "127.0.0.1:{port}"
[tournament.time_control]
join_ms = 30000
grace_ms = 1000

[competition]
submissions_per_day = {per_day}
base_python = "{base}"
base_node = "{base_node}"
image_prefix = "{prefix}"
checks = ["join", "players-2"]
upload_bytes = 200000

[[bots]]
name = "one"
sandbox = "none"
command = ["{{python}}", "-m", "arena.testing.instant_bot"]
cwd = "{root}"

[[bots]]
name = "two"
sandbox = "none"
command = ["{{python}}", "-m", "arena.testing.instant_bot"]
cwd = "{root}"
"""

GOOD = ((ROOT / "sample_bots" / "random_bot.py").read_text()
        + "\nprint('hello from a good bot', file=__import__('sys').stderr)\n")
BROKEN = '''
from sdk.bot import Bot


class Broken(Bot):
    name = "broken"

    def act(self, ctx):
        print("broken bot gives up here", file=__import__("sys").stderr, flush=True)
        raise SystemExit(3)  # leaves at its first decision: breaks the protocol
'''


def arena(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_competition_tells_the_bots_no_names_unless_set(tmp_path: Path) -> None:
    """``tournament.blind_seats``: on by default with ``[competition]`` (strangers' bots must not recognise
    a friend to throw games to), off without; the config may set it either way; not a bool is a config error."""
    bots = [{"name": n, "command": ["x"]} for n in ("a", "b")]

    def blind(tournament: dict[str, object], competition: bool) -> bool:
        data = {"tournament": {"name": "t", **tournament}, "bots": bots, **({"competition": {}} if competition else {})}
        return parse_config(data, base=tmp_path).blind_seats

    assert [blind({}, True), blind({}, False)] == [True, False]
    assert [blind({"blind_seats": False}, True), blind({"blind_seats": True}, False)] == [False, True]
    with pytest.raises(ConfigError) as e:
        parse_config({"tournament": {"name": "t", "blind_seats": "yes"}, "bots": bots}, "c.toml", base=tmp_path)
    assert str(e.value).startswith("c.toml: tournament.blind_seats: "), e.value


def test_the_competition_table_has_defaults_and_one_line_errors(tmp_path: Path) -> None:
    bots = [{"name": n, "command": ["x"]} for n in ("a", "b")]
    c = parse_config({"tournament": {"name": "t"}, "bots": bots, "competition": {}}, base=tmp_path).competition
    assert c is not None and c.submissions_per_day == 5 and c.in_play == 1 and c.checks == ()
    assert parse_config({"tournament": {"name": "t"}, "bots": bots}, base=tmp_path).competition is None
    with pytest.raises(ConfigError) as e:
        parse_config({"tournament": {"name": "t"}, "bots": bots,
                      "competition": {"submissions_per_day": 0, "bogus": 1}}, "c.toml", base=tmp_path)
    lines = str(e.value).splitlines()
    assert any("competition.submissions_per_day" in ln and "0" in ln for ln in lines), lines
    assert any("competition.bogus" in ln for ln in lines), lines


@pytest.mark.parametrize(("given", "kept"), [
    ([], ()),
    (["10.1.2.3", "192.168.8.0/24"], ("10.1.2.3/32", "192.168.8.0/24")),
    (["10.1.2.3/24"], None),  # host bits set: a typo for 10.1.2.0/24 or 10.1.2.3/32?
    (["fd00::/8"], None),  # IPv6: the wall is IPv4's
    ("10.1.2.3", None),  # not a list
    ([10], None),
    (["registry.lan"], None),
])
def test_build_reaches_is_a_list_of_ipv4_networks(tmp_path: Path, given: object, kept: tuple[str, ...] | None) -> None:
    """``[competition] build_reaches``: the private networks a submission's build may still reach (the
    host's registry mirror or proxy), as ``ipaddress`` writes them; anything else is one line naming the
    key, and the service does not start."""
    bots = [{"name": n, "command": ["x"]} for n in ("a", "b")]
    data = {"tournament": {"name": "t"}, "bots": bots, "competition": {"build_reaches": given}}
    if kept is not None:
        c = parse_config(data, "c.toml", base=tmp_path).competition
        assert c is not None and c.build_reaches == kept
        return
    with pytest.raises(ConfigError) as e:
        parse_config(data, "c.toml", base=tmp_path)
    assert str(e.value).startswith("c.toml: competition.build_reaches: must be a list of IPv4 networks"), e.value
    assert "\n" not in str(e.value)


def test_the_build_network_is_made_anew_when_a_reload_changes_build_reaches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGHUP re-reads ``[competition]`` and the next submission uses it; the build network, made at the
    first build, kept the walls it was made with, so a ``build_reaches`` added for a registry mirror had no
    effect until ``arena serve`` started again. The queue now makes the network anew before the next build
    when ``build_reaches`` changed (and keeps it while it did not)."""
    import dataclasses

    import arena.hosting.sandbox as sandbox
    from arena.competition.book import CompetitionBook
    from arena.competition.pipeline import BuildQueue
    from arena.config import CompetitionSettings

    made: list[tuple[str, ...]] = []
    closed: list[tuple[str, ...]] = []

    class Network:
        def __init__(self, client: object, key: str, tournament: str = "", reaches: tuple[str, ...] = ()) -> None:
            self.reaches = tuple(reaches)

        def open(self) -> str:
            made.append(self.reaches)
            return "net"

        def close(self) -> list[str]:
            closed.append(self.reaches)
            return []

    monkeypatch.setattr(sandbox, "BuildNetwork", Network)
    with CompetitionBook(tmp_path / "out") as book:
        queue = BuildQueue(book, CompetitionSettings(), tmp_path / "out", lambda: None, lambda _: None, client=object())
        first = queue._build_network(object())
        assert queue._build_network(object()) is first and made == [()]
        queue.settings = dataclasses.replace(queue.settings, build_reaches=("10.1.2.3/32",))  # the reload
        second = queue._build_network(object())
        assert second is not first and made == [(), ("10.1.2.3/32",)] and closed == [()]
        assert queue._build_network(object()) is second and len(made) == 2


def test_a_misspelt_validation_check_is_a_config_error_not_every_submissions_rejection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """competition.checks names conformance checks: a typo (or a lobby-only check, which the per-game
    validation cannot run) used to start `arena serve`, and then every submission was *rejected* at its
    validation (counted in the competitor's day) because the suite refused its own arguments. Now the
    league does not start (one line naming the key), and a SIGHUP with such a table keeps the old one."""
    from types import SimpleNamespace

    from arena.competition.setup import open_competition
    from arena.hosting.sandbox import run_key

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # no base-image look-ups
    bots = [{"name": n, "command": ["x"]} for n in ("a", "b")]

    def config(checks: list[str]) -> Any:
        return parse_config({"tournament": {"name": "t"}, "bots": bots, "competition": {"checks": checks}},
                            "c.toml", base=tmp_path)

    from arena.lobby.tokens import TokenBook

    league = SimpleNamespace(request_reload=lambda: None, grow=None, lobby_services=[], after_game=[], reopened=[],
                             tokens=TokenBook(), setup=None)
    for bad in ("players2", "lobby-ready"):
        with pytest.raises(ConfigError) as e:
            open_competition(config(["join", bad]), tmp_path / "out", league, lambda m: None)  # type: ignore[arg-type]
        assert str(e.value).startswith(f"c.toml: competition.checks: no per-game conformance check {bad!r}"), e.value
        assert "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()  # nothing opened
    notes: list[str] = []
    close = open_competition(config(["join"]), tmp_path / "out", league, notes.append)  # type: ignore[arg-type]
    try:
        key = run_key(tmp_path / "out")  # where the host finds the images (docs/competition.md)
        assert notes == [f"submissions' images are tagged allfours-submissions/{key}/NAME:VERSION (this folder's own)"]
        notes.clear()
        league.reopened[0](config(["players2"]))
        assert len(notes) == 1 and "(did you mean 'players-2'?)" in notes[0], notes
        assert notes[0].endswith("the old [competition] table stays"), notes
    finally:
        close()


def test_the_hosts_example_config_loads_as_docs_competition_md_runs_it() -> None:
    """docs/competition.md hosts from examples/competition.toml: it loads (house bots each in a folder of
    their own, not the one holding the output), takes submissions, and listens on loopback only."""
    c = load_config(ROOT / "examples" / "competition.toml")
    assert c.competition is not None and c.lobby.startswith("127.0.0.1:") and c.lobby_tls is None
    assert [b.name for b in c.bots] == ["random", "heuristic"]
    assert {Path(str(b.cwd)).resolve() for b in c.bots} == {ROOT / "sample_bots"}
    assert Path(c.output).resolve() == ROOT / "arena-out" / "spring-cup"
    check_bot_cwds(c, Path(c.output), arena_cwd=ROOT)  # what `arena serve` refused in the old docs' config
    assert "examples/competition.toml" in (ROOT / "docs" / "competition.md").read_text()


def test_a_failed_submission_is_not_counted_in_the_day(tmp_path: Path) -> None:
    """`failed` is the arena's fault (docs/competition.md): it costs the competitor none of the day's
    submissions; a rejected one does."""
    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk, Refused
    from arena.config import CompetitionSettings

    with CompetitionBook(tmp_path) as book:
        desk = Desk(CompetitionSettings(submissions_per_day=1), tmp_path, book, lambda: None)
        sub = book.add_submission("eve", "evebot", "1", "python", "evebot:EveBot")
        book.set_status(sub.id, "failed", "build", "the arena's base image is not on this host")
        desk.check_open("eve", time.time())
        book.set_status(book.add_submission("eve", "evebot", "2", "python", "evebot:EveBot").id, "rejected")
        with pytest.raises(Refused, match="1 submissions today"):
            desk.check_open("eve", time.time())


def test_a_build_the_arena_could_not_run_is_told_to_the_host(tmp_path: Path) -> None:
    """A build that fails for the arena's own reason (docker gone, disk full) is `failed`, and the host's
    log says so with the fix (before, only the competitor saw it: `arena serve` printed nothing, and the
    host learnt of it only from a competitor)."""
    from arena.competition.book import CompetitionBook
    from arena.competition.pipeline import BuildQueue, submission_folder
    from arena.config import CompetitionSettings

    class GoneDocker:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("docker went away")

    with CompetitionBook(tmp_path) as book:
        sub = book.add_submission("eve", "evebot", "1", "python", "evebot:EveBot")
        folder = submission_folder(tmp_path, sub.id)
        folder.mkdir(parents=True)
        (folder / "evebot.py").write_text("from sdk.bot import Bot\nclass EveBot(Bot):\n    pass\n")
        notes: list[str] = []
        queue = BuildQueue(book, CompetitionSettings(), tmp_path, lambda: None, notes.append, client=GoneDocker())
        queue.process(sub)
        got = book.get(sub.id)
    assert got is not None and (got.status, got.step) == ("failed", "build"), got
    assert len(notes) == 1 and f"submission {sub.id} (evebot@1) failed" in notes[0], notes
    assert "docker went away" in notes[0] and f"arena competition retry CONFIG {sub.id}" in notes[0], notes


class _LoadedImage:
    """What a docker client answers for a loaded prebuilt image (its tag, id and size)."""

    id, attrs = "sha256:feed", {"Size": 1, "Config": {}}

    def tag(self, tag: str) -> None:
        pass


class _NoLayers:
    """A docker API whose images tell no layer folders (another storage driver: files are not counted)."""

    def inspect_image(self, image: str) -> dict[str, Any]:
        return {}


class _Images:
    def load(self, f: Any) -> list[_LoadedImage]:
        return [_LoadedImage()]

    def get(self, image: str) -> _LoadedImage:
        return _LoadedImage()

    def remove(self, tag: str, force: bool = False) -> None:
        pass


def test_a_validation_the_suite_could_not_judge_is_the_arenas_failure(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A validation in which the conformance suite did not run (its own usage error), crashed, or ran on a
    docker that failed under it was recorded `rejected` ("failing checks: suite", or every check failing
    with docker's error as the bot's output), counted in the competitor's day, and the host heard of
    nothing. It is `failed` now (the arena's fault: not counted), with a reason the host can act on, told
    in the host's log with the retry, as a build the arena could not run is; a bot failing its checks is
    still rejected."""
    from arena.competition.book import CompetitionBook
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from arena.competition.validate import Verdict, validate_image
    from arena.config import CompetitionSettings

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # docker fails under the suite
    image = f"{PREFIX}/evebot:1"
    gone = validate_image(image, "t-gone", ["join"])
    assert not gone.passed and gone.fault.startswith("docker failed during the validation"), gone
    usage = validate_image(image, "t-usage", ["players2"])  # a name the suite does not have: its usage error
    assert usage.fault.startswith("the conformance suite did not run (exit status 2): "), usage
    assert "\n" not in gone.fault + usage.fault

    def crash(*_: Any) -> Verdict:
        raise OSError("no space left on device")

    bad_bot = Verdict(False, ("join",), "join: expected a Hello; the bot: never sent one")
    validators = [lambda *_: gone, lambda *_: usage, crash, lambda *_: bad_bot]
    with CompetitionBook(tmp_path / "out") as book:
        notes: list[str] = []
        for k, validator in enumerate(validators, 1):
            sub = book.add_submission("eve", "evebot", str(k), "image", "")
            submission_folder(tmp_path / "out", sub.id).parent.mkdir(parents=True)
            (submission_folder(tmp_path / "out", sub.id).parent / IMAGE_ARCHIVE).write_bytes(b"")
            client = type("Client", (), {"images": _Images(), "api": _NoLayers()})()
            BuildQueue(book, CompetitionSettings(), tmp_path / "out", lambda: None, notes.append, validator=validator,
                       client=client).process(sub)
        got = [(s.status, s.step, s.reason) for s in book.submissions("eve")]
        counted = book.count_since("eve", 0.0)
    assert [g[:2] for g in got] == [("failed", "validation")] * 3 + [("rejected", "validation")], got
    assert got[0][2] == f"the arena could not validate it: {gone.fault}", got
    assert "no space left on device" in got[2][2], got
    assert counted == 1  # only the bot's own rejection
    for sid, note in zip((1, 2, 3), notes[:3], strict=True):
        assert note.startswith(f"submission {sid} (evebot@{sid}) failed, not counted in eve's day: "), notes
        assert note.endswith(f"(once mended: arena competition retry CONFIG {sid})"), notes
    assert notes[3] == "submission 4 (evebot@4) rejected by validation: failing checks: join", notes


def test_two_competitions_on_one_docker_host_keep_their_images_apart(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two competitions (two output folders) on one docker host, both with the default ``image_prefix``,
    each accept a submission ``evebot`` version 1. Both were tagged ``allfours-submissions/evebot:1``, so
    the second's build moved the first's tag (the first league then played the second competition's bot
    under its own competitor's name, or lost it when the second rejected and removed its image), and
    both validations were labelled ``allfours-submissions-sub1`` (each one's clean-up killed the other's
    containers). Each folder's images and validations are its own now: ``IMAGE_PREFIX/KEY/NAME:VERSION``
    and ``IMAGE_PREFIX-KEY-subID``, KEY the folder's run key (the sandbox's, 12 hex characters)."""
    from arena.competition import pipeline
    from arena.competition.book import CompetitionBook
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from arena.competition.validate import Verdict
    from arena.config import CompetitionSettings
    from arena.hosting.sandbox import run_key

    keys: list[str] = []

    def validate(image: str, key: str, *_: Any, **__: Any) -> Verdict:
        keys.append(key)
        return Verdict(True, (), "")

    monkeypatch.setattr(pipeline, "validate_image", validate)
    images = []
    for out in (tmp_path / "one" / "out", tmp_path / "two" / "out"):
        with CompetitionBook(out) as book:
            sub = book.add_submission("eve", "evebot", "1", "image", "")
            submission_folder(out, sub.id).parent.mkdir(parents=True)
            (submission_folder(out, sub.id).parent / IMAGE_ARCHIVE).write_bytes(b"")
            client = type("Client", (), {"images": _Images(), "api": _NoLayers()})()
            BuildQueue(book, CompetitionSettings(), out, lambda: None, lambda _: None, client=client).process(sub)
            (got,) = book.submissions("eve")
        assert got.status == "accepted", got
        images.append(got.image)
        assert got.image == f"allfours-submissions/{run_key(out)}/evebot:1"
    assert images[0] != images[1]
    assert keys == [f"allfours-submissions-{run_key(tmp_path / d / 'out')}-sub1" for d in ("one", "two")]


class _KeptImages(_Images):
    """A docker client's images that records what is removed; ``in_use`` ones are refused (a container
    runs them), as docker refuses an image removal that is not forced."""

    def __init__(self, in_use: set[str]) -> None:
        self.removed: list[str] = []
        self.in_use = in_use

    def remove(self, tag: str, force: bool = False) -> None:
        import docker.errors

        assert not force
        if tag in self.in_use:
            raise docker.errors.APIError("409 Conflict", explanation=f"conflict: unable to remove {tag}: in use")
        self.removed.append(tag)


def test_a_competitor_keeps_at_most_versions_kept_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every accepted version's image was kept on the host's disk for good (the final may choose any), so a
    competitor's disk was bounded per image only: ``submissions_per_day`` new images a day, each up to
    ``image_bytes``. Past ``versions_kept`` accepted versions, the oldest retired one's image is removed
    now, never the selected final entry's nor one a container still runs (docker refuses: it goes at a later
    acceptance); its owner sees it retired with the reason, it can no longer be chosen, its games stay."""
    from arena.cli.competing import _line
    from arena.competition import pipeline
    from arena.competition.book import REMOVED_REASON, CompetitionBook
    from arena.competition.desk import Desk, Refused
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from arena.competition.service import submission_pb
    from arena.competition.validate import Verdict
    from arena.config import CompetitionSettings

    monkeypatch.setattr(pipeline, "validate_image", lambda *_, **__: Verdict(True, (), ""))
    out = tmp_path / "out"
    settings = CompetitionSettings(versions_kept=2)
    images = _KeptImages(in_use=set())
    client = type("Client", (), {"images": images, "api": _NoLayers()})()
    notes: list[str] = []
    with CompetitionBook(out) as book:
        book.add_competitor("eve")
        desk = Desk(settings, out, book, lambda: None)
        tags: dict[int, str] = {}

        def accept(version: int) -> None:
            sub = book.add_submission("eve", "evebot", str(version), "image", "")
            submission_folder(out, sub.id).parent.mkdir(parents=True)
            (submission_folder(out, sub.id).parent / IMAGE_ARCHIVE).write_bytes(b"")
            BuildQueue(book, settings, out, lambda: None, notes.append, client=client).process(sub)
            tags[version] = book.submissions("eve")[-1].image

        accept(1)
        accept(2)
        desk.select("eve", 1)  # the final entry stays, however old
        accept(3)  # three kept, over 2: v2 goes (v1 is selected)
        assert images.removed == [tags[2]], notes
        images.in_use.add(tags[3])
        accept(4)  # v3 is in use: it stays for now
        assert images.removed == [tags[2]], notes
        assert any(n.startswith("evebot@3's image stays for now (past versions_kept; docker: ") for n in notes), notes
        images.in_use.clear()
        accept(5)  # now v3 and v4 go: v1 (selected) and v5 stay
        assert images.removed == [tags[2], tags[3], tags[4]], notes
        subs = {int(s.version): s for s in book.submissions("eve")}
        assert [v for v, s in subs.items() if s.removed] == [2, 3, 4]
        assert all(subs[v].retired and subs[v].reason == REMOVED_REASON for v in (2, 3, 4))
        assert not subs[1].removed and not subs[5].removed and subs[5].reason == ""
        assert _line(submission_pb(subs[2])) == f"#{subs[2].id} evebot@2 accepted [{REMOVED_REASON}]"  # arena submit
        assert _line(submission_pb(subs[5])) == f"#{subs[5].id} evebot@5 accepted"
        with pytest.raises(Refused, match=r"^submission 2 is retired and its image removed \(past versions_kept\)"):
            desk.select("eve", subs[2].id)
        assert [s.version for s in book.finalists()] == ["1"]
        book.set_meta("selected:eve", "0")  # a selection of nothing: the latest kept version is the entry
        assert [s.version for s in book.finalists()] == ["5"]
    assert "evebot@2's image is removed (past versions_kept = 2); its games are kept" in notes, notes


def _two_versions(book: CompetitionBook) -> tuple[Submission, Submission]:
    """Competitor eve with two accepted versions of evebot in ``book`` (images ``img:1``, ``img:2``), the first
    retired (a newer one took its place); as the book reads them now."""
    book.add_competitor("eve")
    for version in ("1", "2"):
        sub = book.add_submission("eve", "evebot", version, "image", "")
        book.set_status(sub.id, "accepted", image=f"img:{version}")
    old, new = book.submissions("eve")
    book.retire(old.id)
    return book.submissions("eve")[0], new


def test_a_version_chosen_as_its_image_goes_is_either_kept_or_refused(tmp_path: Path) -> None:
    """Choosing a final entry (``arena submit --select``) and removing a retired version's image (past
    ``versions_kept``) are one transaction each in the book: whichever comes first wins, and a version is
    never both chosen and without its image (the final would then have no image to play)."""
    from arena.competition.book import CompetitionBook

    with CompetitionBook(tmp_path) as book:
        old, new = _two_versions(book)
        assert book.select("eve", old.id)  # chosen first: its image stays
        assert not book.claim_removal(old)
        assert book.select("eve", new.id)
        assert book.claim_removal(old)  # no longer chosen: its image may go
        assert not book.select("eve", old.id) and book.get_meta("selected:eve") == str(new.id)
        assert book.submissions("eve")[0].removed
        book.keep_image(old.id)  # docker kept it (a container ran it): retired, and selectable again
        assert not book.submissions("eve")[0].removed and book.select("eve", old.id)


def test_a_competitor_sees_which_entry_plays_the_final(tmp_path: Path) -> None:
    """Seen walking docs/competition.md: after `arena submit --select 2`, nothing showed which entry plays
    the final (`arena submissions`, /me, the API), so a competitor could not check the selection, nor
    learn that by default their latest accepted version plays. The final's entry (the chosen one, else the
    latest accepted whose image is kept, as `arena competition final` picks it) is marked in each."""
    from argparse import Namespace

    from rich.console import Console

    from arena.cli.competing import _line, _submissions
    from arena.competition.book import CompetitionBook
    from arena.competition.service import submission_pb

    with CompetitionBook(tmp_path) as book:
        one, two = _two_versions(book)
        assert book.final_entry("eve") == two.id  # the latest, by default
        assert book.select("eve", one.id)
        assert book.final_entry("eve") == one.id and [s.id for s in book.finalists()] == [one.id]
        assert book.final_entry("nobody") is None
        marked = [submission_pb(s, final=book.final_entry("eve")) for s in book.submissions("eve")]
    assert [m.final_entry for m in marked] == [True, False]
    assert _line(marked[0]) == f"#{one.id} evebot@1 accepted [retired] [final entry]"
    assert _line(marked[1]) == f"#{two.id} evebot@2 accepted"

    class Client:
        def submissions(self) -> list[Any]:
            return marked

        def close(self) -> None:
            pass

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("arena.cli.competing._client", lambda _args: Client())
        assert _submissions(Namespace(log=None, games=False), Console(file=out, width=200)) == 0
    assert "evebot@1 (retired, final entry)" in out.getvalue(), out.getvalue()
    assert "evebot@2 " in out.getvalue() and "evebot@2 (" not in out.getvalue(), out.getvalue()


def test_a_competition_leagues_commitment_says_the_close_reveals_its_seed(tmp_path: Path) -> None:
    """Seen walking docs/competition.md: the league's commitment.json, which competitors keep to check the
    seed `arena competition close` reveals, said "the seed is revealed in ratings.json after the last game",
    and a served league has no last game. A competition's league names the close; another tournament (the
    final's included) keeps the note."""
    from arena.tournament.runner import open_tournament

    bots = [{"name": n, "command": ["x"]} for n in ("a", "b")]
    for competition in (True, False):
        out = tmp_path / f"out-{competition}"
        data = {"tournament": {"name": "t", "output": str(out)}, "bots": bots,
                **({"competition": {}} if competition else {})}
        open_tournament(parse_config(data, base=tmp_path)).store.close()
        note = json.loads((out / "commitment.json").read_text())["note"]
        assert ("`arena competition close`" in note) is competition, note
        assert ("after the last game" in note) is not competition, note


def test_the_host_retries_failed_submissions_and_only_those(tmp_path: Path) -> None:
    """`arena competition retry CONFIG [ID ...]`: a failed submission (the arena's fault) goes back to the
    build queue keeping its version (before, the competitor had to submit it again as a new version);
    a rejected or accepted one, or a wrong id, is one line and exit 2, and nothing changes."""
    from arena.competition.book import CompetitionBook

    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name="retry", port=0, per_day=5, base="x", base_node="x", prefix=PREFIX, root=ROOT))
    with CompetitionBook(tmp_path / "out") as book:
        subs = [book.add_submission("eve", "evebot", str(v), "python", "evebot:EveBot") for v in (1, 2, 3, 4)]
        book.set_status(subs[0].id, "failed", "build", "the arena's base image is not on this host")
        book.set_status(subs[1].id, "rejected", "validation", "failing checks: join")
        book.set_status(subs[2].id, "failed", "build", "the arena could not build it: DockerException")
        book.set_status(subs[3].id, "accepted")
    for wrong, line in ((subs[1].id, f"submission {subs[1].id} is rejected, not failed"),
                        (subs[3].id, f"submission {subs[3].id} is accepted, not failed"), (99, "no submission 99")):
        done = arena("competition", "retry", str(cfg), str(subs[0].id), str(wrong))
        assert done.returncode == 2 and line in done.stderr and len(done.stderr.strip().splitlines()) == 1, done
    assert [_status(cfg, s.id)[0] for s in subs] == ["failed", "rejected", "failed", "accepted"]
    one = arena("competition", "retry", str(cfg), str(subs[2].id))
    assert one.returncode == 0 and one.stdout.split() == [f"#{subs[2].id}", "evebot@3", "received"], one
    assert [_status(cfg, s.id)[0] for s in subs] == ["failed", "rejected", "received", "accepted"]
    rest = arena("competition", "retry", str(cfg))
    assert rest.returncode == 0 and rest.stdout.split() == [f"#{subs[0].id}", "evebot@1", "received"], rest
    assert "1 failed submission(s) back in the build queue" in rest.stderr, rest.stderr
    assert _status(cfg, subs[0].id) == ("received", "", "retried by the host")
    none = arena("competition", "retry", str(cfg))
    assert none.returncode == 0 and none.stdout == "" and "no failed submission to retry" in none.stderr, none


def test_competitor_tokens_are_printed_once_and_kept_as_digests(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name="tok", port=0, per_day=2, base="x", base_node="x", prefix=PREFIX, root=ROOT))
    made = arena("competitor", "add", str(cfg), "alice")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert len(token) >= 32 and "\n" not in token  # 24 random bytes: 192 bits
    again = arena("competitor", "add", str(cfg), "alice")
    assert again.returncode == 2 and "already has a token" in again.stderr and token not in again.stdout
    book = tmp_path / "out" / "competition.sqlite"
    assert token.encode() not in book.read_bytes()
    assert oct(book.stat().st_mode & 0o777) == oct(0o600)
    listed = arena("competitor", "list", str(cfg))
    assert listed.stdout.split() == ["alice", "live"]
    assert arena("competitor", "add", str(cfg), "alice", "--revoke").returncode == 0
    assert arena("competitor", "list", str(cfg)).stdout.split() == ["alice", "revoked"]
    typo = arena("competitor", "add", str(cfg), "alcie", "--revoke")  # a leaked token's owner mistyped
    assert typo.returncode == 2 and "no competitor 'alcie'" in typo.stderr and "alice" in typo.stderr, typo.stderr
    assert len(typo.stderr.strip().splitlines()) == 1
    fresh = arena("competitor", "add", str(cfg), "alice")
    assert fresh.returncode == 0 and fresh.stdout.strip() != token
    bad = arena("competitor", "add", str(cfg), "../x")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    early = arena("competition", "final", str(cfg))
    assert early.returncode == 2 and "not frozen" in early.stderr and len(early.stderr.strip().splitlines()) == 1
    assert arena("competition", "freeze", str(cfg)).returncode == 0
    alone = arena("competition", "final", str(cfg))
    assert alone.returncode == 2 and "a final needs two" in alone.stderr, alone.stderr


def test_freezing_a_config_without_competitors_is_refused_with_one_line(tmp_path: Path) -> None:
    """A host who freezes the wrong config (examples/competition.toml instead of their copy) must hear
    it: that froze an empty competition in a new folder, printed a commitment, and exited 0, while the
    real one kept taking submissions."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name="wrong", port=0, per_day=2, base="x", base_node="x", prefix=PREFIX, root=ROOT))
    frozen = arena("competition", "freeze", str(cfg))
    assert frozen.returncode == 2 and frozen.stdout == "", frozen.stdout
    assert len(frozen.stderr.strip().splitlines()) == 1 and "no competitor" in frozen.stderr, frozen.stderr
    assert not (tmp_path / "out" / "competition.sqlite").exists()
    assert arena("competitor", "list", str(cfg)).returncode == 0
    assert arena("competition", "freeze", str(cfg)).returncode == 2
    assert arena("competitor", "add", str(cfg), "ann").returncode == 0
    assert arena("competition", "freeze", str(cfg)).returncode == 0



def test_a_submission_after_the_freeze_learns_the_finals_seed_commitment(tmp_path: Path) -> None:
    """`arena competition freeze` printed the final's seed commitment to the host alone: nothing showed it
    to the competitors before the final, whose board shows it only once played, so a host could draw
    another seed unseen. Every submission refused for the freeze names it now."""
    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk, Refused
    from arena.competition.final import freeze
    from arena.config import CompetitionSettings

    with CompetitionBook(tmp_path) as book:
        book.add_competitor("ann")
        committed = freeze(book)
        with pytest.raises(Refused) as refused:
            Desk(CompetitionSettings(), tmp_path, book, lambda: None).check_open("ann", time.time())
    assert refused.value.kind == "frozen"
    assert str(refused.value).startswith("submissions are frozen since ")
    assert str(refused.value).endswith(f": the final evaluation is on (its master seed's SHA-256: {committed})")

def _frozen_competition(tmp_path: Path) -> Path:
    """A frozen competition: ann and cid with container entries; bob with a remote entry, then revoked
    (`arena competitor add --revoke`); dan with a container entry and eve with a remote one, each revoked
    and added again (a lost token reissued). Returns its config."""
    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk
    from arena.competition.final import freeze
    from arena.config import CompetitionSettings

    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name="fin", port=0, per_day=5, base="x", base_node="x", prefix=PREFIX, root=ROOT))
    out = tmp_path / "out"
    with CompetitionBook(out) as book:
        for name in ("ann", "bob", "cid", "dan", "eve"):
            book.add_competitor(name)
            if name not in ("bob", "eve"):
                sub = book.add_submission(name, f"{name}bot", "1", "python", "m:C")
                book.set_status(sub.id, "accepted", image=f"{PREFIX}/{name}bot:1")
        for name in ("bob", "eve"):
            Desk(CompetitionSettings(), out, book, lambda: None).register_remote(name, f"{name}bot", "next")
    for args in (("bob", "--revoke"), ("dan", "--revoke"), ("dan",), ("eve", "--revoke"), ("eve",)):
        assert arena("competitor", "add", str(cfg), *args).returncode == 0
    with CompetitionBook(out) as book:
        freeze(book)
    return cfg


def test_a_competitor_revoked_before_the_final_is_not_in_it(tmp_path: Path) -> None:
    """Seen hosting: bob was revoked before the freeze, yet the final's config listed his remote entry
    bobbot@1; his tokens were revoked, so each of his final games waited 120 s and was forfeited
    (no_show). A competitor revoked when the final is written is not in it, and the final says so in
    one line; a competitor revoked and added again (a reissued token) plays, but not with a remote entry
    (its bot tokens went with the revoked one: it too would only forfeit)."""
    import argparse
    import tomllib

    from rich.console import Console

    from arena.cli.competing import final_run_args

    cfg = _frozen_competition(tmp_path)
    err = io.StringIO()
    args = argparse.Namespace(config=str(cfg), output=None, games_per_pairing=None, bootstrap=20)
    run = final_run_args(args, Console(file=err, width=400))
    assert isinstance(run, argparse.Namespace), err.getvalue()
    final = tomllib.loads(Path(run.config).read_text())
    assert [b["name"] for b in final["bots"]] == ["annbot@1", "cidbot@1", "danbot@1"]
    # it holds the final's master seed, secret until the final's board reveals it (a remote finalist
    # knowing it would know every deal): its owner's alone, as arena.sqlite
    assert final["tournament"]["master_seed"] and Path(run.config).stat().st_mode & 0o777 == 0o600
    assert final["tournament"]["blind_seats"] is True  # the league's (a competition's default): strangers stay blind
    lines = [ln for ln in err.getvalue().splitlines() if ln.startswith("not in the final")]
    assert lines == ["not in the final: bob (bobbot@1), whose competitor token is revoked",
                     "not in the final: eve (evebot@1), a remote bot whose bot tokens are revoked (revoking a "
                     "competitor revokes them: register it again before the freeze)"], err.getvalue()


def test_a_final_over_is_not_played_on_with_more_games(tmp_path: Path) -> None:
    """Once the final is over its master seed is published: `arena competition final --games-per-pairing N`
    with more games printed a note and played on, dealing games anyone could compute from that seed.
    It is refused now (one line, exit 2), and final.toml is kept as played; run unchanged, it only
    publishes the board again."""
    import argparse

    from rich.console import Console

    from arena.cli.competing import final_run_args
    from arena.tournament.store import Store

    cfg = _frozen_competition(tmp_path)

    def final(gpp: int | None) -> tuple[argparse.Namespace | int, str]:
        err = io.StringIO()
        args = argparse.Namespace(config=str(cfg), output=None, games_per_pairing=gpp, bootstrap=20)
        return final_run_args(args, Console(file=err, width=400)), err.getvalue()

    first, _ = final(6)
    assert isinstance(first, argparse.Namespace)
    played = Path(first.config).read_text()
    with Store(Path(first.config).parent / "arena.sqlite") as store:
        store.set_meta("finished_at", "1.0")  # as `arena run` marks it when it publishes the complete final
    more, said = final(8)
    assert more == 2, said
    assert said.startswith("error: the final is over and its master seed is revealed: 8 games a pairing "
                           "(it was played with 6) would deal games"), said
    assert said.rstrip().endswith("(`--games-per-pairing 6` publishes it again)"), said
    assert len(said.strip().splitlines()) == 1, said
    assert Path(first.config).read_text() == played
    # without the flag (the default, twice the league's 2): it named a "--games-per-pairing 4" never given,
    # and said to run it "unchanged", which this was
    default, said = final(None)
    assert default == 2 and said.startswith("error: the final is over and its master seed is revealed: 4 games a "
                                            "pairing (it was played with 6)"), said
    assert "--games-per-pairing 4" not in said and "`--games-per-pairing 6` publishes it again" in said, said
    again, said = final(6)
    assert isinstance(again, argparse.Namespace), said


def test_the_final_is_refused_while_the_league_folder_is_in_use(tmp_path: Path) -> None:
    """docs/competition.md: stop `arena serve` before the final. `arena competition final` took no lock on
    the league's folder (its own run locks <output>/final), so it ran beside a serve; it now takes the
    league folder's lock, as `arena serve` holds it (held here by this process), and refuses with one
    line, exit 1, writing nothing."""
    from arena.tournament.lock import lock_output

    cfg = _frozen_competition(tmp_path)
    out = tmp_path / "out"
    with lock_output(out):  # what a running `arena serve` of the league holds
        refused = arena("competition", "final", str(cfg))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stdout == "" and refused.stderr.strip().splitlines() == [
        f"error: output folder {out} is in use by another arena (pid {os.getpid()} on host {socket.gethostname()} "
        f"since {refused.stderr.split(' since ')[1].split(')')[0]}); stop `arena serve` first: the final is played "
        "once the league stopped"], refused.stderr
    assert not (out / "final").exists()


def test_the_competitor_commands_say_what_is_wrong_and_make_nothing_to_look(tmp_path: Path) -> None:
    """`arena competitor add|list` of a config with several errors printed `error:` before the first
    line only; each now reads `config error: …`, as `arena run` prints them. And `arena competitor list`
    of a new config made its output folder and competition.sqlite and printed nothing: it now says
    `no competitors yet` and makes nothing."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name="new", port=0, per_day=2, base="x", base_node="x", prefix=PREFIX, root=ROOT))
    listed = arena("competitor", "list", str(cfg))
    assert (listed.returncode, listed.stdout, listed.stderr.strip()) == (0, "", "no competitors yet"), listed
    assert not (tmp_path / "out").exists()
    broken = tmp_path / "broken.toml"
    broken.write_text(cfg.read_text().replace("players = 2", "players = 3").replace("concurrency = 2",
                                                                                    "concurrency = -1"))
    for args in (("add", str(broken), "ann"), ("list", str(broken))):
        done = arena("competitor", *args)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) >= 2, done.stderr
        assert all(line.startswith(f"config error: {broken}: tournament.") for line in lines), done.stderr
    assert arena("competitor", "add", str(cfg), "ann").returncode == 0
    assert arena("competitor", "list", str(cfg)).stdout.split() == ["ann", "live"]


def _hostile_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.py")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    return buf.getvalue()


class Serve:
    """A running `arena serve` of the competition config, its output lines collected."""

    def __init__(self, cfg: Path, log: Path):
        self.cfg, self.log = cfg, log
        self.proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "20",
                                      "--web", "0"],
                                     cwd=ROOT, stdout=log.open("a"), stderr=subprocess.STDOUT, text=True)

    @property
    def web(self) -> str:
        """The web app's base URL (from its line ``web: http://…/``)."""
        line = next(ln for ln in self.log.read_text().splitlines() if ln.startswith("web: "))
        return line.split()[1].rstrip("/")

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text():
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no {text!r} in: {self.log.read_text()[-3000:]}"
            time.sleep(0.3)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return int(self.proc.returncode)


@pytest.fixture
def league(tmp_path: Path) -> Iterator[tuple[Path, int, Serve]]:
    docker_client()  # or skip (no dockerd)
    base, base_node = base_image("python"), base_image("node")
    port = free_port()
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name=f"cmp{os.getpid()}", port=port, per_day=2, base=base, base_node=base_node,
                                 prefix=PREFIX, root=ROOT))
    serve = Serve(cfg, tmp_path / "serve.log")
    try:
        serve.wait_for("serving:")
        yield cfg, port, serve
    finally:
        assert serve.stop() == 0, serve.log.read_text()[-3000:]
        _remove_images(cfg)


def _bot(folder: Path, source: str, module: str) -> Path:
    folder.mkdir()
    (folder / f"{module}.py").write_text(source)
    return folder


def _status(cfg: Path, sid: int) -> tuple[str, str, str]:
    db = sqlite3.connect(cfg.parent / "out" / "competition.sqlite")
    try:
        row = db.execute("SELECT status, step, reason FROM submissions WHERE id = ?", (sid,)).fetchone()
    finally:
        db.close()
    return str(row[0]), str(row[1]), str(row[2])


def tag_of(cfg: Path, name: str, version: str) -> str:
    """The image tag of submission ``name`` ``version`` in the competition of ``cfg`` (output ``out`` beside
    it): ``PREFIX/KEY/NAME:VERSION`` (:func:`arena.competition.pipeline.submission_tag`)."""
    from arena.competition.pipeline import submission_tag
    from arena.config import CompetitionSettings

    return submission_tag(CompetitionSettings(image_prefix=PREFIX), cfg.parent / "out", name, version)


def _code(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code(), e.value.details()


def test_competitors_submit_and_the_league_grows(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    cfg, port, serve = league
    address = f"127.0.0.1:{port}"
    tokens = {n: arena("competitor", "add", str(cfg), n).stdout.strip() for n in ("alice", "bob")}
    anon = SubmissionClient(address, "")
    code, details = _code(anon.submissions)
    assert code == grpc.StatusCode.UNAUTHENTICATED and "\n" not in details
    code, _ = _code(SubmissionClient(address, "not-a-token").submissions)
    assert code == grpc.StatusCode.UNAUTHENTICATED

    good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
    env = {"ALLFOURS_COMPETITOR_TOKEN": tokens["alice"]}
    done = arena("submit", str(good), "--arena", address, "--name", "rando", "--entry", "random_bot:RandomBot",
                 "--wait", env=env, timeout=900)
    assert done.returncode == 0, done.stderr
    sid = int(done.stdout.strip())
    assert "rando@1 received" in done.stderr and "rando@1 rated" in done.stderr, done.stderr
    for seen in ("building", "validating"):
        assert seen in done.stderr or "accepted" in done.stderr
    assert "rando@1 enters the league" in serve.log.read_text()  # no SIGHUP was sent: the league grew by itself

    bob = SubmissionClient(address, tokens["bob"])
    code, details = _code(lambda: bob.get(sid))
    assert code == grpc.StatusCode.NOT_FOUND and details == f"no submission {sid} of yours"  # as an unknown id
    code, details = _code(lambda: bob.submit(_hostile_archive(), "evil"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "escaping the submission's folder" in details
    code, details = _code(lambda: bob.submit(os.urandom(300_000), "big"))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "upload limit" in details

    broken = _bot(tmp_path / "broken", BROKEN, "broken")
    rejected = arena("submit", str(broken), "--arena", address, "--entry", "broken:Broken", "--wait",
                     env={"ALLFOURS_COMPETITOR_TOKEN": tokens["bob"]}, timeout=900)
    assert rejected.returncode == 1, rejected.stderr
    assert "broken@1 rejected (validation: failing checks: players-2" in rejected.stderr, rejected.stderr
    assert "broken bot gives up here" in rejected.stderr  # the bot's own log tail
    assert not docker_client().images.list(filters={"reference": tag_of(cfg, "broken", "1")})  # a rejected image goes

    bob.submit(pack(broken), "broken", entry="broken:Broken")  # the second of bob's day
    code, details = _code(lambda: bob.submit(pack(broken), "broken", entry="broken:Broken"))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "try again after" in details, details

    mine = arena("submissions", "--arena", address, env=env)
    assert mine.returncode == 0 and "rando@1" in mine.stdout and "broken" not in mine.stdout
    ratings = (cfg.parent / "out" / "ratings.json").read_text()
    assert '"rando@1"' in ratings

    assert arena("competition", "freeze", str(cfg)).returncode == 0
    code, details = _code(lambda: SubmissionClient(address, tokens["alice"]).submit(pack(good), "rando",
                                                                                   entry="random_bot:RandomBot"))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "frozen" in details


def test_the_hosts_commands_reach_a_serve_whose_pages_were_read(league: tuple[Path, int, Serve],
                                                                 tmp_path: Path) -> None:
    """The pages (/me, the board) open the book again inside `arena serve`; what the host's commands
    write afterwards must still reach the running serve, and the freeze must outlive its stop. Seen
    hosting by docs/competition.md: after a page was read, a competitor added later was refused, a
    revoked token stayed live, a running serve accepted a submission after the freeze, and at its
    stop the freeze and the committed seed were gone from the file (its WAL had been deleted under it)."""
    cfg, port, serve = league
    address = f"127.0.0.1:{port}"
    ann = arena("competitor", "add", str(cfg), "ann").stdout.strip()
    assert "sign in" in _get(serve.web + "/me")
    _get(serve.web + "/")
    ben = arena("competitor", "add", str(cfg), "ben").stdout.strip()
    assert SubmissionClient(address, ben).submissions() == []
    assert arena("competitor", "add", str(cfg), "ann", "--revoke").returncode == 0
    code, _ = _code(SubmissionClient(address, ann).submissions)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    frozen = arena("competition", "freeze", str(cfg))
    assert frozen.returncode == 0
    good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
    code, details = _code(lambda: SubmissionClient(address, ben).submit(pack(good), "ben-bot",
                                                                         entry="random_bot:RandomBot"))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "frozen" in details
    assert serve.stop() == 0
    again = arena("competition", "freeze", str(cfg))
    assert again.stdout == frozen.stdout  # the same commitment: the seed drawn at the freeze is still there


#: Reads a test asks after the first until one is refused at ``reads_per_minute = 1`` (fewer than the
#: 30 at once of the default 120 a minute, so only the new limit refuses one).
READ_TRIES = 8


def test_sighup_applies_a_changed_competition_table(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    """`arena serve` re-reads its config on SIGHUP (docs/arena.md): that includes [competition]. Seen
    hosting by docs/competition.md: a host who had left base_python out, then set it and sent SIGHUP,
    saw the next submission built from the official image again (a registry this host cannot reach),
    and nothing said that the change was not taken."""
    cfg, port, serve = league
    token = arena("competitor", "add", str(cfg), "uma").stdout.strip()
    cfg.write_text(cfg.read_text().replace("upload_bytes = 200000", "upload_bytes = 1024\nreads_per_minute = 1"))
    serve.proc.send_signal(signal.SIGHUP)
    serve.wait_for("[competition] re-read: upload_bytes, reads_per_minute")
    good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
    (good / "data.bin").write_bytes(os.urandom(4096))  # past the new limit, not the old one
    code, details = _code(lambda: SubmissionClient(f"127.0.0.1:{port}", token).submit(
        pack(good), "uma-bot", entry="random_bot:RandomBot"))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "upload limit" in details, details
    # reads_per_minute = 1: one read at once, the next a minute later, on the service and on the pages alike.
    # The first read is always allowed (a new bucket is full); a later one only a minute after the one before,
    # which a busy machine may take: reads are asked until one is refused, so two in the same minute meet the
    # limit whatever the pace, and the old limit (120 a minute, 30 at once) would allow all READ_TRIES of them.
    client = SubmissionClient(f"127.0.0.1:{port}", token)
    assert client.submissions() == []
    details = ""
    for _ in range(READ_TRIES):
        try:
            client.games()
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.details()
            details = str(e.details())
            break
    assert "too many reads: at most 1 a minute (reads_per_minute), 1 at once" in details, details
    with httpx.Client(base_url=serve.web) as web:
        assert web.post("/me/login", data={"token": token}).status_code == 303  # signing in is no read
        assert web.get("/me").status_code == 200  # the pages' own allowance: its first read
        pages = [web.get("/me") for _ in range(READ_TRIES)]
        refused = next((r for r in pages if r.status_code != 200), None)
        assert refused is not None and refused.status_code == 429, [r.status_code for r in pages]
        assert "too many reads: at most 1 a minute (reads_per_minute), 1 at once" in refused.text, refused.text
    cfg.write_text(cfg.read_text().replace("[competition]", "[competitio]"))
    serve.proc.send_signal(signal.SIGHUP)
    serve.wait_for("the new config is refused, the old one stays")


def test_a_missing_base_image_is_the_hosts_failure_not_the_competitors(tmp_path: Path) -> None:
    """Seen hosting by docs/competition.md without base_python/base_node on a host that reaches no
    registry: every source submission was rejected at its build with docker's "no such host", each
    one costing the competitor a submission of their day. `arena serve` now says at its start which
    key to set; such a build is `failed` (the arena's fault) with the host's fix, and not counted; once the
    host has mended it, `arena competition retry` builds the submission as it was made."""
    # Not here, and its registry is this machine's port 9 (nothing listens): the pull the queue tries is
    # refused on loopback, so the test sends nothing off the machine (a docker.io name would be looked up)
    missing = f"127.0.0.1:9/allfours-nobase:{os.getpid()}"
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name=f"nobase{os.getpid()}", port=free_port(), per_day=1, base=missing,
                                 base_node=missing + "-node", prefix=PREFIX, root=ROOT))
    serve = Serve(cfg, tmp_path / "serve.log")
    try:
        serve.wait_for("serving:")
        log = serve.log.read_text()
        for key, kind in (("base_python", "python"), ("base_node", "node")):
            line = next((ln for ln in log.splitlines() if f"[competition] {key}" in ln), log)
            assert "warning:" in line and f"bash docker/base-image.sh {kind}" in line, log
        port = int(cfg.read_text().split('lobby = "127.0.0.1:')[1].split('"')[0])
        env = {"ALLFOURS_COMPETITOR_TOKEN": arena("competitor", "add", str(cfg), "dora").stdout.strip()}
        good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
        for version in ("1", "2"):  # the second is not refused for the day: the first was the host's fault
            done = arena("submit", str(good), "--arena", f"127.0.0.1:{port}", "--name", "dora-bot", "--version",
                         version, "--entry", "random_bot:RandomBot", "--wait", env=env, timeout=300)
            assert done.returncode == 1, done.stderr
            assert f"dora-bot@{version} failed (build: " in done.stderr and "base_python" in done.stderr, done.stderr
            status, _, reason = _status(cfg, int(done.stdout.strip()))
            assert status == "failed" and "\n" not in reason and "base-image.sh python" in reason, reason
        # the host mends it (here: the base under the name the config gives) and retries the second one:
        # the running serve builds it as it was submitted, version and all; the first stays failed
        subprocess.run(["docker", "tag", base_image("python"), missing], check=True, timeout=60)
        retried = arena("competition", "retry", str(cfg), str(int(done.stdout.strip())))
        assert retried.returncode == 0 and "dora-bot@2 received" in retried.stdout, retried
        deadline = time.monotonic() + 900
        while (status := _status(cfg, int(done.stdout.strip()))[0]) in ("received", "building", "validating"):
            assert time.monotonic() < deadline, status
            time.sleep(1)
        assert status in ("accepted", "playing", "rated"), _status(cfg, int(done.stdout.strip()))
        assert _status(cfg, int(done.stdout.strip()) - 1)[0] == "failed"  # dora-bot@1: not asked for
    finally:
        subprocess.run(["docker", "rmi", "-f", missing], capture_output=True, timeout=60)
        assert serve.stop() == 0, serve.log.read_text()[-3000:]
        # the accepted dora-bot@2's image, as the league fixture removes its own: each run left one tag
        # (docs/competition.md, step 8: the host's to remove, here the test's)
        _remove_images(cfg)


def _remove_images(cfg: Path) -> None:
    """Remove every image of the competition of ``cfg`` (its ``PREFIX/KEY/*`` tags), and check none is left."""
    client = docker_client()
    mine = {"reference": tag_of(cfg, "*", "*").rpartition(":")[0]}  # this test's images, not another checkout's
    for image in client.images.list(filters=mine):
        for tag in image.tags:
            client.images.remove(tag, force=True)
    assert not client.images.list(filters=mine)


def test_a_restart_mid_build_resumes_the_submission(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    cfg, port, serve = league
    token = arena("competitor", "add", str(cfg), "carol").stdout.strip()
    # A good bot slow to start: 8 s, so an untethered suite would outlive the 4 s below (the arena is
    # killed as soon as the suite starts, before its container is up), while its imports in a container
    # of a busy machine keep 22 s of the 30 s startup limit (with 20 s of sleep, 10 s was too little:
    # under load the restarted validation failed "join", the bot killed at the limit).
    good = _bot(tmp_path / "goodbot", GOOD + "\n__import__(\"time\").sleep(8)\n", "random_bot")
    sub = SubmissionClient(f"127.0.0.1:{port}", token).submit(pack(good), "carol-bot", entry="random_bot:RandomBot")
    deadline = time.monotonic() + 300
    while not (suites := _children(serve.proc.pid, "sdk.conformance")):  # validation takes seconds: caught there
        assert _status(cfg, sub.id)[0] in ("received", "building", "validating"), _status(cfg, sub.id)
        assert time.monotonic() < deadline, _status(cfg, sub.id)
        time.sleep(0.05)
    serve.proc.kill()  # SIGKILL mid-validation: nothing is told
    serve.proc.wait(30)
    deadline = time.monotonic() + 4  # the suite dies with the arena (it would wait on for the slow bot)
    while any(running(pid) for pid in suites):
        assert time.monotonic() < deadline, f"the conformance suite {suites} outlived the killed arena"
        time.sleep(0.1)
    again = Serve(cfg, tmp_path / "serve-again.log")
    serve.proc, serve.log = again.proc, again.log
    again.wait_for("serving:")
    assert "1 submission(s) in the build queue" in serve.log.read_text()
    deadline = time.monotonic() + 900
    while _status(cfg, sub.id)[0] not in ("accepted", "playing", "rated", "rejected", "failed"):
        assert time.monotonic() < deadline, _status(cfg, sub.id)
        time.sleep(1)
    assert _status(cfg, sub.id)[0] in ("accepted", "playing", "rated"), _status(cfg, sub.id)


def test_a_validation_container_goes_with_a_killed_serve(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    """docs/competition.md: a validation under way when `arena serve` is killed is killed with it. The
    suite was (tethered), but the `docker run` it had started went on as an orphan, and with it the
    submission's container, until the bot ended on its own (20-30 s; here it would be 600). A validation's
    containers carry the run's label now: the sandbox's reaper removes them with the game containers once
    the arena is gone, and the orphaned `docker run` ends with its container."""
    cfg, port, serve = league
    client = docker_client()
    token = arena("competitor", "add", str(cfg), "dave").stdout.strip()
    slow = _bot(tmp_path / "slowbot", GOOD + "\n__import__(\"time\").sleep(600)\n", "random_bot")
    sub = SubmissionClient(f"127.0.0.1:{port}", token).submit(pack(slow), "dave-bot", entry="random_bot:RandomBot")
    image = tag_of(cfg, "dave-bot", sub.version)
    key = image.split("/")[1]  # the run key
    mine = {"label": f"org.allfours.validate={PREFIX}-{key}-sub{sub.id}", "ancestor": image}
    deadline = time.monotonic() + 600
    while not client.containers.list(filters={**mine, "status": "running"}):
        assert _status(cfg, sub.id)[0] in ("received", "building", "validating"), _status(cfg, sub.id)
        assert time.monotonic() < deadline, _status(cfg, sub.id)
        time.sleep(0.2)
    serve.proc.kill()  # SIGKILL mid-validation, its bot's container up
    serve.proc.wait(30)
    deadline = time.monotonic() + 120  # the reaper looks every 0.5 s; the bot would sleep for 600 s
    # the low-level list: containers.list() inspects each container it lists, and one the reaper removes
    # in between raises NotFound
    while client.api.containers(all=True, filters=mine) or _clis(image):
        assert time.monotonic() < deadline, (client.api.containers(all=True, filters=mine), _clis(image))
        time.sleep(0.5)
    again = Serve(cfg, tmp_path / "serve-again.log")  # for the fixture's clean stop
    serve.proc, serve.log = again.proc, again.log
    again.wait_for("serving:")


def _clis(needle: str) -> list[int]:
    """The live processes of this machine whose command line holds ``needle`` (an orphaned `docker run`
    of an image)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd and running(int(proc.name)):
            found.append(int(proc.name))
    return found


def _children(pid: int, needle: str) -> list[int]:
    """The live processes below ``pid`` whose command line holds ``needle``."""
    found = []
    for kid in descendants(pid):
        try:
            cmd = Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            found.append(kid)
    return found


def _worker(port: int, token: str, name: str, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                             f"127.0.0.1:{port}", "--token", token, "--name", name, "--workers", "2", "--reconnect",
                             "60"],
                            cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r:
        return str(r.read().decode())


def _board_rows(html: str) -> list[str]:
    """The entrants of the board's ratings table."""
    import re

    return re.findall(r'<td class="l bot">([^<]+)</td>', html)


def _wait_rated(client: SubmissionClient, sid: int) -> None:
    last = client.follow(sid, lambda s: None, 300)
    assert last.status == "rated", last


def test_a_remote_entry_registered_through_the_api_plays(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    cfg, port, serve = league
    token = arena("competitor", "add", str(cfg), "erin").stdout.strip()
    erin = SubmissionClient(f"127.0.0.1:{port}", token)
    sub, bot_token = erin.register_remote("erin-remote")
    assert sub.entrant == "erin-remote@1" and sub.status == "accepted" and len(bot_token) >= 32
    store = (cfg.parent / "out" / "arena.sqlite").read_bytes()
    assert bot_token.encode() not in store  # only its SHA-256
    code, details = _code(lambda: erin.register_remote("erin-remote", "1"))
    assert code == grpc.StatusCode.ALREADY_EXISTS and "give a new --version" in details
    workers = [_worker(port, bot_token, sub.entrant, tmp_path / "worker.log")]
    try:
        last = erin.follow(sub.id, lambda s: None, 300)
        assert last.status == "rated", (last.status, serve.log.read_text()[-2000:])
        games = erin.games()
        assert games and all(sub.entrant in (g.a, g.b) for g in games)
        assert all(g.score_a + g.score_b > 0 for g in games)  # played by the worker, not forfeited as no-shows
        newer, newer_token = erin.register_remote("erin-remote")  # in_play = 1: the older version retires
        workers.append(_worker(port, newer_token, newer.entrant, tmp_path / "worker2.log"))
        assert newer.entrant == "erin-remote@2"
        by_id = {s.id: s for s in erin.submissions()}
        assert by_id[sub.id].retired and not by_id[newer.id].retired
        assert by_id[sub.id].games == len(games)  # its games are kept
        _wait_rated(erin, newer.id)
        board = _get(f"{serve.web}/_board")
        every = _get(f"{serve.web}/_board?versions=all")
        shown, all_shown = _board_rows(board), _board_rows(every)
        assert len([n for n in shown if n.startswith("erin-remote@")]) == 1  # the best-rated version alone
        assert "1 other version(s) hidden" in board
        assert {"erin-remote@1", "erin-remote@2"} <= set(all_shown)
    finally:
        for w in workers:
            w.terminate()
            w.wait(30)


#: A house bot that plays at once its first two times (the league's check: one process a seat of a practice match)
#: and later holds its game until the file ``gate`` beside it exists: the league's games in flight go on, so a
#: reload asked for meanwhile waits.
GATED_BOT = """
import os, pathlib, sys, time
here = pathlib.Path(__file__).parent
n = 0
while True:
    try:
        os.close(os.open(here / f"run-{n}", os.O_CREAT | os.O_EXCL))
        break
    except FileExistsError:
        n += 1
while n > 1 and not (here / "gate").exists():
    time.sleep(0.1)
os.execv(sys.executable, [sys.executable, "-m", "arena.testing.instant_bot"])
"""


def test_a_remote_worker_started_as_registered_is_accepted_before_the_league_reloads(tmp_path: Path) -> None:
    """Seen on a busy machine: a competitor's worker, started as soon as RegisterRemote gave its token, was
    refused "unknown or revoked bot token" (a permanent refusal: it exited), since the lobby learnt the token
    only at the league's reload, after the games in flight. Here the house's games are held in flight (their
    bot ``two`` waits for a gate file), so the league cannot reload: the worker is accepted all the same, waits,
    and once the gate opens and the league reloads, plays every game of its entry to a real score."""
    docker_client()  # or skip (no dockerd)
    gated = tmp_path / "gated"
    gated.mkdir()
    (gated / "bot.py").write_text(GATED_BOT)
    port = free_port()
    cfg = tmp_path / "c.toml"
    house_two = 'name = "two"\nsandbox = "none"\ncommand = ["{python}", "-m", "arena.testing.instant_bot"]'
    text = CONFIG.format(name=f"held{os.getpid()}", port=port, per_day=1, base=base_image("python"),
                         base_node=base_image("node"), prefix=PREFIX, root=ROOT)
    assert house_two in text
    cfg.write_text(text.replace("join_ms = 30000", "join_ms = 600000")
                   .replace(house_two, house_two.replace('"-m", "arena.testing.instant_bot"', f'"{gated / "bot.py"}"')))
    serve = Serve(cfg, tmp_path / "serve.log")
    worker = None
    try:
        serve.wait_for("serving:")
        deadline = time.monotonic() + 120
        while not (gated / "run-2").exists():  # checked (runs 0 and 1), then a house game held in flight
            assert time.monotonic() < deadline, serve.log.read_text()[-3000:]
            time.sleep(0.2)
        erin = SubmissionClient(f"127.0.0.1:{port}", arena("competitor", "add", str(cfg), "erin").stdout.strip())
        sub, bot_token = erin.register_remote("erin-remote")
        log = tmp_path / "worker.log"
        worker = _worker(port, bot_token, sub.entrant, log)
        while "registered at" not in log.read_text():
            assert worker.poll() is None, f"the worker exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
        assert not _stored_sides(cfg)  # the league has not reloaded: its games are still held
        (gated / "gate").touch()
        last = erin.follow(sub.id, lambda s: None, 300)
        assert last.status == "rated", (last.status, serve.log.read_text()[-2000:], log.read_text()[-2000:])
        games = erin.games()
        assert games and all(g.score_a + g.score_b > 0 for g in games)  # played by the worker, none forfeited
        assert worker.poll() is None, log.read_text()[-2000:]
    finally:
        (gated / "gate").touch()
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        assert serve.stop() == 0, serve.log.read_text()[-3000:]
        _remove_images(cfg)


def _stored_sides(cfg: Path) -> list[tuple[str, str]]:
    """The sides of every game the league of ``cfg`` (output ``out`` beside it) has stored, read while it runs."""
    db = cfg.parent / "out" / "arena.sqlite"
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
        return [(str(a), str(b)) for a, b in con.execute("SELECT side0, side1 FROM games")]


def test_a_remote_entry_whose_workers_start_late_plays_every_game(tmp_path: Path) -> None:
    """Seen hosting: a competitor registered a remote entry, started its workers a few minutes later, and all
    its games were already lost as no_show (no_show_s had passed). Its games now wait for its first worker,
    the house's games go on, `arena submissions` says so, and when the worker comes every game of it is
    played to a real score, though no_show_s is 1 s. The web says it too, from the store's word (as `arena
    web` in another process would read it): the competitor's /me the same note, the public board a marker
    beside the entry; both gone once its worker came and played."""
    from arena.competition.desk import WAITING_NOTE

    docker_client()  # or skip (no dockerd)
    port = free_port()
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name=f"late{os.getpid()}", port=port, per_day=1, base=base_image("python"),
                                 base_node=base_image("node"), prefix=PREFIX, root=ROOT)
                   .replace("lobby = ", "no_show_s = 1\nlobby = "))
    serve = Serve(cfg, tmp_path / "serve.log")
    worker = None
    try:
        serve.wait_for("serving:")
        token = arena("competitor", "add", str(cfg), "erin").stdout.strip()
        erin = SubmissionClient(f"127.0.0.1:{port}", token)
        sub, bot_token = erin.register_remote("erin-remote")
        assert sub.reason == WAITING_NOTE, sub
        serve.wait_for("'erin-remote@1' wait for their first worker")
        deadline = time.monotonic() + 120
        while len(_stored_sides(cfg)) < 2:  # the house's games (one v two) are played meanwhile
            assert time.monotonic() < deadline, serve.log.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(3)  # three times no_show_s: its games would be forfeited by now, were they not waited for
        assert erin.games() == [] and {s.id: s.reason for s in erin.submissions()} == {sub.id: WAITING_NOTE}
        web = httpx.Client(base_url=serve.web)
        assert web.post("/me/login", data={"token": token}).status_code == 303
        assert WAITING_NOTE in _my_reasons(web), web.get("/me").text
        assert "erin-remote@1" in _waiting_on_board(web)
        worker = _worker(port, bot_token, sub.entrant, tmp_path / "worker.log")
        _wait_rated(erin, sub.id)
        games = erin.games()
        assert len(games) == 4 and all(g.score_a + g.score_b > 0 for g in games), games  # none a no_show forfeit
        assert {s.id: s.reason for s in erin.submissions()} == {sub.id: ""}
        assert _my_reasons(web) == [""] and _waiting_on_board(web) == []
        assert "erin-remote@1" in _board_rows(web.get("/_board").text)  # rated now, without the marker
        web.close()
        house = [sides for sides in _stored_sides(cfg) if "erin-remote@1" not in sides]
        assert sorted(map(sorted, house)) == [["one", "two"]] * 2, house  # the house's games went on meanwhile
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        assert serve.stop() == 0, serve.log.read_text()[-3000:]
        _remove_images(cfg)


def _my_reasons(web: httpx.Client) -> list[str]:
    """The reason column of the signed-in competitor's submissions on /me (its own page), as shown."""
    page = web.get("/me")
    assert page.status_code == 200, page.text
    rows = re.search(r'<table id="submissions">(.*?)</table>', page.text, re.S)
    assert rows, page.text
    return [html.unescape(r) for r in re.findall(r'<td class="l">(.*?)</td></tr>', rows.group(1), re.S)]


def _waiting_on_board(web: httpx.Client) -> list[str]:
    """The entrants the public board marks as waiting for their workers (its #waiting line and the marker
    beside a rated entry alike)."""
    board = web.get("/_board").text
    line = re.search(r'<p class="meta" id="waiting">(.*?)</p>', board, re.S)
    listed = re.findall(r'<span class="bot">(.*?)</span>', line.group(1)) if line else []
    marked = re.findall(r'<td class="l bot">([^<]*?) <span class="waiting">waiting for its workers</span>', board)
    return sorted({*listed, *marked})


def test_a_remote_entry_plays_from_another_address_than_the_sandbox_gateway(tmp_path: Path) -> None:
    """A competition whose lobby is on an address of this machine other than loopback and the container
    sandbox's gateway (docker's default bridge, standing for an address other machines reach): a remote
    entry's worker dialling only that address is told the embedded referee there, not the gateway (which
    only this machine reaches: the entry could not play from elsewhere), plays its games to real scores,
    and the referee listening there has no AdminService (CreateMatch is UNIMPLEMENTED, not refused)."""
    import ipaddress

    client = docker_client()
    host = docker0_address(client)  # docker0: this machine
    with socket.socket() as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name=f"rem{os.getpid()}", port=port, per_day=1, base=base_image("python"),
                                 base_node=base_image("node"), prefix=PREFIX, root=ROOT)
                   .replace('lobby = "127.0.0.1:', f'lobby = "{host}:'))
    serve = Serve(cfg, tmp_path / "serve.log")
    worker = None
    try:
        serve.wait_for("serving:")
        found = re.search(r"container bots on network \S+ \(([^)]+)\)", serve.log.read_text())
        assert found, serve.log.read_text()[-3000:]
        subnet = ipaddress.ip_network(found.group(1))
        token = arena("competitor", "add", str(cfg), "erin").stdout.strip()
        erin = SubmissionClient(f"{host}:{port}", token)
        sub, bot_token = erin.register_remote("erin-remote")
        worker = subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                                   f"{host}:{port}", "--token", bot_token, "--name", sub.entrant, "--reconnect", "60",
                                   "--log-level", "debug"], cwd=ROOT, stdout=(tmp_path / "worker.log").open("w"),
                                  stderr=subprocess.STDOUT, text=True)
        _wait_rated(erin, sub.id)
        games = erin.games()
        assert games and all(g.score_a + g.score_b > 0 for g in games)  # played, not forfeited as no-shows
        told = set(re.findall(r"seat \d+: referee (\S+)", (tmp_path / "worker.log").read_text()))
        assert len(told) == 1, told
        referee = told.pop()
        assert referee.rpartition(":")[0] == host and ipaddress.ip_address(host) not in subnet, (referee, subnet)
        with grpc.insecure_channel(referee) as channel:
            code, _ = _code(lambda: pb_grpc.AdminServiceStub(channel).CreateMatch(
                pb.CreateMatchRequest(rules=pb.RuleSet(players=2, target=5), seat_names=["a", "b"]), timeout=30))
        assert code == grpc.StatusCode.UNIMPLEMENTED
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        assert serve.stop() == 0, serve.log.read_text()[-3000:]


def test_a_competitor_sees_their_own_page_in_a_browser(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    from web_helpers import chromium

    cfg, port, serve = league
    address = f"127.0.0.1:{port}"
    tokens = {n: arena("competitor", "add", str(cfg), n).stdout.strip() for n in ("alice", "bob")}
    with chromium() as browser:
        alice_ctx = browser.new_context(accept_downloads=True)
        page = alice_ctx.new_page()
        urls: list[str] = []
        page.on("request", lambda r: urls.append(r.url))
        page.goto(f"{serve.web}/me")
        page.fill("#token", tokens["alice"])
        page.click("#login button")
        assert page.inner_text("#who") == "alice"
        cookie = next(c for c in alice_ctx.cookies() if c["name"] == "af_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

        good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
        done = arena("submit", str(good), "--arena", address, "--name", "webbot", "--entry", "random_bot:RandomBot",
                     "--wait", env={"ALLFOURS_COMPETITOR_TOKEN": tokens["alice"]}, timeout=900)
        assert done.returncode == 0 and "webbot@1 rated" in done.stderr, done.stderr
        page.reload()
        assert page.inner_text("#submissions .status") == "rated"
        log_link = page.locator("a.log").first
        href = str(log_link.get_attribute("href"))
        with page.expect_download() as dl:
            log_link.click()
        assert "hello from a good bot" in Path(dl.value.path()).read_text()
        assert dl.value.suggested_filename.endswith(".log")
        page.locator("a.replay").first.click()
        page.wait_for_url("**/games/*")
        assert page.title()
        assert not any(tokens["alice"] in u for u in urls)

        game_id, seat = href.split("/")[-2], int(href.split("/")[-1])
        other_seat = f"/me/logs/{game_id}/{1 - seat}"
        assert page.goto(f"{serve.web}{other_seat}").status == 403  # the house bot's seat: not alice's
        bob_ctx = browser.new_context()
        bob = bob_ctx.new_page()
        assert bob.goto(f"{serve.web}{href}").status == 401  # no session
        bob.goto(f"{serve.web}/me")
        bob.fill("#token", tokens["bob"])
        bob.click("#login button")
        refused = bob.goto(f"{serve.web}{href}")
        assert refused.status == 403 and "is not yours" in refused.text()
    code, _ = _code(lambda: SubmissionClient(address, tokens["bob"]).seat_log(game_id, seat))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert SubmissionClient(address, tokens["alice"]).seat_log(game_id, seat) is not None


def test_a_good_nodejs_submission_is_accepted_and_rated(league: tuple[Path, int, Serve]) -> None:
    cfg, port, _ = league
    token = arena("competitor", "add", str(cfg), "dave").stdout.strip()
    dave = SubmissionClient(f"127.0.0.1:{port}", token)
    sub = dave.submit(pack(ROOT / "sample_bots" / "js"), "jsbot")  # node_modules is left out: npm ci rebuilds it
    last = dave.follow(sub.id, lambda s: None, 900)
    assert last.status == "rated", (last.status, last.step, last.reason, last.log_tail[-1500:])
    assert '"jsbot@1"' in (cfg.parent / "out" / "ratings.json").read_text()


def test_a_rejected_submission_keeps_its_receipt_and_log_not_its_files(league: tuple[Path, int, Serve],
                                                                         tmp_path: Path) -> None:
    """A rejected submission's unpacked folder (up to ``unpacked_bytes``, never built again) stayed on the
    host's disk for good: a competitor's day of rejections, every day. It goes once rejected; what says
    why stays: its status, reason and log tail in the book (served to its competitor), and its receipt
    (the archive's SHA-256 and size, 0600, in a 0700 folder)."""
    import hashlib
    import json

    cfg, port, _ = league
    token = arena("competitor", "add", str(cfg), "bob").stdout.strip()
    bob = SubmissionClient(f"127.0.0.1:{port}", token)
    archive = pack(_bot(tmp_path / "broken", BROKEN, "broken"))
    sub = bob.submit(archive, "broken", entry="broken:Broken")
    last = bob.follow(sub.id, lambda s: None, 900)
    assert (last.status, last.step) == ("rejected", "validation"), (last.status, last.reason)
    folder = cfg.parent / "out" / "submissions" / str(sub.id)
    assert sorted(p.name for p in folder.iterdir()) == ["upload.json"]
    receipt = folder / "upload.json"
    assert json.loads(receipt.read_text()) == {"sha256": hashlib.sha256(archive).hexdigest(), "bytes": len(archive)}
    assert (receipt.stat().st_mode & 0o777, folder.stat().st_mode & 0o777) == (0o600, 0o700)
    seen = bob.get(sub.id)  # what the competitor is served, after the files went
    assert seen.status == "rejected" and "failing checks: players-2" in seen.reason
    assert "broken bot gives up here" in seen.log_tail


def test_a_superseded_versions_files_go_and_the_current_one_plays(league: tuple[Path, int, Serve],
                                                                   tmp_path: Path) -> None:
    """An accepted version's unpacked folder stays while it is scheduled (what it would be rebuilt from;
    it runs from its image); once a newer version retires it, nothing needs it and it goes, its receipt
    kept. The league plays the current version on."""
    cfg, port, serve = league
    token = arena("competitor", "add", str(cfg), "alice").stdout.strip()
    alice = SubmissionClient(f"127.0.0.1:{port}", token)
    good = pack(_bot(tmp_path / "goodbot", GOOD, "random_bot"))
    subs = cfg.parent / "out" / "submissions"
    first = alice.submit(good, "rando", entry="random_bot:RandomBot")
    assert alice.follow(first.id, lambda s: None, 900).status == "rated"
    assert (subs / str(first.id) / "bot" / "random_bot.py").is_file()  # scheduled: kept
    second = alice.submit(good, "rando", entry="random_bot:RandomBot")
    last = alice.follow(second.id, lambda s: None, 900)
    assert last.status == "rated", (last.status, last.reason, last.log_tail[-1500:])  # rando@2 played its games
    assert alice.get(first.id).retired
    assert sorted(p.name for p in (subs / str(first.id)).iterdir()) == ["upload.json"]
    assert sorted(p.name for p in (subs / str(second.id)).iterdir()) == ["bot", "upload.json"]
    assert "rando@2 enters the league" in serve.log.read_text()
    assert '"rando@2"' in (cfg.parent / "out" / "ratings.json").read_text()


def test_freeze_then_final_plays_the_chosen_entries(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    import hashlib
    import json

    cfg, port, serve = league
    address = f"127.0.0.1:{port}"
    tokens = {n: arena("competitor", "add", str(cfg), n).stdout.strip() for n in ("fay", "gus")}
    good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
    fay, gus = SubmissionClient(address, tokens["fay"]), SubmissionClient(address, tokens["gus"])
    first = fay.submit(pack(good), "fay-bot", entry="random_bot:RandomBot")
    assert fay.follow(first.id, lambda s: None, 900).status == "rated"
    second = fay.submit(pack(good), "fay-bot", entry="random_bot:RandomBot")
    assert fay.follow(second.id, lambda s: None, 900).status == "rated"
    assert not (cfg.parent / "out" / "submissions" / str(first.id) / "bot").exists()  # retired: plays from its image
    other = gus.submit(pack(good), "gus-bot", entry="random_bot:RandomBot")
    assert gus.follow(other.id, lambda s: None, 900).status == "rated"
    chose = arena("submit", "--select", str(first.id), "--arena", address,
                  env={"ALLFOURS_COMPETITOR_TOKEN": tokens["fay"]})
    assert chose.returncode == 0 and "fay-bot@1" in chose.stderr, chose.stderr
    code, _ = _code(lambda: gus.select(first.id))
    assert code == grpc.StatusCode.NOT_FOUND

    frozen = arena("competition", "freeze", str(cfg))
    committed = frozen.stdout.strip()
    assert frozen.returncode == 0 and len(committed) == 64
    code, details = _code(lambda: gus.submit(pack(good), "gus-bot", entry="random_bot:RandomBot"))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "frozen" in details and "\n" not in details
    assert serve.stop() == 0

    final = arena("competition", "final", str(cfg), "--bootstrap", "20", timeout=900)
    assert final.returncode == 0, final.stdout[-2000:] + final.stderr[-2000:]
    published = json.loads((cfg.parent / "out" / "final" / "ratings.json").read_text())
    assert published["publication"] == "final" and published["tournament"]["name"].endswith(" final")
    assert sorted(published["ratings"]) == ["fay-bot@1", "gus-bot@1"]  # fay's choice, not her latest
    assert published["ratings"]["fay-bot@1"]["games"] == 4  # twice the league's 2 a pairing
    seed = published["tournament"]["master_seed"]
    assert hashlib.sha256(bytes.fromhex(seed)).hexdigest() == committed


def test_the_submission_service_speaks_the_lobbys_tls(tmp_path: Path) -> None:
    """Same port, same TLS: with lobby_tls_cert/key the Submission service answers over TLS only."""
    from tests.test_tls import make_cert

    docker_client()
    cert, key = make_cert(tmp_path)
    port = free_port()
    cfg = tmp_path / "c.toml"
    text = CONFIG.format(name=f"cmptls{os.getpid()}", port=port, per_day=2, base="x", base_node="x", prefix=PREFIX,
                         root=ROOT)
    cfg.write_text(text.replace("[tournament.time_control]",
                                f'lobby_tls_cert = "{cert}"\nlobby_tls_key = "{key}"\n[tournament.time_control]'))
    serve = Serve(cfg, tmp_path / "serve.log")
    try:
        serve.wait_for("serving:")
        token = arena("competitor", "add", str(cfg), "hal").stdout.strip()
        env = {"ALLFOURS_COMPETITOR_TOKEN": token}
        over_tls = arena("submissions", "--arena", f"localhost:{port}", "--tls-ca", str(cert), env=env)
        assert over_tls.returncode == 0 and "entrant" in over_tls.stdout, over_tls.stderr
        code, _ = _code(SubmissionClient(f"127.0.0.1:{port}", token).submissions)
        assert code == grpc.StatusCode.UNAVAILABLE  # plaintext is not served
    finally:
        assert serve.stop() == 0, serve.log.read_text()[-2000:]


def test_a_prebuilt_image_is_accepted_and_cannot_retag_others(league: tuple[Path, int, Serve], tmp_path: Path) -> None:
    """`docker save` of a bot image, with a tag in its manifest naming another image (the victim): the
    submission is loaded under the arena's own tag, validated and rated; the victim's tag is untouched."""
    import json

    from tests.docker_helpers import build_bot

    cfg, port, _ = league
    client = docker_client()
    good = _bot(tmp_path / "goodbot", GOOD, "random_bot")
    built = build_bot(good, "allfours-compete-img", "1", base_image("python"), entry="random_bot:RandomBot")
    victim = f"{PREFIX}-victim:1"
    client.images.get(base_image("python")).tag(victim)
    victim_id = client.images.get(victim).id
    try:
        raw = subprocess.run(["docker", "save", built], capture_output=True, check=True, timeout=300).stdout
        out = io.BytesIO()
        with tarfile.open(fileobj=io.BytesIO(raw)) as src, tarfile.open(fileobj=out, mode="w") as dst:
            for m in src.getmembers():
                data = src.extractfile(m) if m.isreg() else None
                if m.name == "manifest.json" and data is not None:
                    manifest = json.loads(data.read())
                    manifest[0]["RepoTags"] = [victim]
                    body = json.dumps(manifest).encode()
                    m.size, data = len(body), io.BytesIO(body)
                dst.addfile(m, data)
        archive = tmp_path / "bot.tar"
        archive.write_bytes(out.getvalue())
        token = arena("competitor", "add", str(cfg), "kim").stdout.strip()
        done = arena("submit", str(archive), "--image", "--name", "kim-img", "--arena", f"127.0.0.1:{port}",
                     "--wait", env={"ALLFOURS_COMPETITOR_TOKEN": token}, timeout=900)
        assert done.returncode == 0 and "kim-img@1 rated" in done.stderr, done.stderr
        assert client.images.get(victim).id == victim_id
        assert client.images.get(tag_of(cfg, "kim-img", "1")).id == client.images.get(built).id
    finally:
        for tag in (victim, built):
            client.images.remove(tag, force=True)


def _submit_with_a_fake_arena(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sub: Any, name: str,
                              first: str | None = None) -> tuple[int, str]:
    """``arena submit --wait`` of a one-file bot ``name`` against a fake arena whose submission is
    ``sub`` when submitted (or first in status ``first``, then followed to ``sub``, shown when its status
    is new); returns the exit status and stderr. The fake's ``submissions`` lists ``sub`` (for
    ``arena submissions`` afterwards)."""
    import argparse
    from types import SimpleNamespace

    from rich.console import Console

    import arena.cli.competing as competing

    class Client:
        def submit(self, *_: object, **__: object) -> Any:
            return sub if first is None else SimpleNamespace(**{**vars(sub), "status": first})

        def follow(self, _sid: int, show: Any, *_: object, shown: str = "", **__: object) -> Any:
            if sub.status != shown:
                show(sub)
            return sub

        def submissions(self) -> list[Any]:
            return [sub]

        def close(self) -> None:
            pass

    monkeypatch.setattr(competing, "_client", lambda args: Client())
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / f"{name}.py").write_text("x = 1\n")
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(select=None, folder=str(tmp_path / "bot"), image=False, name=name, version="next",
                              entry=f"{name}:Bot", wait=True, wait_timeout=5.0, remote=False)
    code = competing._submit(args, Console(file=out, width=400), Console(file=err, width=400))
    return code, err.getvalue()


def test_a_reason_with_square_brackets_is_printed_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`arena submit --wait` and `arena submissions` print the arena's reasons as text: rich took
    `[competition]` in the host's own fix ("set [competition] base_python …") and the ` [retired]` mark for
    markup and dropped them, and a reason holding `[/opt/bot]` (docker's words) ended the command with a
    MarkupError traceback."""
    import argparse
    from types import SimpleNamespace

    from rich.console import Console

    import arena.cli.competing as competing

    reason = "the host is to set [competition] base_python; step [/opt/bot] failed"
    sub = SimpleNamespace(id=7, entrant="evebot@1", status="failed", step="build", reason=reason, retired=True,
                          log_tail="", games=0, final_entry=False)
    code, err = _submit_with_a_fake_arena(tmp_path, monkeypatch, sub, "evebot")
    assert code == 1
    assert f"submitted: #7 evebot@1 failed (build: {reason}) [retired]" in err, err
    table = io.StringIO()
    assert competing._submissions(argparse.Namespace(log=None, games=False), Console(file=table, width=400)) == 0
    assert "[competition] base_python; step [/opt/bot] failed" in table.getvalue(), table.getvalue()


@pytest.mark.parametrize(("status", "code"), [("validating", 1), ("playing", 0)])
def test_submit_wait_that_times_out_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str,
                                            code: int) -> None:
    """`arena submit --wait` stops following after `--wait-timeout S` (docs/competition.md): it said nothing
    and exited 0, so a script read a submission still being validated as a success. Now one line names the
    status it stopped at, and the exit status is 0 only for a bot already in the league (accepted)."""
    from types import SimpleNamespace

    sub = SimpleNamespace(id=3, entrant="mybot@1", status=status, step="", reason="", retired=False, log_tail="",
                          games=0, final_entry=False)
    got, err = _submit_with_a_fake_arena(tmp_path, monkeypatch, sub, "mybot", first="received")
    assert got == code
    assert err.splitlines()[-1] == (f"#3 mybot@1 still {status} after 5 s (--wait-timeout): no longer "
                                    "followed; `arena submissions` shows it"), err


def test_serve_without_a_docker_daemon_says_so_in_one_plain_line(tmp_path: Path) -> None:
    """A competition's submissions play in containers, so `arena serve` of a [competition] config needs
    dockerd; without one it stops with the sandbox's own line, not as an unexpected failure
    (`error: SandboxError: … (--verbose shows the traceback)`), exit status 1."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.format(name="nodocker", port=free_port(), per_day=1, base="x", base_node="x",
                                 prefix=PREFIX, root=ROOT))
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    done = subprocess.run([sys.executable, "-m", "arena.cli", "serve", str(cfg)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: no docker daemon answers (") and lines[0].endswith("; start dockerd"), lines
