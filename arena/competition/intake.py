"""Safe intake of a submitted archive: a tar (optionally gzip) unpacked into a fresh folder.

Every byte of an archive is hostile. :func:`unpack` reads the archive as a stream (never seeks, never
trusts a header's size) and refuses, with one line each (:class:`IntakeError`):

- a path that escapes the folder (absolute, or with a ``..`` part, or under a link);
- a symbolic link whose target is absolute or leaves the folder, or names a folder (a build copies
  what links name); a hard link to anything but a regular file unpacked before it in the same archive;
- a device, a FIFO, or any other kind of member than a file, a folder or a link;
- more members than ``limits.files``;
- more unpacked bytes than ``limits.unpacked_bytes``, counted while writing (and each link counts its
  file once more): an archive that expands to gigabytes is stopped at the limit;
- a header over :data:`HEADER_BYTES` (a long name or a pax header: tar reads a header whole into memory, and
  a small gzip can declare one of gigabytes);
- an archive that is not a tar (or tar.gz).

Files are written with mode 0644 (0755 when the archive marks them executable), never following a
link (``O_NOFOLLOW | O_EXCL``); owners, times and other modes in the archive are ignored. The upload's
own size (``limits.upload_bytes``) is checked by the receiver, :func:`check_upload`.

A prebuilt image (``docker save``) is not unpacked: :func:`copy_image_archive` copies it without the
names it would give itself (its tags) and with the same refusals of paths, kinds and headers, and refuses a
compressed member or a layer holding a sparse file (docker load would expand them: the image limit counts
the archive's bytes); its ``manifest.json`` (the file naming the image) must be one regular file, and its
links only what ``docker save`` makes (a layer two images share: ``ID/layer.tar`` naming another
``layer.tar``), so no later member can put back the tags; its members may hold at most ``most_bytes`` in
all, and be at most :data:`IMAGE_MEMBERS` (``docker save`` writes a few a layer).
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import shutil
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

#: Bytes copied at a time while unpacking (the unpacked size is counted per chunk).
CHUNK = 64 * 1024
#: Most names in a member's path (folders and the file). The build copies the folder with Python's
#: recursive copytree, which a folder 600 deep failed with a RecursionError: the submission was ``failed``,
#: the arena's fault, in no daily limit, its files kept, so it could be sent again and again.
MAX_DEPTH = 64
#: Most bytes of one member's long name, long link name or pax header (a path needs at most a few KiB).
HEADER_BYTES = 64 * 1024
#: Tar's header kinds whose data is read whole into memory before the member they describe.
_HEADER_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                 tarfile.SOLARIS_XHDTYPE)


class IntakeError(ValueError):
    """An archive refused; ``str(e)`` is one line saying why."""


#: The line of an upload whose call ended (its client cancelled it) while the archive was taken in.
WITHDRAWN = "the upload was cancelled while the arena was taking it in"


class _Withdrawable(io.RawIOBase):
    """The bytes of ``archive`` from where it is, each read refused once ``withdrawn()`` is true."""

    def __init__(self, archive: IO[bytes], withdrawn: Callable[[], bool]) -> None:
        super().__init__()
        self._archive, self._withdrawn = archive, withdrawn

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._withdrawn():
            raise IntakeError(WITHDRAWN)
        data = self._archive.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._archive.seek(offset, whence)

    def tell(self) -> int:
        return self._archive.tell()


def withdrawable(archive: IO[bytes], withdrawn: Callable[[], bool]) -> IO[bytes]:
    """``archive`` (a seekable file, read from where it is) as a file whose every read raises
    :class:`IntakeError` (:data:`WITHDRAWN`) once ``withdrawn()`` is true: an intake that reads it
    (:func:`unpack`, :func:`copy_image_archive`) stops at its next read once its upload's call has ended. The
    caller keeps ``archive`` open until the intake is over, and closes it."""
    return io.BufferedReader(_Withdrawable(archive, withdrawn), CHUNK)


@dataclass(frozen=True, slots=True)
class IntakeLimits:
    """``upload_bytes`` of the archive; ``unpacked_bytes`` and ``files`` of what it holds."""

    upload_bytes: int
    unpacked_bytes: int
    files: int


class _TarInfo(tarfile.TarInfo):
    """A member header that refuses a long-name or pax header over :data:`HEADER_BYTES` before tar reads it."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        """tarfile's documented hook for a member's header (see tarfile.TarInfo's comments)."""
        if self.type in _HEADER_TYPES and self.size > HEADER_BYTES:
            raise IntakeError(f"a header of {self.size} bytes, over the {HEADER_BYTES} bytes a name or pax header "
                              "may take")
        return super()._proc_member(tar)  # type: ignore[misc, no-any-return]


def check_upload(received: int, limits: IntakeLimits) -> None:
    """:raises IntakeError: ``received`` bytes of archive are over the upload limit."""
    if received > limits.upload_bytes:
        raise IntakeError(f"the archive is over the upload limit of {limits.upload_bytes} bytes")


def _safe_name(name: str) -> str:
    """The member's path, normalised, relative. :raises IntakeError: absolute or escaping."""
    if name.startswith("/") or "\\" in name or "\x00" in name:
        raise IntakeError(f"{_short(name)}: a path escaping the submission's folder (absolute)")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise IntakeError(f"{_short(name)}: a path escaping the submission's folder (..)")
    if len(parts) > MAX_DEPTH:
        raise IntakeError(f"{_short(name)}: more than {MAX_DEPTH} folders deep")
    return "/".join(parts)


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path``'s folder, with every link resolved, is ``root`` or below it."""
    parent = path.parent.resolve()
    return parent == root or root in parent.parents


@dataclass
class _Unpacking:
    """The running counts of one :func:`unpack`."""

    root: Path
    limits: IntakeLimits
    files: int = 0
    written: int = 0

    def target(self, rel: str) -> Path:
        """Where member ``rel`` goes. :raises IntakeError: its folder is reached through a link out."""
        path = self.root / rel
        if not _inside(self.root, path):
            raise IntakeError(f"{rel!r}: a path escaping the submission's folder (through a link)")
        return path

    def count(self, name: str) -> None:
        self.files += 1
        if self.files > self.limits.files:
            raise IntakeError(f"more than {self.limits.files} files in the archive (the file-count limit)")

    def copy(self, src: IO[bytes], path: Path, executable: bool) -> None:
        """Write ``src`` to the new file ``path``, counting the bytes against the unpacked limit."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if executable else 0o644)
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(CHUNK):
                self.written += len(chunk)
                if self.written > self.limits.unpacked_bytes:
                    limit = self.limits.unpacked_bytes
                    raise IntakeError(f"the archive unpacks to more than {limit} bytes (the unpacked-size limit)")
                out.write(chunk)


def _symlink(u: _Unpacking, rel: str, member: tarfile.TarInfo) -> None:
    target = member.linkname
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if target.startswith("/") or joined == ".." or joined.startswith("../"):
        raise IntakeError(f"{rel!r}: a link leaving the submission's folder (to {target!r})")
    path = u.target(rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def _hardlink(u: _Unpacking, rel: str, member: tarfile.TarInfo) -> None:
    source = _safe_name(member.linkname)
    src = u.target(source)
    if not source or not src.is_file() or src.is_symlink():
        raise IntakeError(f"{rel!r}: a hard link to {member.linkname!r}, not a file unpacked before it")
    with open(src, "rb") as f:
        u.copy(f, u.target(rel), bool(member.mode & 0o111))


def _check_links(u: _Unpacking) -> None:
    """Every link, resolved in full once all is unpacked, names a file inside the folder (a chain of
    links each inside may still lead out: ``a -> .``, ``b -> a/..``). A link to a folder is refused (a
    build copies what links name: ``a -> .`` would copy the tree into itself), and each link counts its
    file's size against the unpacked limit (the build copies it once more). :raises IntakeError: one line."""
    root = u.root
    for path in root.rglob("*"):
        if not path.is_symlink():
            continue
        rel = path.relative_to(root).as_posix()
        real = Path(os.path.realpath(path))
        if not (real == root or root in real.parents) or not real.exists():
            raise IntakeError(f"{rel!r}: a link leaving the submission's folder (or to nothing)")
        if real.is_dir():
            raise IntakeError(f"{rel!r}: a link to a folder (links may name files only)")
        u.written += real.stat().st_size
        if u.written > u.limits.unpacked_bytes:
            limit = u.limits.unpacked_bytes
            raise IntakeError(f"the archive unpacks to more than {limit} bytes (the unpacked-size limit)")


def _short(rel: str) -> str:
    """``rel`` quoted for a one-line error, cut to 100 characters."""
    return repr(rel[:100]) + ("..." if len(rel) > 100 else "")


def _member(u: _Unpacking, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
    """Unpack one member (see the module docstring). :raises IntakeError: as :func:`unpack`; the file
    system's own refusals (a name given twice, a loop of links, a name too long) as one line without the
    server's paths."""
    rel = _safe_name(member.name)
    u.count(rel)
    if not rel:
        return
    try:
        _write(u, tar, member, rel)
    except FileExistsError:
        raise IntakeError(f"{_short(rel)}: given twice (a file, a folder or a link of the same name)") from None
    except RuntimeError:  # Path.resolve met a loop
        raise IntakeError(f"{_short(rel)}: under a loop of links") from None
    except OSError as e:
        if e.errno is None:  # the stream's own trouble (a bad gzip), not the file system's
            raise
        raise IntakeError(f"{_short(rel)}: cannot be unpacked: {e.strerror}") from None


def _write(u: _Unpacking, tar: tarfile.TarFile, member: tarfile.TarInfo, rel: str) -> None:
    """Write member ``rel`` by its kind. :raises IntakeError, OSError, RuntimeError: see :func:`_member`."""
    if member.isdir():
        u.target(rel).mkdir(parents=True, exist_ok=True)
    elif member.issym():
        _symlink(u, rel, member)
    elif member.islnk():
        _hardlink(u, rel, member)
    elif member.isreg():
        src = tar.extractfile(member)
        assert src is not None
        u.copy(src, u.target(rel), bool(member.mode & 0o111))
    else:
        kind = "a device" if member.ischr() or member.isblk() else "a FIFO" if member.isfifo() else "a special file"
        raise IntakeError(f"{rel!r}: {kind} (only files, folders and links inside are taken)")


def unpack(archive: IO[bytes], into: Path, limits: IntakeLimits) -> int:
    """Unpack the tar stream ``archive`` into the new folder ``into`` (made here; removed again on a
    refusal); returns how many members it held. :raises IntakeError: see the module docstring."""
    into.mkdir(mode=0o700, parents=True, exist_ok=False)
    u = _Unpacking(into.resolve(), limits)
    try:
        with tarfile.open(fileobj=archive, mode="r|*", tarinfo=_TarInfo) as tar:
            for member in tar:
                _member(u, tar, member)
    except IntakeError:
        shutil.rmtree(into, ignore_errors=True)
        raise
    except (tarfile.TarError, EOFError, OSError, UnicodeError) as e:
        shutil.rmtree(into, ignore_errors=True)
        raise IntakeError(f"not a readable tar or tar.gz archive: {' '.join(str(e).split())[:200]}") from None
    try:
        _check_links(u)
    except IntakeError:
        shutil.rmtree(into, ignore_errors=True)
        raise
    for path in into.rglob("*"):
        if not path.is_symlink() and stat.S_ISDIR(path.stat().st_mode):
            path.chmod(0o755)
    into.chmod(0o755)
    return u.files


#: Most members of an image archive (docker save writes a folder and three files a layer; an image has
#: at most 127 layers).
IMAGE_MEMBERS = 1000
#: Most bytes of an image archive's manifest.json.
MANIFEST_BYTES = 1024 * 1024
#: Most bytes of an image's config (the JSON its manifest names: env, labels, history; a few KB as docker
#: makes it): docker load parses it whole in dockerd (a 50 MB one took dockerd 190 MB more), and so does
#: every inspect of the image, the arena's own included.
CONFIG_BYTES = 1024 * 1024
#: How the compressed streams that docker load expands begin (gzip, bzip2, xz, zstd): ``docker save``
#: writes plain tars, and a compressed layer would take far more disk on load than the archive's bytes.
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")


def _manifest(raw: bytes) -> bytes:
    """``manifest.json`` of a ``docker save`` archive with its tags dropped (``RepoTags`` null): loaded,
    the image gets no name the archive chose (``python:3``, another bot's tag), only the arena's.
    :raises IntakeError: not one image."""
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        raise IntakeError("manifest.json is not JSON: not a `docker save` archive") from None
    if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
        raise IntakeError("an image archive must hold exactly one image (docker save IMAGE > bot.tar)")
    manifest[0]["RepoTags"] = None
    return json.dumps(manifest).encode()


def _image_member(rel: str, member: tarfile.TarInfo, seen_manifest: bool) -> None:
    """Refuse what an image archive may not hold (see :func:`copy_image_archive`). :raises IntakeError: one line."""
    if member.issym() or member.islnk():
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), member.linkname))
        if member.linkname.startswith("/") or joined == ".." or joined.startswith("../"):
            raise IntakeError(f"{rel!r}: a link leaving the archive (to {member.linkname!r})")
        if posixpath.basename(rel) != "layer.tar" or posixpath.basename(joined) != "layer.tar":
            raise IntakeError(f"{rel!r}: a link in an image archive that is not one layer.tar naming another")
    elif not (member.isreg() or member.isdir()):
        raise IntakeError(f"{rel!r}: a device, FIFO or special file in an image archive")
    if rel == "manifest.json" and (seen_manifest or not member.isreg()):
        raise IntakeError("manifest.json twice or not a file: an image archive names its image in one manifest.json")


