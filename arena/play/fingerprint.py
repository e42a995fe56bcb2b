"""What a bot's check (:meth:`arena.play.game.GrpcGameRunner.check_bots`) was made on, as one digest: a check
that passed is kept in the tournament store under it (:class:`PassedChecks`), and ``arena serve`` started
again does not check a bot whose digest is unchanged (docs/arena.md, "The bots' check, and a restart").

Only a container bot has one (:func:`container_fingerprint`): the image's content ID (docker's image ID, a
SHA-256 of its configuration and of every layer's content, never its tag, which may name another image
tomorrow), every field of its spec (``env``, ``limits``, ``mode``, ...), the match's players and time control,
the host's docker engine, its components and kernel, this Python and its gRPC and docker
libraries (:func:`engine_facts`), and the digest of the arena's own code (:func:`arena_code_digest`: an upgrade of
the arena, its sandbox or its referee checks every bot again). A process bot has none: its command may run any
file of its folder, of the interpreter's or of the system's, which no cheap digest covers soundly, so it is
checked at every start; a lobby bot (``worker``, ``remote``) is not checked by ``check_bots`` at all.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from arena.config import BotSpec

#: Raise it when what a check proves changes in a way the arena's code digest cannot see.
FINGERPRINT_VERSION = "1"
#: The store's meta key of the passed checks (JSON object: entrant label -> fingerprint hex).
PASSED_CHECKS_KEY = "passed_checks"
#: The packages whose source the arena's code digest covers: what starts, sandboxes and referees a check.
_CODE_PACKAGES = ("arena", "referee", "allfours")


@cache
def arena_code_digest() -> str:
    """SHA-256 hex of the arena's own source (every ``*.py`` file of :data:`_CODE_PACKAGES`, by relative
    path and content), read once per process (a few hundred small files)."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for package in _CODE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(hashlib.sha256(str(path.relative_to(root)).encode() + b"\0" + _content_digest(path)).digest())
    return h.hexdigest()


def _content_digest(path: Path) -> bytes:
    """The SHA-256 of regular file ``path``'s content (read in blocks, whatever its size); for a path that is no
    readable regular file (a dangling symlink such as an editor's lock file ``.#league.py``, a FIFO, a file
    the arena's user may not read: none that Python imports), a line saying so, never an error."""
    if not path.is_file():
        return b"not a regular file"
    try:
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").digest()
    except OSError as e:
        return f"unreadable: {e.strerror}".encode()


def spec_facts(bot: BotSpec) -> dict[str, Any]:
    """Every field of ``bot`` (its ``limits`` as a dict, its ``env`` sorted) as JSON-ready values."""
    facts = {f.name: getattr(bot, f.name) for f in dataclasses.fields(bot)}
    facts["command"] = list(bot.command)
    facts["env"] = dict(sorted(bot.env.items()))
    facts["limits"] = dataclasses.asdict(bot.limits)
    return facts


def engine_facts(version: Mapping[str, Any]) -> dict[str, Any]:
    """What of the host a container's check ran on: docker's ``version`` answer (its engine, its components —
    containerd, runc, docker-init —, the kernel, the API), this Python and the versions of the libraries that
    start and talk to a check (grpcio, protobuf, docker). JSON-ready; a field docker leaves out is None."""
    components = {str(c.get("Name")): str(c.get("Version")) for c in version.get("Components") or []
                  if isinstance(c, Mapping)}
    return {"engine": version.get("Version"), "api": version.get("ApiVersion"), "kernel": version.get("KernelVersion"),
            "components": dict(sorted(components.items())), "python": sys.version,
            "libraries": {name: _version_of(name) for name in ("grpcio", "protobuf", "docker")}}


def _version_of(package: str) -> str | None:
    """The installed version of ``package``, or None."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def container_fingerprint(bot: BotSpec, image_id: str, context: Mapping[str, Any]) -> str:
    """The SHA-256 hex of a container bot's check: ``image_id`` (docker's content ID, ``sha256:…``), every
    field of ``bot`` (:func:`spec_facts`), ``context`` (JSON-ready: the match's players and time control, the
    host's :func:`engine_facts`), the arena's code digest and :data:`FINGERPRINT_VERSION`."""
    facts = {"version": FINGERPRINT_VERSION, "image_id": image_id, "spec": spec_facts(bot),
             "context": dict(context), "arena_code": arena_code_digest()}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


@dataclasses.dataclass
class PassedChecks:
    """The checks that passed, as the store keeps them: entrant label -> fingerprint hex
    (:data:`PASSED_CHECKS_KEY`). A value that is not such a JSON object reads as none passed."""

    by_label: dict[str, str]

    @classmethod
    def parse(cls, stored: str | None) -> PassedChecks:
        """The passed checks of the meta value ``stored`` (None, or damaged: none)."""
        try:
            raw = json.loads(stored or "{}")
        except ValueError:
            return cls({})
        if not isinstance(raw, dict):
            return cls({})
        return cls({k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)})

    def dumps(self) -> str:
        """The meta value (JSON, sorted)."""
        return json.dumps(self.by_label, sort_keys=True)
