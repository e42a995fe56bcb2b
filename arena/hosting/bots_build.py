"""``arena bots build DIR --name NAME --version V``: build a bot's container image from its folder.

The kind of bot is found from the folder: ``package.json`` → Node.js (entry: ``--entry`` or the
package's ``main``), otherwise Python (``--entry module:Class`` is required; ``requirements.txt``
optional). The image is built with the Dockerfile the project ships for that kind
(``docker/bot-python.Dockerfile``, ``docker/bot-node.Dockerfile``) from a build context assembled
here: the bot's folder (without ``.git``, ``node_modules``, ``.venv``, ``__pycache__``), the SDK's
packages (Python) or the ``.proto`` files (Node.js), and a CA bundle for pip and npm inside the build
(``--ca-bundle``, default the host's), in a temporary folder ``allfours-build-<pid>-…`` (removed after
the build; a killed process's is removed by the next start of ``arena serve``). ``--base IMAGE``
replaces the official base image (the build argument ``BASE``); tests pass one made from Debian
packages (``docker/base-image.sh``).

The image is tagged ``allfours-bots/NAME:V`` (or ``--tag``) and labelled with the bot's name and
version; use that tag as ``[[bots]] image`` in a tournament config.

Errors: :class:`BuildError` with one line (no such folder, no entry, docker unreachable, the build's
own error line).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import inspect
import json
import os
import re
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.hosting.sandbox import image_id
from arena.hosting.tempdirs import pid_temp_dir

#: The project's folder of Dockerfiles and the base image script.
DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
#: The host CA bundle used by default inside builds.
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
#: Names and versions allowed in an image tag (docker's own rules, lower case for the name).
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")
_VERSION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_ENTRY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
#: Most characters of a Python entry (a longer module name is no file name: the file system's refusal named
#: the server's path).
ENTRY_CHARS = 200
_SKIP = shutil.ignore_patterns(".git", "node_modules", ".venv", "__pycache__", "*.pyc")
#: The name of a build context in the temp folder: ``allfours-build-<arena pid>-XXXX``
#: (:mod:`arena.hosting.tempdirs`: the next start removes those of a killed arena).
BUILD_DIR_PREFIX = "allfours-build-"
#: Seconds a whole build may take.
BUILD_TIMEOUT_S = 900
#: Most bytes of a Node.js bot's package.json: read whole into the memory of the process that plans the
#: build (``arena serve``, as a submission comes in), where 30 MB of ``{},`` took 775 MB.
PACKAGE_JSON_BYTES = 1 << 20
#: Most bytes of an entry module the entry check parses (a larger one is not checked: built and validated
#: as before). ast takes some 500 bytes of memory a byte of a crafted module, holding the GIL of the
#: process that checks (``arena serve``, as a submission comes in): 10 MB of ``0,`` took 4.9 GB and 22 s.
ENTRY_PARSE_BYTES = 64 * 1024
#: MiB of memory (and memory+swap) of each container a build runs its steps in: pip's sdists and npm's
#: scripts run the bot's own code there, as root.
BUILD_MEMORY_MB = 2048


class BuildError(RuntimeError):
    """A bot image could not be built; ``str(e)`` is one line saying why, ``output`` the end of the build's
    own output (at most :data:`OUTPUT_TAIL_CHARS` characters; ``""`` when it never ran): what ``pip`` or
    ``npm`` said of a failing step, which its author needs to mend it."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


#: Most characters of a failed build's output kept for its author (:attr:`BuildError.output`).
OUTPUT_TAIL_CHARS = 3500


@dataclass(frozen=True, slots=True)
class BotBuild:
    """What to build: the bot's ``folder``, ``kind`` (``"python"`` or ``"node"``), ``entry``
    (``module:Class`` or an entry file), the image ``tag``, ``name`` and ``version``."""

    folder: Path
    kind: str
    entry: str
    tag: str
    name: str
    version: str


#: A path component of a docker image reference (docker's own grammar): letters and digits, separated by one
#: ``.``, one or two ``_``, or any run of ``-``; never a separator at either end.
_IMAGE_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")