def copy_image_archive(archive: IO[bytes], into: Path, most_bytes: int, most_files: int | None = None) -> None:
    """Copy the ``docker save`` tar ``archive`` to the new file ``into`` without its image names (see
    :func:`_manifest`) and its ``repositories`` file, refusing what :func:`unpack` refuses of paths and
    kinds (links must stay inside; devices, FIFOs), a ``manifest.json`` that is a link or comes twice,
    other links than ``docker save``'s, members over ``most_bytes`` in all, and layers of over
    ``most_files`` members in all (:func:`_check_layers`). :raises IntakeError: one line."""
    seen_manifest = False
    total = 0
    try:
        with tarfile.open(fileobj=archive, mode="r|*", tarinfo=_TarInfo) as src, tarfile.open(into, mode="x") as out:
            for count, member in enumerate(src, 1):
                if count > IMAGE_MEMBERS:
                    raise IntakeError(f"more than {IMAGE_MEMBERS} members in the image archive (docker save writes "
                                      "a few a layer)")
                rel = _safe_name(member.name)
                _image_member(rel, member, seen_manifest)
                if rel == "repositories" or not rel:
                    continue
                total += member.size if member.isreg() else 0
                if total > most_bytes:
                    raise IntakeError(f"the image archive holds more than {most_bytes} bytes (the image limit)")
                data = src.extractfile(member) if member.isreg() else None
                if data is not None and data.peek(6)[:6].startswith(_COMPRESSED):  # type: ignore[attr-defined]
                    raise IntakeError(f"{_short(rel)}: a compressed member (docker save writes plain layers, and "
                                      "docker load would expand it past the image limit)")
                if rel == "manifest.json" and data is not None:
                    seen_manifest = True
                    body = _manifest(data.read(MANIFEST_BYTES + 1)[:MANIFEST_BYTES + 1])
                    member.size, data = len(body), io.BytesIO(body)
                out.addfile(member, data)
    except (tarfile.TarError, EOFError, OSError, UnicodeError) as e:
        into.unlink(missing_ok=True)
        raise IntakeError(f"not a readable image archive: {' '.join(str(e).split())[:200]}") from None
    except IntakeError:
        into.unlink(missing_ok=True)
        raise
    if not seen_manifest:
        into.unlink(missing_ok=True)
        raise IntakeError("no manifest.json: not a `docker save` archive")
    try:
        _check_layers(into, most_files)
    except (IntakeError, tarfile.TarError, EOFError, OSError, KeyError, ValueError) as e:
        into.unlink(missing_ok=True)
        why = str(e) if isinstance(e, IntakeError) else f"a layer the manifest names is not a readable tar: {e!s:.200}"
        raise IntakeError(why) from None


