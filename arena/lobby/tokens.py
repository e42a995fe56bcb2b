"""Bot tokens: how a worker proves which bot it plays for. Kept only as SHA-256 digests
(:func:`token_digest`); a token plays only as its own bot (:class:`TokenBook`)."""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Mapping, Sequence

#: Longest text field of a Register the lobby accepts (token, name, version).
MAX_FIELD = 256
#: Bytes of random in a bot token (192 bits; the issue asks for at least 128).
TOKEN_BYTES = 24
#: Fewest characters of a token given with ``arena token --from-env`` (24 random bytes in URL-safe
#: base64 are 32; 22 characters of that alphabet hold 132 bits).
MIN_GIVEN_TOKEN = 22


def token_digest(token: str) -> str:
    """The SHA-256 (hex) of a bot token: the only form in which tokens are kept."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    """A fresh bot token: :data:`TOKEN_BYTES` random bytes, URL-safe base64 (32 characters).

    Never one that starts with ``-``: pasted after ``--token`` it would read as an option
    (``python -m sdk.run ... --token -x...`` fails with "expected one argument").
    """
    while (token := secrets.token_urlsafe(TOKEN_BYTES)).startswith("-"):
        pass
    return token


class TokenBook:
    """Which token digest belongs to which bot. Thread-safe.

    Holds digests only (:func:`token_digest`). ``issue`` makes a token for a bot and returns it (the
    caller hands it over and forgets it); ``set_bot`` replaces one bot's digests (e.g. the remote
    tokens read from the store); ``add`` adds one (a token the Submission API just made, accepted before
    the league reloads); ``bot_for`` looks a presented token up.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_digest: dict[str, str] = {}
        #: The digests :meth:`issue` made: tokens of the arena's own worker processes and containers.
        self._issued: set[str] = set()

    def issue(self, bot: str) -> str:
        """A new token for ``bot`` (kept as its digest); returns the token."""
        token = new_token()
        with self._lock:
            self._by_digest[token_digest(token)] = bot
            self._issued.add(token_digest(token))
        return token

    def issued(self, token: str) -> bool:
        """Whether ``token`` is a live one :meth:`issue` made (an arena's own worker's, not a remote bot's)."""
        digest = token_digest(token)
        with self._lock:
            return digest in self._issued and digest in self._by_digest

    def set_bot(self, bot: str, digests: Sequence[str]) -> None:
        """Make ``digests`` the only tokens of ``bot`` (an empty list: none)."""
        with self._lock:
            self._by_digest = {d: b for d, b in self._by_digest.items() if b != bot}
            self._by_digest.update(dict.fromkeys(digests, bot))

    def add(self, bot: str, digest: str) -> None:
        """Accept one more token of ``bot`` (by its SHA-256 hex digest), beside the ones it has."""
        with self._lock:
            self._by_digest[digest] = bot

    def remote_bots(self) -> set[str]:
        """The bots holding a token :meth:`issue` did not make (remote bots', read from the store or added)."""
        with self._lock:
            return {b for d, b in self._by_digest.items() if d not in self._issued}

    def revoke(self, digest: str) -> None:
        """Forget one token (by its digest); a worker already connected with it stays until it leaves."""
        with self._lock:
            self._by_digest.pop(digest, None)

    def bot_for(self, token: str) -> str | None:
        """The bot a token was issued for, or None (unknown or revoked)."""
        if not token or len(token) > MAX_FIELD:
            return None
        with self._lock:
            return self._by_digest.get(token_digest(token))

    def valid(self, digest: str) -> bool:
        """Whether a digest is still a live token."""
        with self._lock:
            return digest in self._by_digest


def make_tokens(remote: Mapping[str, Sequence[str]]) -> TokenBook:
    """A :class:`TokenBook` holding the given digests per bot (``{bot: [sha256 hex, ...]}``)."""
    book = TokenBook()
    for bot, digests in remote.items():
        book.set_bot(bot, digests)
    return book