def check_image_name(name: str) -> None:
    """:raises BuildError: a bot name that passes :func:`check_name_version` but cannot name a docker image
    (``a-``, ``a.``, ``a..b``, ``a___b``: docker refuses the tag), one line. A remote entry, which has no image,
    may take such a name."""
    if not _IMAGE_COMPONENT.fullmatch(name):
        raise BuildError(f"--name {name!r}: letters and digits, each '.', '_', '__' or run of '-' between two of "
                         "them (an image name: not at either end, no '..')")


def check_name_version(name: str, version: str) -> None:
    """:raises BuildError: a bot name or version that cannot name an image (one line)."""
    if not _NAME.fullmatch(name):
        raise BuildError(f"--name {name!r}: use lower-case letters, digits, '_', '.', '-' (an image name)")
    if not _VERSION.fullmatch(version):
        raise BuildError(f"--version {version!r}: use letters, digits, '_', '.', '-' (an image tag)")


def _inside(folder: Path, entry: str) -> bool:
    """Whether ``entry`` is a relative path that stays in ``folder`` (no ``..``, not absolute; links in
    the folder resolved; one the file system cannot take, a NUL or a name too long, is not)."""
    if entry.startswith("/") or ".." in entry.split("/") or "\x00" in entry:
        return False
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in entry.split("/")):
        return False  # no file has such a name (the file system's own refusal would name the server's path)
    if len(str(folder.resolve() / entry).encode("utf-8", "surrogateescape")) >= 4096:
        return False  # nor a path over PATH_MAX in short parts (a stat of it raises ENAMETOOLONG, naming it)
    root = folder.resolve()
    try:
        return root in (folder / entry).resolve().parents
    except OSError:
        return False


def plan_build(
    folder: str | Path, name: str, version: str, entry: str | None = None, tag: str | None = None
) -> BotBuild:
    """Check the arguments and find the bot's kind and entry.

    :raises BuildError: for a missing folder, a bad name or version, or no usable entry.
    """
    d = Path(folder)
    if not d.is_dir():
        raise BuildError(f"{folder}: not a folder")
    check_name_version(name, version)
    pkg = d / "package.json"
    if pkg.is_file():
        if pkg.stat().st_size > PACKAGE_JSON_BYTES:
            raise BuildError(f"{pkg} is over {PACKAGE_JSON_BYTES} bytes (it names the entry and the dependencies)")
        try:
            main = json.loads(pkg.read_text(encoding="utf-8")).get("main")
        except RecursionError:
            raise BuildError(f"{pkg}: not a JSON object: nested too deep") from None
        except (OSError, ValueError, AttributeError) as e:
            raise BuildError(f"{pkg}: not a JSON object: {e}") from None
        entry = entry or main
        if isinstance(entry, str) and not _inside(d, entry):
            raise BuildError(f"--entry {entry[:100]!r}: the entry must be a file inside the folder")
        if not isinstance(entry, str) or not (d / entry).is_file():
            raise BuildError(
                f"{folder}: no entry file: pass --entry FILE or set \"main\" in package.json (got {entry!r})"
            )
        kind = "node"
    else:
        if not entry or len(entry) > ENTRY_CHARS or not _ENTRY.fullmatch(entry):
            raise BuildError(f"{folder}: a Python bot needs --entry module:Class of at most {ENTRY_CHARS} characters "
                             f"(got {entry if entry is None else entry[:100]!r})")
        module = entry.split(":")[0].replace(".", "/")
        if not ((d / f"{module}.py").is_file() or (d / module / "__init__.py").is_file()):
            raise BuildError(f"{folder}: --entry {entry}: no {module}.py in the folder")
        _check_entry_class(d, module, entry)
        kind = "python"
    return BotBuild(d.resolve(), kind, entry, tag or f"allfours-bots/{name}:{version}", name, version)