def _check_layers(path: Path, most_files: int | None = None) -> None:
    """Refuse an image config (the file the manifest of the image archive ``path`` names) over
    :data:`CONFIG_BYTES`; a layer (a tar the manifest names) holding a sparse file: docker load writes its
    holes out in full (a 20 KB archive loaded as an image of 100 MiB), past the image limit;
    and layers of over ``most_files`` members in all (files, folders, links: docker load writes each, an
    inode of the host's disk, before the loaded image's are counted).
    :raises IntakeError: one line; tarfile's, KeyError, ValueError: a layer missing or unreadable."""
    count = 0
    with tarfile.open(path) as tar:
        manifest = tar.extractfile("manifest.json")
        assert manifest is not None
        image = json.loads(manifest.read())[0]
        config = str(image.get("Config") or "")
        named = {m.name: m for m in tar.getmembers()}.get(config)  # not there: docker load says so
        if named is not None and named.size > CONFIG_BYTES:
            raise IntakeError(f"the image's config {_short(config)[1:-1]} is over {CONFIG_BYTES} bytes (docker makes "
                              "one of a few KB; docker load and every inspect of the image parse it whole)")
        for layer in image.get("Layers") or []:
            with tarfile.open(fileobj=tar.extractfile(str(layer)), mode="r|", tarinfo=_TarInfo) as files:
                for member in files:
                    count += 1
                    if most_files is not None and count > most_files:
                        raise IntakeError(f"the image's layers hold over {most_files} files, folders and links (the "
                                          "image limit of files): docker load would write each to the host's disk")
                    if member.issparse():
                        raise IntakeError(f"{_short(str(layer))}: a sparse file ({_short(member.name)}), which docker "
                                          "load would write out in full past the image limit")
