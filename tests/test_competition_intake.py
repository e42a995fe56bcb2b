"""Safe intake of submitted archives (arena/competition/intake.py): a table of hostile archives, each
refused with its one line and nothing written outside the submission's folder; and the competitor's
packer (arena/competition/client.py: pack) refusing what cannot be submitted."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.competition.client import SubmitError, pack
from arena.competition.intake import (
    CONFIG_BYTES,
    MAX_DEPTH,
    IntakeError,
    IntakeLimits,
    check_upload,
    copy_image_archive,
    unpack,
)

LIMITS = IntakeLimits(upload_bytes=64 * 1024, unpacked_bytes=256 * 1024, files=20)


def _tar(add: Callable[[tarfile.TarFile], None], mode: str = "w:gz") -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:  # type: ignore[call-overload]
        add(tar)
    buf.seek(0)
    return buf


def _file(name: str, data: bytes = b"x") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return add


def _member(name: str, kind: bytes, linkname: str = "") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = linkname
        tar.addfile(info)
    return add


def _all(*adds: Callable[[tarfile.TarFile], None]) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        for a in adds:
            a(tar)
    return add


def _many_files(tar: tarfile.TarFile) -> None:
    for k in range(LIMITS.files + 1):
        _file(f"f{k}.py")(tar)


def _bomb(mib: int = 8) -> io.BytesIO:
    """A gzip of a few KiB whose tar declares a 1 GiB file of zeros (it expands past any limit)."""
    raw = io.BytesIO()
    info = tarfile.TarInfo("zeros.bin")
    info.size = 1024**3
    raw.write(info.tobuf(format=tarfile.GNU_FORMAT))
    zeros = bytes(1024 * 1024)
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=9) as gz:
        gz.write(raw.getvalue())
        for _ in range(mib):  # MiB of zeros: far over the 256 KiB limit, far short of the declared size
            gz.write(zeros)
    packed.seek(0)
    return packed


def _header_bomb(mib: int = 64) -> io.BytesIO:
    """A gzip of a few KiB whose first header is a GNU long name declared as ``mib`` MiB: tar reads such a
    header whole into memory (300 KiB of upload took 1.2 GiB of the server's memory before the fix)."""
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = tarfile.GNUTYPE_LONGNAME, mib * 1024 * 1024
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=9) as gz:
        gz.write(info.tobuf(format=tarfile.GNU_FORMAT))
        for _ in range(mib):
            gz.write(b"a" * 1024 * 1024)
    packed.seek(0)
    return packed


HOSTILE = [
    ("dotdot", lambda: _tar(_file("../evil.py")), "a path escaping the submission's folder (..)"),
    ("nested dotdot", lambda: _tar(_file("a/../../evil.py")), "a path escaping the submission's folder (..)"),
    ("absolute", lambda: _tar(_file("/tmp/evil.py")), "a path escaping the submission's folder (absolute)"),
    ("symlink out", lambda: _tar(_member("etc", tarfile.SYMTYPE, "/etc")), "a link leaving the submission's folder"),
    ("symlink up", lambda: _tar(_member("up", tarfile.SYMTYPE, "../..")), "a link leaving the submission's folder"),
    ("chained links out", lambda: _tar(_all(_member("a", tarfile.SYMTYPE, "."), _member("b", tarfile.SYMTYPE, "a/.."))),
     "a link leaving the submission's folder"),
    ("write through a link", lambda: _tar(_all(_member("d", tarfile.SYMTYPE, "."),
                                               _member("e", tarfile.SYMTYPE, "d/.."), _file("e/evil"))),
     "through a link"),
    ("link to a folder", lambda: _tar(_all(_file("d/x"), _member("loop", tarfile.SYMTYPE, "."))),
     "a link to a folder"),
    ("links multiply a file", lambda: _tar(_all(_file("big.bin", bytes(100 * 1024)),
                                                *[_member(f"l{k}", tarfile.SYMTYPE, "big.bin") for k in range(3)])),
     "the unpacked-size limit"),
    ("hard link out", lambda: _tar(_member("passwd", tarfile.LNKTYPE, "/etc/passwd")),
     "a path escaping the submission's folder (absolute)"),
    ("hard link to nothing", lambda: _tar(_member("h", tarfile.LNKTYPE, "missing.py")), "not a file unpacked before"),
    ("char device", lambda: _tar(_member("null", tarfile.CHRTYPE)), "a device"),
    ("block device", lambda: _tar(_member("sda", tarfile.BLKTYPE)), "a device"),
    ("fifo", lambda: _tar(_member("pipe", tarfile.FIFOTYPE)), "a FIFO"),
    ("too many files", lambda: _tar(_many_files), f"more than {LIMITS.files} files"),
    ("big file", lambda: _tar(_file("big.bin", bytes(LIMITS.unpacked_bytes + 1))), "the unpacked-size limit"),
    ("gzip bomb", _bomb, "the unpacked-size limit"),
    ("long-name header bomb", _header_bomb, "over the 65536 bytes a name or pax header may take"),
    ("not a tar", lambda: io.BytesIO(b"PK\x03\x04 this is a zip"), "not a readable tar"),
    ("a folder then a file", lambda: _tar(_all(_member("x", tarfile.DIRTYPE), _file("x"))), "'x': given twice"),
    ("a file twice", lambda: _tar(_all(_file("x"), _file("x"))), "'x': given twice"),
    ("write under a loop of links", lambda: _tar(_all(_member("a", tarfile.SYMTYPE, "b"),
                                                      _member("b", tarfile.SYMTYPE, "a"), _file("a/x"))),
     "'a/x': under a loop of links"),
    ("a name too long", lambda: _tar(_file("n" * 300)), "cannot be unpacked: File name too long"),
    ("a long name escaping", lambda: _tar(_file("a" * 5000 + "/../../evil.py")),
     "a path escaping the submission's folder (..)"),
    ("a long absolute name", lambda: _tar(_file("/" + "a" * 5000)),
     "a path escaping the submission's folder (absolute)"),
    ("a path too deep", lambda: _tar(_file("/".join(["d"] * 600) + "/x.py")), f"more than {MAX_DEPTH} folders deep"),
]