def default_base(kind: str) -> str:
    """The base image a ``kind`` (``python``, ``node``) build uses without ``--base``: the ``ARG BASE=``
    default of the project's Dockerfile."""
    text = (DOCKER_DIR / f"bot-{kind}.Dockerfile").read_text(encoding="utf-8")
    found = re.search(r"^ARG BASE=(\S+)$", text, re.MULTILINE)
    if found is None:
        raise BuildError(f"docker/bot-{kind}.Dockerfile has no ARG BASE= line")
    return found.group(1)


def _check_entry_class(folder: Path, module: str, entry: str) -> None:
    """:raises BuildError: the entry's module surely binds no such name (see :func:`_may_bind`)."""
    name = entry.split(":")[1]
    path = folder / f"{module}.py"
    if not path.is_file():
        path = folder / module / "__init__.py"
        if (path.parent / f"{name}.py").exists() or (path.parent / name).is_dir():
            return  # a submodule: bound once something imports it
    try:
        if path.stat().st_size > ENTRY_PARSE_BYTES:
            return  # unsure: not worth its parse (see ENTRY_PARSE_BYTES)
        tree = ast.parse(path.read_bytes(), filename=path.name)
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return  # unsure: python in the image may read it, or say why
    if not _may_bind(tree, name):
        shown = path.relative_to(folder).as_posix()
        raise BuildError(f"--entry {entry}: {shown} defines or imports no {name}")


