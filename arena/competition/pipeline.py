"""The build queue: one submission at a time from ``received`` to ``accepted`` or ``rejected``.

A thread (:class:`BuildQueue`) takes the oldest ``received`` submission, builds its image with the
machinery of ``arena bots build`` (:mod:`arena.hosting.bots_build`: the project's Dockerfiles, the
bot's unpacked folder as the only user content of the build context, ``[competition] build_s`` as the
time limit), refuses (and removes) an image over ``image_bytes`` or whose own layers hold over
``image_files`` files (:func:`arena.hosting.bots_build.image_files`), validates it
(:mod:`arena.competition.validate`), and on a pass retires the competitor's oldest entrants over
``in_play``, removes the images of their oldest retired versions over ``versions_kept`` (not their
selected final entry) and calls ``enroll`` (the league grows at once:
:meth:`arena.tournament.league.League.request_reload`). A rejection names its step (``build``,
``image``, ``validation``) with a one-line reason and the log tail, and removes the image; the arena's
own trouble (docker unreachable, the build network failing, a base image neither on the host nor
pullable: :class:`BaseMissing`; a conformance suite that could not judge the bot: it did not run,
crashed, or docker failed under it; files lost to a kill while the submission was taken in) marks the
submission ``failed``, which the per-day limit does not count, and is told in the host's log with its fix.

Each decision removes the files it frees (:func:`prune_submission_files`): a rejected submission keeps
only its receipt (the archive's digest and size), an accepted one its unpacked folder while it is
scheduled; what a kill left undone goes at the queue's next start (docs/competition.md, "Disk").

Builds run the competitor's own code as root (npm's ``preinstall``, a pip sdist's ``setup.py``): they
run on the run's build network (:class:`arena.hosting.sandbox.BuildNetwork`: the registries reachable,
no service of the host), made before the first build and removed by :meth:`BuildQueue.stop`.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.competition.book import IN_PLAY, IN_QUEUE, CompetitionBook, Submission
from arena.competition.validate import Verdict, validate_image
from arena.config import CompetitionSettings
from referee.wire import plain_text

if TYPE_CHECKING:
    from arena.hosting.sandbox import BuildNetwork

#: Seconds the queue's thread sleeps between looks when nothing wakes it.
POLL_S = 2.0
#: A validation: (image tag, key labelling its containers, submission) -> verdict.
Validator = Callable[[str, str, Submission], Verdict]


#: Most characters of one note to the host's console (control characters dropped).
NOTE_CHARS = 2000


#: The ``[competition]`` key naming the base image of each kind of source build.
BASE_KEYS = {"python": "base_python", "node": "base_node"}


class BaseMissing(RuntimeError):
    """A build's base image is not on this host and could not be pulled: the host's fault, not the
    submission's; ``str(e)`` is one line naming the host's fix."""


def base_of(settings: CompetitionSettings, kind: str) -> str:
    """The base image a ``kind`` build uses: ``[competition] base_python``/``base_node``, else the
    official image the project's Dockerfile names."""
    from arena.hosting.bots_build import default_base

    return str(getattr(settings, BASE_KEYS[kind]) or default_base(kind))


def host_fix(kind: str) -> str:
    """What a host without a registry does about a missing base image of ``kind`` (one clause)."""
    return (f"set [competition] {BASE_KEYS[kind]} to a local image (make one: bash docker/base-image.sh {kind}), "
            "then send arena serve SIGHUP")


def on_host(client: Any, image: str) -> bool:
    """Whether docker has ``image`` here (True when docker cannot say: only a sure absence counts)."""
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.DockerException:
        return True
    return True


def warn_missing_bases(settings: CompetitionSettings, note: Callable[[str], None]) -> None:
    """Note a warning line for each kind of build whose base image is not on this host (the host may
    reach a registry: nothing is refused); nothing when docker does not answer (builds say so)."""
    from arena.hosting.sandbox import SandboxError, docker_client

    try:
        client = docker_client()
    except SandboxError:
        return
    try:
        for kind in BASE_KEYS:
            if not on_host(client, base := base_of(settings, kind)):
                note(f"warning: {base}, the base image of {kind} submissions, is not on this host: their "
                     f"builds will pull it, and fail where no registry is reachable; {host_fix(kind)}")
    finally:
        client.close()

#: A prebuilt image's archive in its submission's folder (``OUTPUT/submissions/ID/image.tar``).
IMAGE_ARCHIVE = "image.tar"


def submission_folder(output: Path, sid: int) -> Path:
    """Where submission ``sid``'s unpacked files are kept (``OUTPUT/submissions/ID/bot``)."""
    return output / "submissions" / str(sid) / "bot"