def test_a_folder_as_deep_as_the_intake_takes_goes_into_a_build_context(tmp_path: Path) -> None:
    """A folder 600 deep passed the intake, then failed its build's copy (a RecursionError: `failed`, the
    arena's fault, in no daily limit, its files kept). The intake's deepest copies."""
    from arena.hosting.bots_build import make_context, plan_build

    deep = "/".join(["d"] * (MAX_DEPTH - 1)) + "/x.py"
    unpack(_tar(_all(_file("bot.py", b"class Bot:\n    pass\n"), _file(deep))), tmp_path / "bot", LIMITS)
    (tmp_path / "ca.pem").write_text("")
    (tmp_path / "context").mkdir()
    make_context(plan_build(tmp_path / "bot", "deep", "1", "bot:Bot"), tmp_path / "context", tmp_path / "ca.pem")
    assert (tmp_path / "context" / "bot" / deep).is_file()


@pytest.mark.parametrize(("case", "make", "line"), HOSTILE, ids=[c for c, _, _ in HOSTILE])
def test_a_hostile_archive_is_refused_with_its_line(tmp_path: Path, case: str, make: Callable[[], io.BytesIO],
                                                     line: str) -> None:
    before = set(os.listdir(tmp_path))
    with pytest.raises(IntakeError) as e:
        unpack(make(), tmp_path / "sub" / "bot", LIMITS)
    assert line in str(e.value), str(e.value)
    assert "\n" not in str(e.value) and str(tmp_path) not in str(e.value)  # no path of the server's
    assert len(str(e.value)) < 400
    assert not (tmp_path / "sub" / "bot").exists()  # nothing kept of a refused archive
    assert set(os.listdir(tmp_path)) == before | {"sub"}
    assert not (tmp_path / "evil.py").exists() and not Path("/tmp/evil.py").exists()


class _Counting(io.BytesIO):
    """An archive that counts the bytes read from it."""

    taken = 0

    def read(self, n: int | None = -1) -> bytes:
        data = super().read(n)
        self.taken += len(data)
        return data


def test_the_bomb_is_stopped_at_the_limit_not_at_its_end(tmp_path: Path) -> None:
    """Counted while unpacking: the archive is read only a little past the unpacked limit, not to its end."""
    bomb = _Counting(_bomb(mib=64).getvalue())
    with pytest.raises(IntakeError, match="the unpacked-size limit"):
        unpack(bomb, tmp_path / "bot", LIMITS)
    assert bomb.taken < len(bomb.getvalue()) / 4