def _may_bind(tree: ast.Module, name: str) -> bool:
    """Whether ``tree`` may bind ``name`` as a module attribute: False only when sure it does not (no
    definition, assignment, import or ``global`` of it anywhere, no ``from x import *``, no module
    ``__getattr__``, no string constant ``name``, as a ``globals()[...]`` or ``setattr`` would use)."""
    return any(_binds(node, name) for node in ast.walk(tree))


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` may bind ``name`` (see :func:`_may_bind`)."""
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name in (name, "__getattr__")
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.alias):
        return node.name == "*" or (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, ast.Global | ast.Nonlocal):
        return name in node.names
    if isinstance(node, ast.Constant):
        return bool(node.value == name)
    return name in {getattr(node, "name", None), getattr(node, "rest", None)}  # except ... as, match patterns


def _sdk_requirements() -> str:
    """The SDK's own dependencies (grpcio, protobuf), with the project's version floors."""
    try:
        reqs = importlib.metadata.requires("allfours-arena") or []
    except importlib.metadata.PackageNotFoundError:
        reqs = []
    keep = [r for r in reqs if re.match(r"(grpcio|protobuf)\b", r) and "extra ==" not in r]
    return "\n".join(keep or ["grpcio", "protobuf"]) + "\n"


def make_context(build: BotBuild, into: Path, ca_bundle: Path) -> None:
    """Assemble the build context of ``build`` in the empty folder ``into`` (see the module docstring)."""
    import allfours
    import referee
    import sdk

    shutil.copytree(build.folder, into / "bot", ignore=_SKIP)
    try:
        shutil.copyfile(ca_bundle, into / "build-ca.pem")
    except OSError as e:
        raise BuildError(f"--ca-bundle {ca_bundle}: {e.strerror}") from None
    if build.kind == "python":
        shutil.copyfile(DOCKER_DIR / "bot-python.Dockerfile", into / "Dockerfile")
        (into / "sdk-requirements.txt").write_text(_sdk_requirements(), encoding="utf-8")
        # Always there (empty without one): the Dockerfile copies it by name (see its header).
        own = build.folder / "requirements.txt"
        (into / "bot-requirements.txt").write_bytes(own.read_bytes() if own.is_file() else b"")
        for pkg in (allfours, referee, sdk):
            src = Path(inspect.getfile(pkg)).parent
            shutil.copytree(src, into / "allfours" / src.name, ignore=_SKIP)
    else:
        shutil.copyfile(DOCKER_DIR / "bot-node.Dockerfile", into / "Dockerfile")
        proto = Path(referee.__file__).resolve().parent.parent / "proto"
        if not proto.is_dir():
            raise BuildError(f"the .proto files are not at {proto} (build from a checkout of the project)")
        shutil.copytree(proto, into / "proto", ignore=shutil.ignore_patterns("*.yaml", "*.md"))


def build_image(build: BotBuild, base: str | None = None, ca_bundle: Path = HOST_CA_BUNDLE, client: Any = None,
                timeout_s: int = BUILD_TIMEOUT_S, memory_mb: int = BUILD_MEMORY_MB, network: str | None = None,
                cgroup_parent: str | None = None, disk_bytes: int | None = None,
                files_limit: int | None = None) -> str:
    """Build ``build``'s image; returns its id. ``timeout_s``: the whole build's time limit (a build that
    keeps printing is stopped too: its connection is closed, which cancels it in dockerd); ``memory_mb``:
    the memory (and memory+swap) of each step's container. ``network``: the docker network the build's
    steps run on (``network_mode``; None: docker's default bridge, from which the build reaches the
    host's services; the competition service passes its :class:`arena.hosting.sandbox.BuildNetwork`).
    ``cgroup_parent``: the parent cgroup of the steps' containers (docker's ``cgroupparent``; the
    competition service passes its build network's, whose pids limit stops a fork bomb of the bot's
    own build scripts: docker's build API has no pids limit of its own). ``disk_bytes``: most bytes a
    step may write (its container's writable layer, polled every :data:`DISK_POLL_S` s while it runs;
    over it the step is killed and the build fails): docker's build API has no disk limit, and the
    built image's size is known only once the build ends. ``files_limit``: most files, folders and links
    a step may make (counted in its writable layer at the same polls; over it the step is killed too):
    empty files take no bytes, but each takes one of the host disk's inodes.

    :raises BuildError: with the build's error line, when it timed out, or when docker is unreachable.
    """
    import docker.errors

    from arena.hosting.sandbox import SandboxError, docker_client

    try:
        client = client or docker_client(timeout=timeout_s)
    except SandboxError as e:
        raise BuildError(str(e)) from None
    args, memory = {"BOT_ENTRY": build.entry, **({"BASE": base} if base else {})}, memory_mb * 1024 * 1024
    over = f"the build of {build.tag} went over the build time limit of {timeout_s} s"
    trace = _Trace(time.time())  # what its steps made, removed if the build fails (:func:`_sweep`)
    replaced = image_id(client, build.tag)  # the image the tag names now, if any (:func:`_remove_replaced`)
    with pid_temp_dir(BUILD_DIR_PREFIX) as tmp:  # a killed arena's is removed at the next start
        make_context(build, Path(tmp), ca_bundle)
        hang_up = threading.Timer(timeout_s, trace.time_up)  # a silent build too: its reader sees the end
        try:
            with _build_request(client, cgroup_parent, trace):
                stream = client.api.build(path=tmp, tag=build.tag, buildargs=args, rm=True, forcerm=True, pull=False,
                                          labels={"org.allfours.bot": build.name,
                                                  "org.allfours.version": build.version},
                                          container_limits={"memory": memory, "memswap": memory},
                                          timeout=timeout_s, decode=True, network_mode=network)
            hang_up.start()
            watch = _DiskWatch(client, disk_bytes, files_limit) if disk_bytes or files_limit else None
            try:
                return _remove_replaced(client, replaced, _follow(stream, build.tag, time.monotonic() + timeout_s,
                                                                   over, watch, trace))
            finally:
                if watch is not None:
                    watch.stop()
        except BuildError as e:
            if str(e) == over:
                client.api.close()  # the connection goes with the stream: docker stops the build
            raise
        except docker.errors.APIError as e:
            raise BuildError(f"docker refused the build of {build.tag}: {e.explanation or e}") from None
        finally:
            hang_up.cancel()
            trace.hang_up()
            _sweep(client, trace)  # nothing once built: :func:`_follow` clears it


@dataclass
class _Trace:
    """What a build under way has made: ``made``, the ids of the images its steps committed (not those
    taken from the build cache), oldest first; ``tip``, the last step image it named (committed, cached or
    the base: the next step's container runs from it; ``ran``: a step was seen running from it);
    ``since``, its start (``time.time()``); and ``response``, its HTTP response (its connection, closed
    by :meth:`hang_up`; ``timed_out`` once :meth:`time_up` did so)."""

    since: float
    made: list[str] = field(default_factory=list)
    tip: str = ""
    response: Any = None
    timed_out: bool = False
    ran: bool = False  # a step's container ran from ``tip`` ("Running in")
    kept: bool = False  # the step under way names the base or a cached image, not one it commits

    def time_up(self) -> None:
        """The build's time is up (from a timer's thread): ``timed_out`` set, the connection shut down (both
        ways), which cancels the build in dockerd, and its reader sees the end. Never raises."""
        self.timed_out = True
        with contextlib.suppress(Exception):
            self.response.raw._connection.sock.shutdown(socket.SHUT_RDWR)

    def hang_up(self) -> None:
        """Close the build's connection now, not when its stream is collected (docker goes on building until
        then): shut down both ways, whatever else holds the socket, then closed. Once only; never raises."""
        response, self.response = self.response, None
        if response is None:
            return
        with contextlib.suppress(Exception):
            response.raw._connection.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            response.close()


@contextlib.contextmanager
def _build_request(client: Any, parent: str | None, trace: _Trace) -> Iterator[None]:
    """Within it, ``client``'s build request hands its HTTP response to ``trace`` (the docker SDK returns
    only a generator over it, which holds the connection open, and docker building, until it is
    collected) and carries ``cgroupparent=parent`` if given (the engine API's build parameter, which the
    docker SDK does not pass: its ``container_limits`` takes four keys only)."""
    api = client.api
    post = getattr(api, "_post", None)
    if post is None:  # not the docker SDK's client
        yield
        return

    def traced(url: str, **kwargs: Any) -> Any:
        if url.endswith("/build") and parent:
            kwargs["params"] = {**(kwargs.get("params") or {}), "cgroupparent": parent}
        response = post(url, **kwargs)
        if url.endswith("/build"):
            trace.response = response
        return response

    api._post = traced
    try:
        yield
    finally:
        del api._post  # the class's method again


#: Seconds between two looks at the size of a build step's writable layer (:class:`_DiskWatch`).
DISK_POLL_S = 1.0


def count_entries(folders: list[str], stop: int) -> int:
    """Files, folders and links below ``folders`` (the folders themselves not counted), without following
    links; counting stops once past ``stop`` (the count is then ``stop + 1``). Unreadable folders count
    what they hold as nothing."""
    n, todo = 0, list(folders)
    while todo:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    n += 1
                    if n > stop:
                        return n
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError:
            continue
    return n


def layer_folders(attrs: dict[str, Any]) -> list[str] | None:
    """The host folders of an image's or container's layers (``inspect``'s ``GraphDriver``), top first, or
    None for a storage driver other than ``overlay2`` (whose layers are not plain folders)."""
    driver = attrs.get("GraphDriver") or {}
    if driver.get("Name") != "overlay2":
        return None
    data = driver.get("Data") or {}
    return [d for d in [data.get("UpperDir") or "", *(data.get("LowerDir") or "").split(":")] if d]


def image_files(client: Any, image: str, base: str | None, stop: int) -> int | None:
    """The files, folders and links of ``image``'s layers not also ``base``'s (all of them without a
    base), counted up to ``stop + 1`` (:func:`count_entries`); None when the storage driver is not
    ``overlay2`` or the layers are not on this machine."""
    own = layer_folders(client.api.inspect_image(image))
    if own is None or not all(os.path.isdir(d) for d in own):
        return None
    shared = set(layer_folders(client.api.inspect_image(base)) or []) if base else set()
    return count_entries([d for d in own if d not in shared], stop)


class _DiskWatch:
    """Watches the container of the build step under way (:meth:`step`) in a thread and kills it once
    its writable layer holds over ``limit`` bytes or over ``files`` files, folders and links (``over``
    then says so)."""

    def __init__(self, client: Any, limit: int | None, files: int | None = None):
        self.client, self.limit, self.files = client, limit, files
        self.over: str | None = None
        self._container: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="build-disk-watch", daemon=True)
        self._thread.start()

    def step(self, container: str) -> None:
        """The build's current step runs in ``container`` (an id)."""
        self._container = container

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(DISK_POLL_S):
            cid = self._container
            if cid is None:
                continue
            try:  # the list's size=True gives SizeRw (the SDK's inspect_container cannot ask for it)
                found = self.client.api.containers(all=True, size=True, filters={"id": cid})
                size = int(found[0].get("SizeRw") or 0) if found else 0
            except Exception:  # the step ended meanwhile
                continue
            if self.limit and size > self.limit:
                self.over = f"a build step wrote {size} bytes, over the image limit of {self.limit} bytes"
            elif self.files and self._files(cid) > self.files:
                self.over = (f"a build step made over {self.files} files, folders and links, over the image limit "
                             "of files")
            else:
                continue
            with contextlib.suppress(Exception):
                self.client.api.kill(cid)
            return

    def _files(self, cid: str) -> int:
        """The files, folders and links in container ``cid``'s writable layer, counted up to the limit."""
        try:
            folders = layer_folders(self.client.api.inspect_container(cid))
        except Exception:  # the step ended meanwhile
            return 0
        return count_entries(folders[:1], self.files or 0) if folders else 0


def _remove_replaced(client: Any, replaced: str | None, built: str) -> str:
    """Remove ``replaced``, the image a build's tag named before it (the same name and version built
    again), when the build ``built`` another and nothing else names or uses it: it would stay on the host's
    disk, dangling, for good (about 220 MB for a Python bot). Not forced: an image a container runs, or that
    another tag names, stays; docker's errors are ignored. Returns ``built``."""
    import docker.errors

    old, new = (replaced or "").removeprefix("sha256:"), built.removeprefix("sha256:")  # one may be short
    if old and new and not (old.startswith(new) or new.startswith(old)):
        with contextlib.suppress(docker.errors.DockerException, OSError):
            if not client.api.inspect_image(replaced).get("RepoTags"):
                client.api.remove_image(replaced)
    return built


#: Seconds a failed build's sweep waits at most for docker to be done with the step under way (:func:`_sweep`).
SWEEP_WAIT_S = 60.0


def _sweep(client: Any, trace: _Trace) -> None:
    """Remove the images a failed build's steps committed: the classic builder keeps one per step, untagged,
    and a failed build's stayed on the host's disk for good (a Node.js bot whose ``npm install`` fails left
    its whole folder there, once per rejected submission). Those it named (``trace.made``), and those it
    committed after the arena stopped reading (a given-up build's step that ended meanwhile): untagged
    images descended from ``trace.tip`` made since the build began, once docker is done with the step
    under way (no container made since then runs from one of them; at most :data:`SWEEP_WAIT_S` s). Only
    when ``tip`` is its own or a step was seen running from it: another build's steps may descend from a
    shared base or cache image. Not forced, and never a tagged one: an image another build has meanwhile
    built on (its cache) stays; docker's errors are ignored."""
    import docker.errors

    if not trace.tip or not (trace.made or trace.ran):  # no image of its own yet, and none under way
        trace.tip = ""
        return
    with contextlib.suppress(docker.errors.DockerException, OSError):
        later = _descendants(client, trace)
        deadline = time.monotonic() + SWEEP_WAIT_S
        while _steps_under_way(client, trace, later) and time.monotonic() < deadline:
            time.sleep(0.2)
            later = _descendants(client, trace)
        for image in [*reversed(later), *reversed(trace.made)]:  # children before their parents
            with contextlib.suppress(docker.errors.DockerException, OSError):
                if not client.api.inspect_image(image).get("RepoTags"):  # a tagged one is someone's
                    client.api.remove_image(image)
    trace.made.clear()
    trace.tip = ""


def _descendants(client: Any, trace: _Trace) -> list[str]:
    """The ids of the images made since ``trace.since`` that descend from ``trace.tip``, parents first."""
    since = int(trace.since) - 1  # docker's Created is in whole seconds
    children: dict[str, list[str]] = {}
    for image in client.api.images(all=True):
        if int(image.get("Created") or 0) >= since and image.get("ParentId"):
            children.setdefault(image["ParentId"], []).append(image["Id"])
    tip = image_id(client, trace.tip) or trace.tip
    found, todo = [], [tip]
    while todo:
        for child in children.get(todo.pop(0), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def _steps_under_way(client: Any, trace: _Trace, later: list[str]) -> bool:
    """Whether a container made since ``trace.since`` runs from ``trace.tip`` or one of ``later`` (a build
    step docker has not committed or removed yet)."""
    tip = image_id(client, trace.tip) or trace.tip
    since = int(trace.since) - 1
    return any(c.get("ImageID") in (tip, *later) and int(c.get("Created") or 0) >= since
               for c in client.api.containers(all=True))


def _follow(stream: Any, tag: str, deadline: float, over: str, watch: _DiskWatch | None = None,
            trace: _Trace | None = None) -> str:
    """Read a build's decoded output ``stream`` to its image id, or stop it (closing the stream) at
    ``deadline`` (``time.monotonic()``), or once ``trace.timed_out`` (its connection closed under it);
    ``watch`` is told each step's container; ``trace`` what the steps made (:class:`_Trace`, emptied once
    the image is built). :raises BuildError: the build's error line (the disk watch's when it killed the
    step), or ``over``."""
    import urllib3.exceptions

    trace = trace or _Trace(time.time())
    image_id, last = "", ""
    said = ""  # the end of the output (at most OUTPUT_TAIL_CHARS), for its author
    try:
        for chunk in stream:
            if time.monotonic() > deadline:
                raise BuildError(over, said)
            if "error" in chunk:
                if watch is not None and watch.over:
                    raise BuildError(f"the build of {tag} failed: {watch.over}", said)
                raise BuildError(f"the build of {tag} failed: {' '.join(str(chunk['error']).split())[:400]}",
                                 said)
            text = str(chunk.get("stream") or "")
            said = (said + text)[-OUTPUT_TAIL_CHARS:]
            line = text.strip()
            _note_step(trace, line)
            running = re.search(r"---> Running in ([0-9a-f]{12,64})\b", text)
            if running and watch is not None:
                watch.step(running.group(1))
            last = line or last
            image_id = str((chunk.get("aux") or {}).get("ID") or "") or image_id
            built = re.match(r"Successfully built ([0-9a-f]+)$", line)
            image_id = built.group(1) if built else image_id
    except (urllib3.exceptions.HTTPError, OSError, ValueError):  # a read timeout, or its connection closed
        if not trace.timed_out and time.monotonic() < deadline and not _read_timeout(sys.exc_info()[1]):
            raise
        raise BuildError(over, said) from None
    finally:
        stream.close()
    if not image_id:
        if trace.timed_out:
            raise BuildError(over, said)
        raise BuildError(f"the build of {tag} failed: {' '.join(last.split())[:400] or 'no image'}", said)
    trace.made.clear()  # the built image's own: not for :func:`_sweep`
    trace.tip = ""
    return image_id


def _read_timeout(e: BaseException | None) -> bool:
    """Whether ``e`` is a read that timed out (the client's timeout: the build sent nothing for that long)."""
    import requests.exceptions
    import urllib3.exceptions

    return isinstance(e, urllib3.exceptions.ReadTimeoutError | requests.exceptions.ReadTimeout | TimeoutError)


def _note_step(trace: _Trace, line: str) -> None:
    """Note in ``trace`` what a line of a build's output says of its steps (see :class:`_Trace`)."""
    instruction = re.match(r"Step \d+/\d+ : (\w+)", line)
    if instruction:  # FROM names the base image: never the build's to remove
        trace.kept = instruction.group(1).upper() == "FROM"
    step = re.fullmatch(r"---> ([0-9a-f]{12,64})", line)
    if step:
        trace.tip, trace.ran = step.group(1), False
        if not trace.kept:
            trace.made.append(step.group(1))
    if re.match(r"---> Running in [0-9a-f]{12,64}\b", line):
        trace.ran = True
    trace.kept = line == "---> Using cache" or (trace.kept and not step)
