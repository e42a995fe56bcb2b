"""Secrets from the environment, or from a file the environment names (docs/deploy.md, "Secrets").

Every token the project's programs take from the environment — the referee's admin token
(``ALLFOURS_ADMIN_TOKEN``), a lobby worker's bot token (``ALLFOURS_BOT_TOKEN``), a competitor's token
(``ALLFOURS_COMPETITOR_TOKEN``), the variable ``arena token --from-env`` names — may instead sit in a file
whose path is in the same name with ``_FILE`` appended (``ALLFOURS_ADMIN_TOKEN_FILE=/run/secrets/admin``),
the convention of Docker's official images. Compose and Swarm ``secrets:`` mount such files; a value in
the environment shows in ``docker inspect`` to anyone with access to docker, a file does not.

One of the two, never both: a token given twice is a mistake (which one would win?).

Also the one reading of a PEM file a program is given on its command line (:func:`read_pem`: a TLS
certificate, key or CA), so that a file that is not PEM is one line at start-up, not gRPC's own
handshake errors at the first connection.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: Appended to a variable's name to name the variable holding the path of its file.
FILE_SUFFIX = "_FILE"
#: Most bytes of a secret's file (a token is at most a few hundred characters).
MAX_FILE_BYTES = 4096


#: The line that opens a PEM certificate (a CA to trust, a certificate chain to serve).
PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
#: The end of the line that opens a PEM private key (``RSA PRIVATE KEY``, ``EC PRIVATE KEY``, ``PRIVATE KEY``).
PEM_PRIVATE_KEY = b"PRIVATE KEY-----"


class PemError(ValueError):
    """A PEM file given as ``option`` cannot be read or holds no ``marker`` line; ``str()`` is one line."""


def read_pem(option: str, path: str | Path, marker: bytes = PEM_CERTIFICATE, what: str = "certificate") -> bytes:
    """The bytes of the PEM file ``path`` given as ``option`` (``--tls-ca``), checked to hold a ``marker``
    line (a ``what``: ``certificate``, ``private key``).

    :raises PemError: the file cannot be read, or holds no such line (``--tls-ca x is not a PEM
        certificate (no line with '-----BEGIN CERTIFICATE-----')``).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise PemError(f"cannot read {option} {path}: {e.strerror or e}") from None
    if marker not in data:
        raise PemError(f"{option} {path} is not a PEM {what} (no line with {marker.decode()!r})")
    return data


class SecretError(ValueError):
    """A secret's file cannot be read, is too large or empty, or the secret is given twice; ``str()``
    is one line naming the variable."""


def file_variable(name: str) -> str:
    """The variable naming the file of secret ``name``: ``ALLFOURS_ADMIN_TOKEN`` -> ``ALLFOURS_ADMIN_TOKEN_FILE``."""
    return name + FILE_SUFFIX


def env_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The secret in ``$name``, or in the file ``$name_FILE`` names (its text without the line end
    and surrounding blanks), or None when neither is set (an empty ``$name`` counts as unset).

    ``environ``: default ``os.environ``.

    :raises SecretError: both are set; or the file cannot be read, holds more than
        :data:`MAX_FILE_BYTES` bytes, is not UTF-8 or holds only blanks.
    """
    env = os.environ if environ is None else environ
    value, path = env.get(name) or None, env.get(file_variable(name)) or None
    if path is None:
        return value
    if value is not None:
        raise SecretError(f"${name} and ${file_variable(name)} are both set: give the secret once")
    return _read_secret_file(file_variable(name), path)


def _read_secret_file(variable: str, path: str) -> str:
    """The stripped text of the secret file ``path`` named by ``$variable``. :raises SecretError:"""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise SecretError(f"${variable} {path}: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SecretError(f"${variable} {path}: more than {MAX_FILE_BYTES} bytes; a secret's file holds one token")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise SecretError(f"${variable} {path}: not UTF-8 text") from None
    if not text:
        raise SecretError(f"${variable} {path}: the file is empty")
    return text