def test_a_header_bomb_is_refused_before_tar_reads_it(tmp_path: Path) -> None:
    """The header's size is refused from the header: its declared megabytes are never read (into memory)."""
    bomb = _Counting(_header_bomb(mib=64).getvalue())
    with pytest.raises(IntakeError, match="a name or pax header may take"):
        unpack(bomb, tmp_path / "bot", LIMITS)
    assert bomb.taken < len(bomb.getvalue()) / 4
    with pytest.raises(IntakeError, match="a name or pax header may take"):
        copy_image_archive(_header_bomb(mib=1), tmp_path / "image.tar", IMAGE_BYTES)


def test_an_upload_over_its_limit_is_refused() -> None:
    check_upload(LIMITS.upload_bytes, LIMITS)
    with pytest.raises(IntakeError, match="over the upload limit of 65536 bytes"):
        check_upload(LIMITS.upload_bytes + 1, LIMITS)


def test_a_good_archive_unpacks_with_safe_modes(tmp_path: Path) -> None:
    def add(tar: tarfile.TarFile) -> None:
        _file("bot/main", b"print(1)\n")(tar)
        info = tarfile.TarInfo("run.sh")
        info.size, info.mode, info.uid = 3, 0o4777, 0  # setuid and world-writable in the archive
        tar.addfile(info, io.BytesIO(b"ok\n"))
        _member("alias.py", tarfile.SYMTYPE, "bot/main")(tar)
        _member("copy.py", tarfile.LNKTYPE, "bot/main")(tar)

    n = unpack(_tar(add), tmp_path / "bot", LIMITS)
    root = tmp_path / "bot"
    assert n == 4
    assert (root / "bot" / "main").read_bytes() == b"print(1)\n"
    assert (root / "alias.py").read_bytes() == b"print(1)\n" and (root / "alias.py").is_symlink()
    assert (root / "copy.py").read_bytes() == b"print(1)\n" and not (root / "copy.py").is_symlink()
    assert oct((root / "run.sh").stat().st_mode & 0o7777) == oct(0o755)


def test_pack_refuses_a_link_out_a_fifo_and_a_big_file(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "main.py").write_text("x = 1\n")
    (bot / "node_modules").mkdir()
    (bot / "node_modules" / "skipped.js").write_text("")
    with tarfile.open(fileobj=io.BytesIO(pack(bot)), mode="r:gz") as packed:
        assert sorted(packed.getnames()) == ["main.py"]
    (bot / "secret").symlink_to("/etc/passwd")
    with pytest.raises(SubmitError, match="secret: a link leaving the folder"):
        pack(bot)
    (bot / "secret").unlink()
    os.mkfifo(bot / "pipe")
    with pytest.raises(SubmitError, match="pipe: a device, FIFO or socket"):
        pack(bot)
    (bot / "pipe").unlink()
    (bot / "big.bin").write_bytes(bytes(2048))
    with pytest.raises(SubmitError, match=r"big\.bin: 2048 bytes, over the 1024 bytes"):
        pack(bot, max_file_bytes=1024)


#: The image limit the image-archive tests give.
IMAGE_BYTES = 64 * 1024


def _sparse_file(tar: tarfile.TarFile) -> None:
    """A file of 100 MiB that takes 1 KiB in the tar (the PAX 1.0 sparse format: a map, then the data)."""
    body = b"1\n0\n512\n".ljust(512, b"\0") + b"A" * 512
    info = tarfile.TarInfo("GNUSparseFile.0/big")
    info.size = len(body)
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "big",
                        "GNU.sparse.realsize": str(100 * 1024 * 1024)}
    tar.addfile(info, io.BytesIO(body))