#: An upload's receipt in its submission's folder (``OUTPUT/submissions/ID/upload.json``, 0600): the
#: archive's ``sha256`` (hex) and ``bytes``, kept as long as the book's row.
RECEIPT = "upload.json"


def tree_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (itself if a file), links not followed."""
    if path.is_symlink():
        return 0
    if path.is_file():
        return path.lstat().st_size
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _remove(path: Path) -> int:
    """Remove ``path`` (a file, a link, or a folder with all it holds; nothing if absent); its bytes."""
    if path.is_dir() and not path.is_symlink():
        size = tree_bytes(path)
        shutil.rmtree(path)
        return size
    if path.exists() or path.is_symlink():
        size = tree_bytes(path)
        path.unlink()
        return size
    return 0


def files_needed(sub: Submission | None) -> tuple[str, ...] | None:
    """The names ``sub``'s folder (``OUTPUT/submissions/ID``) keeps; None: all of it (a submission still
    in the queue builds from them, a ``failed`` one is built again by ``arena competition retry``).
    A rejected one keeps its receipt only (never built again: its status, reason and log tail are in the
    book); an accepted one runs, in the league and in the final, from its image, so its ``image.tar`` goes
    and its unpacked ``bot`` stays only while it is scheduled (not retired: what a host would rebuild it
    from); a folder of no submission keeps nothing."""
    if sub is None:
        return ()
    if sub.status in IN_QUEUE or sub.status == "failed":
        return None
    if sub.status in IN_PLAY and not sub.retired:
        return (RECEIPT, "bot")
    return (RECEIPT,)


def prune_submission_files(book: CompetitionBook, output: Path) -> tuple[int, int]:
    """Remove from ``OUTPUT/submissions`` what no submission needs any more (:func:`files_needed`);
    returns (items removed, their bytes). The folders are listed before the book is read: a folder is
    moved in only after its row is kept (:meth:`arena.competition.desk.Desk.receive`), so a listed one
    has its row, unless it is an orphan (the book restored from an older backup). Run after each
    rejection and acceptance and at the queue's start, so what a kill between a decision and its removal
    left goes at the next start; ``incoming-*`` uploads are :func:`arena.competition.desk.remove_partial_uploads`'."""
    root = output / "submissions"
    if not root.is_dir():
        return 0, 0
    folders = [d for d in root.iterdir() if d.name.isdigit() and d.is_dir() and not d.is_symlink()]
    if not folders:
        return 0, 0
    subs = {s.id: s for s in book.submissions()}
    items = size = 0
    for folder in folders:
        keep = files_needed(subs.get(int(folder.name)))
        if keep is None:
            continue
        if not keep:
            size += _remove(folder)
            items += 1
            continue
        for item in folder.iterdir():
            if item.name not in keep:
                size += _remove(item)
                items += 1
    return items, size


def submission_tag(settings: CompetitionSettings, output: Path, name: str, version: str) -> str:
    """The image tag of submission ``name`` ``version`` of the competition kept in ``output``:
    ``IMAGE_PREFIX/KEY/NAME:VERSION``, KEY the folder's run key (:func:`arena.hosting.sandbox.run_key`),
    so two competitions on one docker host never share a tag, whatever their ``image_prefix``."""
    from arena.hosting.sandbox import run_key

    return f"{settings.image_prefix}/{run_key(output)}/{name}:{version}"


