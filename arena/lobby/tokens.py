"""Bot tokens: how a worker proves which bot it plays for. Kept only as SHA-256 digests
(:func:`token_digest`); a token plays only as its own bot (:class:`TokenBook`)."""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable, Collection, Mapping, Sequence

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
    caller hands it over and forgets it); ``set_bot`` replaces one bot's digests; ``bot_for`` looks a
    presented token up.

    The remote bots' tokens follow the store (``arena.sqlite``'s, where only their digests are kept):
    :meth:`sync` reads it and sets the tokens of the remote bots the book accepts (the config's, named at a
    reload, and the ones :meth:`tell` added since); :meth:`tell` stores a new one (a token the Submission API
    just made) and accepts it at once, before the league reloads with its entry. Both hold one lock around
    "the store, then the book": a sync that read the store before a told token was stored cannot set its
    bot's tokens after the tell added it (the fresh token lost), nor set back a token another sync found
    revoked meanwhile.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_digest: dict[str, str] = {}
        #: The digests :meth:`issue` made that are still live (a key of ``_by_digest``): tokens of the arena's own
        #: worker processes and containers. Dropped with their token (:meth:`revoke`, :meth:`set_bot`), so it
        #: holds only the live workers' ones, not one per worker ever started.
        self._issued: set[str] = set()
        #: Held around "write or read the store, then set this book" (:meth:`tell`, :meth:`sync`).
        self._store_lock = threading.Lock()
        #: The remote bots the config named at the last reload (a :meth:`sync` given ``named``).
        self._named: frozenset[str] = frozenset()
        #: The bots :meth:`tell` gave a token since the last reload (their entries not yet in a config) -> the
        #: tell's number (:meth:`mark`).
        self._told: dict[str, int] = {}
        self._tells = 0  # tells so far (:meth:`mark`)
        #: The bots told before the last reload and not named by it: accepted until the next reload.
        self._carried: frozenset[str] = frozenset()

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
            self._issued &= self._by_digest.keys()

    def tell(self, bot: str, digest: str, keep: Callable[[], None]) -> None:
        """A new remote token of ``bot`` (its SHA-256 hex ``digest``): ``keep()`` stores it, then it is accepted
        beside the ones ``bot`` has, and stays so at the next :meth:`sync` that names the config's bots though
        that config does not name ``bot`` (a competition's entry registered after the league read its book).
        One step against :meth:`sync` (the class docstring). :raises: what ``keep`` raises (nothing accepted)."""
        with self._store_lock:
            keep()
            with self._lock:
                self._by_digest[digest] = bot
                self._tells += 1
                self._told[bot] = self._tells

    def mark(self) -> int:
        """The tells so far: given to :meth:`sync` as ``since`` by a reload that read its config after this call,
        so a bot told before it and not named by that config has left (a retired or withdrawn entry)."""
        with self._lock:
            return self._tells

    def sync(self, read: Callable[[], Mapping[str, Sequence[str]]], named: Collection[str] | None = None,
             since: int | None = None) -> bool:
        """Accept exactly the valid stored tokens (``read()``: the store's digests per bot) of the remote bots
        this book accepts, every other remote token dropped; returns whether a remote token was accepted or
        dropped. One step against :meth:`tell` (the class docstring).

        With ``named`` (a reload: its config's remote bots) the bots accepted are those and the ones told
        since the last reload (their entries may have come too late for this config), until the next reload:
        so an entry that retired or was withdrawn, or a bot the host took out of the config, has its tokens
        dropped at the first reload whose config was read after it left: with ``since`` (:meth:`mark`, taken
        before that config was read) a bot told before it and not ``named`` left then (an entry retired before
        the reload, its token told since the last one), and only those told after it are carried. Without
        (the store looked at between reloads: a token revoked or made meanwhile), the same bots as at the last
        reload, and the ones told since."""
        with self._store_lock:
            stored = read()
            with self._lock:
                if named is not None:  # carried: told after the config was read (``since``, :meth:`mark`)
                    carried = {b for b, n in self._told.items() if since is None or n > since}
                    self._named, self._carried, self._told = frozenset(named), frozenset(carried), {}
                bots = self._named | self._carried | set(self._told)
                own = {d: b for d, b in self._by_digest.items() if d in self._issued}
                remote = {d: bot for bot in bots for d in stored.get(bot, ())}
                changed = remote != {d: b for d, b in self._by_digest.items() if d not in self._issued}
                self._by_digest = {**own, **remote}
                self._issued = set(own)
                return changed

    def revoke(self, digest: str) -> None:
        """Forget one token (by its digest); a worker already connected with it stays until it leaves."""
        with self._lock:
            self._by_digest.pop(digest, None)
            self._issued.discard(digest)

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