def _layer(*adds: Callable[[tarfile.TarFile], None]) -> bytes:
    """A layer: a plain (pax) tar of ``adds``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _all(*adds)(tar)
    return buf.getvalue()


def _image_archive(manifest: object, *extra: Callable[[tarfile.TarFile], None]) -> io.BytesIO:
    return _tar(_all(_file("abc/layer.tar", _layer(_file("bin/bot"))), _file("cfg.json", b"{}"),
                     _file("manifest.json", json.dumps(manifest).encode()),
                     _file("repositories", b'{"python": {"3": "abc"}}'), *extra), mode="w")


def test_an_image_archive_loses_its_tags(tmp_path: Path) -> None:
    tags = ["python:3", "allfours-bots/champion:1"]
    manifest = [{"Config": "cfg.json", "RepoTags": tags, "Layers": ["abc/layer.tar"]}]
    copy_image_archive(_image_archive(manifest), tmp_path / "image.tar", IMAGE_BYTES)
    with tarfile.open(tmp_path / "image.tar") as tar:
        names = tar.getnames()
        kept = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert "repositories" not in names and "abc/layer.tar" in names
    assert kept == [{"Config": "cfg.json", "RepoTags": None, "Layers": ["abc/layer.tar"]}]


IMAGE_REFUSED = [
    ("two images", lambda: _image_archive([{}, {}]), "exactly one image"),
    # json's RecursionError is no ValueError: it failed the call as UNKNOWN, naming the Python exception
    ("manifest nested too deep", lambda: _tar(_file("manifest.json", b"[" * 20_000 + b"]" * 20_000), mode="w"),
     "manifest.json is not JSON"),
    ("no manifest", lambda: _tar(_file("abc/layer.tar"), mode="w"), "no manifest.json"),
    ("link out", lambda: _image_archive([{}], _member("x/layer.tar", tarfile.SYMTYPE, "../../etc/passwd")),
     "a link leaving the archive"),
    ("dotdot", lambda: _image_archive([{}], _file("../evil")), "escaping"),
    ("fifo", lambda: _image_archive([{}], _member("p", tarfile.FIFOTYPE)), "a device, FIFO"),
    ("not a tar", lambda: io.BytesIO(b"not a tar at all" * 100), "not a readable image archive"),
    # docker load reads the last manifest.json it unpacked: a later link to a file of the archive's own
    # making put back tags (seen with dockerd 20.10: `Loaded image: hostile22-victim:1`), retagging any image
    ("manifest hard link", lambda: _image_archive([{}], _file("evil.json", b'[{"RepoTags": ["python:3"]}]'),
                                                  _member("manifest.json", tarfile.LNKTYPE, "evil.json")),
     "not one layer.tar naming another"),
    ("manifest symlink", lambda: _image_archive([{}], _file("evil.json", b"[]"),
                                                _member("manifest.json", tarfile.SYMTYPE, "evil.json")),
     "not one layer.tar naming another"),
    ("manifest twice", lambda: _image_archive([{}], _file("./manifest.json", b"[{}]")), "manifest.json twice"),
    ("write through a link", lambda: _image_archive([{}], _member("d", tarfile.SYMTYPE, "."),
                                                    _file("d/manifest.json", b"[{}]")),
     "not one layer.tar naming another"),
    ("too many members", lambda: _image_archive([{}], *[_member(f"d{k}", tarfile.DIRTYPE) for k in range(1000)]),
     "more than 1000 members in the image archive"),
    ("over the image limit", lambda: _image_archive([{}], _file("big/layer.tar", bytes(IMAGE_BYTES))),
     "more than 65536 bytes \\(the image limit\\)"),
    # docker load expands a compressed layer (seen with dockerd 20.10: a 110 KB archive loaded as an image
    # of 100 MiB), so the image limit counted on the archive would not bound the disk the load takes
    ("a gzip layer", lambda: _image_archive([{}], _file("big/layer.tar", gzip.compress(bytes(10 * IMAGE_BYTES)))),
     "'big/layer.tar': a compressed member"),
    # docker load writes a sparse file's holes out in full (seen with dockerd 20.10: a 20 KB archive loaded as
    # 100 MiB on disk)
    ("a sparse file in a layer", lambda: _image_archive([{"Layers": ["abc/layer.tar", "s/layer.tar"]}],
                                                        _file("s/layer.tar", _layer(_sparse_file))),
     "'s/layer.tar': a sparse file \\('big'\\)"),
    ("a layer not in the archive", lambda: _image_archive([{"Layers": ["nowhere/layer.tar"]}]),
     "a layer the manifest names is not a readable tar"),
    ("an xz layer", lambda: _image_archive([{}], _file("big/layer.tar", lzma.compress(bytes(10 * IMAGE_BYTES)))),
     "'big/layer.tar': a compressed member"),
]


@pytest.mark.parametrize(("case", "make", "line"), IMAGE_REFUSED, ids=[c for c, _, _ in IMAGE_REFUSED])
def test_a_hostile_image_archive_is_refused(tmp_path: Path, case: str, make: Callable[[], io.BytesIO],
                                           line: str) -> None:
    with pytest.raises(IntakeError, match=line):
        copy_image_archive(make(), tmp_path / "image.tar", IMAGE_BYTES)
    assert not (tmp_path / "image.tar").exists()


def test_an_image_archive_of_too_many_files_is_refused_before_docker_loads_it(tmp_path: Path) -> None:
    """A loaded image's files were counted once docker load had written them all (an inode of the host's
    disk each: 2 GiB of a layer is 4 million empty files). Its layers' members are counted as the archive
    is taken in: over the image limit of files, it is refused before any load."""
    many = _layer(*[_file(f"e/{k}", b"") for k in range(11)])
    archive = lambda: _image_archive([{"Layers": ["abc/layer.tar", "m/layer.tar"]}], _file("m/layer.tar", many))  # noqa: E731
    with pytest.raises(IntakeError, match="the image's layers hold over 10 files, folders and links"):
        copy_image_archive(archive(), tmp_path / "image.tar", IMAGE_BYTES, most_files=10)
    assert not (tmp_path / "image.tar").exists()
    copy_image_archive(archive(), tmp_path / "image.tar", IMAGE_BYTES, most_files=20)


def test_an_image_archive_with_a_huge_config_is_refused(tmp_path: Path) -> None:
    """An image's config (the JSON its manifest names: env, labels, history) was taken at any size up to
    the image limit: docker load parses it whole in dockerd (a 50 MB one took dockerd from 108 to 294 MB,
    and `docker image inspect` 350 MB; 2 GiB of it gzips to a few MB of upload), as does the arena's own
    inspect of the loaded image. Over CONFIG_BYTES it is refused as the archive is taken in."""
    def archive(config: bytes) -> io.BytesIO:
        manifest = [{"Config": "big.json", "Layers": ["abc/layer.tar"]}]
        return _tar(_all(_file("abc/layer.tar", _layer(_file("bin/bot"))), _file("big.json", config),
                         _file("manifest.json", json.dumps(manifest).encode())), mode="w")

    padded = b'{"config": {"Env": ["X=' + b"a" * CONFIG_BYTES + b'"]}}'
    with pytest.raises(IntakeError, match=f"the image's config big.json is over {CONFIG_BYTES} bytes"):
        copy_image_archive(archive(padded), tmp_path / "image.tar", 4 * CONFIG_BYTES)
    assert not (tmp_path / "image.tar").exists()
    copy_image_archive(archive(b'{"config": {"Env": ["X=1"]}}'), tmp_path / "image.tar", 4 * CONFIG_BYTES)


def test_a_shared_layer_link_is_kept(tmp_path: Path) -> None:
    """What docker save makes of a layer two images share (``ID/layer.tar -> ../ID2/layer.tar``) passes."""
    link = _member("def/layer.tar", tarfile.SYMTYPE, "../abc/layer.tar")
    copy_image_archive(_image_archive([{}], link), tmp_path / "image.tar", IMAGE_BYTES)
    with tarfile.open(tmp_path / "image.tar") as tar:
        assert tar.getmember("def/layer.tar").linkname == "../abc/layer.tar"


def test_the_desk_refuses_an_entry_class_the_module_lacks(tmp_path: Path) -> None:
    """At intake, before the book or the build queue: one line (INVALID_ARGUMENT), nothing kept."""
    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk, Header, Refused
    from arena.config import CompetitionSettings

    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "alicebot.py").write_text("from sdk.bot import Bot\n\n\nclass AliceBot(Bot):\n    name = 'alice'\n")
    woken: list[int] = []
    with CompetitionBook(tmp_path / "out") as book:
        desk = Desk(CompetitionSettings(), tmp_path / "out", book, lambda: woken.append(1))
        with pytest.raises(Refused) as e:
            desk.receive("alice", Header("alicebot", "1", "", "alicebot:NoSuch"), io.BytesIO(pack(bot)),
                         desk.begin_upload("alice", desk.clock()))
        assert e.value.kind == "invalid" and str(e.value) == "--entry alicebot:NoSuch: alicebot.py defines or " \
            "imports no NoSuch", str(e.value)
        assert book.submissions() == [] and woken == []
        kept = desk.receive("alice", Header("alicebot", "1", "", "alicebot:AliceBot"), io.BytesIO(pack(bot)),
                            desk.begin_upload("alice", desk.clock()))
        assert kept.status == "received" and woken == [1]