@dataclass
class BuildQueue:
    """The queue's thread and what it needs (see the module docstring). :meth:`start`, :meth:`wake`
    (a submission arrived), :meth:`stop`."""

    book: CompetitionBook
    settings: CompetitionSettings
    output: Path
    enroll: Callable[[], None]
    note: Callable[[str], None]
    validator: Validator | None = None
    client: Any = None
    tournament: str = ""
    #: Held by the desk while it keeps a submission and moves its files in
    #: (:attr:`arena.competition.desk.Desk.intake`): :meth:`_files_lost` waits on it.
    intake: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        note = self.note
        # A note quotes the submission's own words (docker's errors name its files): no escape sequence
        # or other control character of theirs reaches the host's console.
        self.note = lambda message: note(plain_text(message, NOTE_CHARS))
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="competition-builds", daemon=True)
        self._network: BuildNetwork | None = None  # made by the first build
        self._network_lock = threading.Lock()

    def start(self) -> None:
        """Remove the build contexts and validation sockets a killed arena left in the temp folder
        (:func:`arena.hosting.tempdirs.sweep_dead`), resume what a restart interrupted
        (:meth:`CompetitionBook.resume`), remove the submissions' files a kill between a decision and
        their removal left (:func:`prune_submission_files`, one line if any), then serve the queue."""
        from arena.competition.validate import SOCKET_DIR_PREFIX
        from arena.hosting.bots_build import BUILD_DIR_PREFIX
        from arena.hosting.tempdirs import sweep_dead

        sweep_dead((BUILD_DIR_PREFIX, SOCKET_DIR_PREFIX))
        waiting = self.book.resume()
        try:
            items, size = prune_submission_files(self.book, self.output)
        except OSError as e:
            items, size = 0, 0
            self.note(f"submissions' files no longer needed could not be removed: {e}")
        if items:
            self.note(f"removed {items} submission file tree(s) no longer needed ({size} bytes): rejected or "
                      f"retired submissions' files, and folders of no submission, that a stopped arena serve left")
        if waiting:
            self.note(f"{len(waiting)} submission(s) in the build queue")
        self._thread.start()

    def wake(self) -> None:
        """Look at the queue now (thread-safe)."""
        self._wake.set()

    def stop(self) -> None:
        """Stop after the submission under way (its status is resumed on the next start), then remove
        the build network and its firewall chain (a build still under way loses its network)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self._network_lock:
            if self._network is not None:
                self._network.close()
                self._network = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(POLL_S)
            self._wake.clear()
            for sub in self.book.submissions(statuses=("received",)):
                if self._stop.is_set():
                    return
                self.process(sub)

    def process(self, sub: Submission) -> None:
        """Take ``sub`` through build and validation to its status (see the module docstring); one whose
        files are not in its folder (:meth:`_files_lost`) fails at once."""
        from arena.hosting.bots_build import BuildError

        if self._files_lost(sub):
            return
        self.book.set_status(sub.id, "building")
        try:
            image = self._build(sub)
        except BuildError as e:
            if self._stop.is_set():  # stopping: the build lost its network; it runs again at the next start
                return
            step = "image" if "image limit" in str(e) else "build"
            # its author's own build output (what pip or npm said), then the reason: the book keeps the end
            tail = f"{e.output.rstrip()}\n{e}" if e.output.strip() else str(e)
            self.book.set_status(sub.id, "rejected", step, str(e), log_tail=tail)
            self._prune()
            self.note(f"submission {sub.id} ({sub.entrant}) rejected at its {step}: {e}")
            return
        except BaseMissing as e:
            self.book.set_status(sub.id, "failed", "build", str(e))
            self.note(f"submission {sub.id} ({sub.entrant}) failed, not counted in {sub.competitor}'s day: {e} "
                      f"(once mended: arena competition retry CONFIG {sub.id})")
            return
        except Exception as e:  # docker gone, disk full: not the competitor's fault
            if not self._stop.is_set():  # stopping: the build lost its network; it runs again at the next start
                why = f"the arena could not build it: {type(e).__name__}: {e}"
                self.book.set_status(sub.id, "failed", "build", why)
                self.note(f"submission {sub.id} ({sub.entrant}) failed, not counted in {sub.competitor}'s day: "
                          f"{why} (once mended: arena competition retry CONFIG {sub.id})")
            return
        self.book.set_status(sub.id, "validating", image=image)
        if not self._judge(sub, image):
            return
        self.book.set_status(sub.id, "accepted", image=image)
        self._retire_old(sub)
        self._remove_old_images(sub)
        self._prune()
        self.note(f"submission {sub.id} accepted: {sub.entrant} enters the league")
        self.enroll()

    def _files_lost(self, sub: Submission) -> bool:
        """Whether ``sub``'s files (its unpacked folder, or its image's archive) are missing, marking it
        ``failed`` then (not counted, told in the host's log; its reason names no path of the server): the
        arena was killed between keeping the submission and moving its files in, or the move failed
        (:meth:`arena.competition.desk.Desk.receive`; what was taken in is removed at the next start). A
        move under way is waited for (:attr:`intake`)."""
        folder = submission_folder(self.output, sub.id)

        def kept() -> bool:
            return (folder.parent / IMAGE_ARCHIVE).is_file() if sub.kind == "image" else folder.is_dir()

        if kept():
            return False
        with self.intake:  # the desk may be between keeping the submission and moving its files in
            if kept():
                return False
        why = "the arena lost its files while taking it in (arena serve stopped, or its disk failed): submit it again"
        self.book.set_status(sub.id, "failed", "build", why)
        self.note(f"submission {sub.id} ({sub.entrant}) failed, not counted in {sub.competitor}'s day: {why}")
        return True

    def _judge(self, sub: Submission, image: str) -> bool:
        """Validate ``sub``'s ``image``; True on a pass. Failing checks reject it (counted in the day); a
        suite that could not judge it (:attr:`Verdict.fault`: it did not run, crashed, docker failed) marks
        it ``failed``, told in the host's log with the fix (not counted); either way the image goes. While
        the queue stops, nothing is marked: the validation runs again at the next start."""
        try:
            verdict = (self.validator or self._validate)(image, f"sub{sub.id}", sub)
        except Exception as e:  # the suite's machinery (docker's CLI, the temp folder), not the bot
            why = plain_text(f"{type(e).__name__}: {e}", 300)
            verdict = Verdict(False, ("suite",), "", f"the validation could not run: {why}")
        if verdict.passed:
            return True
        if self._stop.is_set():
            return False
        self._discard(image)
        if verdict.fault:
            why = f"the arena could not validate it: {verdict.fault}"
            self.book.set_status(sub.id, "failed", "validation", why, verdict.detail)
            self.note(f"submission {sub.id} ({sub.entrant}) failed, not counted in {sub.competitor}'s day: "
                      f"{why} (once mended: arena competition retry CONFIG {sub.id})")
            return False
        reason = f"failing checks: {', '.join(verdict.failing)}"
        self.book.set_status(sub.id, "rejected", "validation", reason, verdict.detail)
        self._prune()
        self.note(f"submission {sub.id} ({sub.entrant}) rejected by validation: {reason}")
        return False

    def _prune(self) -> None:
        """Remove the files no submission needs any more (:func:`prune_submission_files`), under the intake
        lock (the desk keeps a row, then moves its folder in: a folder is never taken for an orphan of a
        row being kept); a failure is only noted (the decision stands, the next prune tries again)."""
        try:
            with self.intake:
                prune_submission_files(self.book, self.output)
        except OSError as e:
            self.note(f"submissions' files no longer needed could not be removed: {e}")

    def _discard(self, tag: str) -> None:
        """Remove a rejected submission's image: it never plays, and a competitor's day of rejected
        builds would otherwise keep up to ``submissions_per_day`` x ``image_bytes`` on the host. The
        tag (``IMAGE_PREFIX/KEY/NAME:VERSION``) is the submission's own; docker's errors are only noted."""
        from arena.hosting.sandbox import docker_client

        try:
            (self.client or docker_client()).images.remove(tag, force=True)
        except Exception as e:  # docker gone: the image stays, the rejection stands
            self.note(f"the image {tag}, which will not play, could not be removed: {type(e).__name__}: {e}")

    def _validate(self, image: str, key: str, sub: Submission) -> Verdict:
        from arena.hosting.sandbox import run_key

        s = self.settings
        run = run_key(self.output)
        return validate_image(image, f"{s.image_prefix}-{run}-{key}", s.checks, s.cpus, s.memory_mb, run=run)

    def _build(self, sub: Submission) -> str:
        """Build ``sub``'s image; returns its tag. :raises BuildError: the build failed, took over
        ``build_s``, or made an image over ``image_bytes`` (which is then removed). :raises BaseMissing:
        its base image is not on the host and cannot be pulled."""
        from arena.hosting.bots_build import BuildError, build_image, image_files, plan_build
        from arena.hosting.sandbox import docker_client

        s = self.settings
        tag = submission_tag(s, self.output, sub.name, sub.version)
        client = self.client or docker_client(timeout=s.build_s)
        base = None
        if sub.kind == "image":
            image_id = self._load(client, sub, tag)
        else:
            plan = plan_build(submission_folder(self.output, sub.id), sub.name, sub.version, sub.entry or None, tag)
            base = base_of(s, plan.kind)
            _ensure_base(client, base, plan.kind)
            network = self._build_network(client)
            image_id = build_image(plan, base, client=client, timeout_s=s.build_s, network=network.name,
                                   cgroup_parent=network.cgroup_parent, disk_bytes=s.image_bytes,
                                   files_limit=s.image_files)
        size = int(client.images.get(image_id).attrs.get("Size", 0))
        if size > s.image_bytes:
            client.images.remove(tag, force=True)
            raise BuildError(f"the image is {size} bytes, over the image limit of {s.image_bytes} bytes")
        files = image_files(client, image_id, base, s.image_files)
        if files is not None and files > s.image_files:
            client.images.remove(tag, force=True)
            raise BuildError(f"the image holds over {s.image_files} files, folders and links of its own, over "
                             f"the image limit of files (each takes one of the host disk's inodes)")
        return tag

    def _build_network(self, client: Any) -> BuildNetwork:
        """The build network (its name, and the builds' parent cgroup: their pids limit), made on first use
        (what a crashed run of this output left is replaced), and made anew when a SIGHUP changed
        ``build_reaches`` (between builds: this queue's one thread builds). :raises
        arena.hosting.sandbox.SandboxError: docker, iptables or the cgroup failing, or the queue stopping (its
        network is gone)."""
        from arena.hosting.sandbox import BuildNetwork, SandboxError, run_key

        with self._network_lock:
            if self._stop.is_set():
                raise SandboxError("the build queue is stopping")
            if self._network is not None and self._network.reaches != self.settings.build_reaches:
                self._network.close()
                self._network = None
            if self._network is None:
                network = BuildNetwork(client, run_key(self.output), self.tournament, self.settings.build_reaches)
                network.open()
                self._network = network
            return self._network

    def _load(self, client: Any, sub: Submission, tag: str) -> str:
        """Load a prebuilt image (its archive has no tags: :func:`arena.competition.intake.copy_image_archive`)
        and tag it ``tag``; returns its id. :raises BuildError: docker refused it, not one image, or it
        declares volumes (``VOLUME``: writable space on the host's disk past ``--read-only``; removed again)."""
        import docker.errors

        from arena.hosting.bots_build import BuildError

        path = submission_folder(self.output, sub.id).parent / IMAGE_ARCHIVE
        try:
            with path.open("rb") as f:
                images = client.images.load(f)
        except (docker.errors.APIError, docker.errors.ImageLoadError) as e:  # the archive's fault, not the arena's
            why = plain_text(str(getattr(e, "explanation", None) or e), NOTE_CHARS)
            raise BuildError(f"docker refused the image archive: {why}") from None
        if len(images) != 1:
            raise BuildError(f"the archive holds {len(images)} images, not one")
        images[0].tag(tag)
        volumes = (images[0].attrs.get("Config") or {}).get("Volumes") or {}
        if volumes:
            with contextlib.suppress(docker.errors.APIError):  # by our tag: the same image may have others' tags
                client.images.remove(tag)
            raise BuildError(f"the image declares volumes ({', '.join(sorted(volumes))[:200]}): each container would "
                             "get writable space on the host's disk; a bot writes only to /tmp")
        return str(images[0].id)

    def _retire_old(self, sub: Submission) -> None:
        """Keep at most ``in_play`` scheduled entrants of ``sub``'s competitor: retire the oldest."""
        for old in self.book.retire_over(sub.competitor, self.settings.in_play):
            self.note(f"{old.entrant} retires from scheduling (its games are kept): {sub.entrant} takes its place")

    def _remove_old_images(self, sub: Submission) -> None:
        """Keep the images of at most ``versions_kept`` accepted versions of ``sub``'s competitor: remove those
        of the oldest retired ones (never their selected final entry; :meth:`CompetitionBook.images_over`),
        not forced: one a container still runs stays, and goes at a later acceptance."""
        import docker.errors

        from arena.hosting.sandbox import SandboxError, docker_client

        old = self.book.images_over(sub.competitor, self.settings.versions_kept)
        if not old:
            return
        try:
            client = self.client or docker_client()
        except SandboxError as e:
            self.note(f"the images of {len(old)} retired version(s) of {sub.competitor} stay for now: {e}")
            return
        for gone in old:
            if not self.book.claim_removal(gone):  # chosen for the final meanwhile: it stays
                continue
            try:
                if gone.image:
                    client.images.remove(gone.image)
            except docker.errors.ImageNotFound:
                pass
            except docker.errors.DockerException as e:
                self.book.keep_image(gone.id)
                why = " ".join(str(getattr(e, "explanation", None) or e).split())[:300]
                self.note(f"{gone.entrant}'s image stays for now (past versions_kept; docker: {why})")
                continue
            self.note(f"{gone.entrant}'s image is removed (past versions_kept = {self.settings.versions_kept}); "
                      "its games are kept")


def _ensure_base(client: Any, base: str, kind: str) -> None:
    """Pull ``base`` unless docker has it (a host with a registry). :raises BaseMissing: the pull failed
    (docker's own words, then the host's fix)."""
    import docker.errors

    if on_host(client, base):
        return
    try:
        client.images.pull(base)
    except docker.errors.DockerException as e:
        why = " ".join(str(getattr(e, "explanation", None) or e).split())[:300]
        raise BaseMissing(f"the arena's base image {base} is not on this host and could not be pulled ({why}); "
                          f"not the bot's fault, and not counted in the day's submissions: the host is to "
                          f"{host_fix(kind)}") from None
