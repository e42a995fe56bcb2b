"""How ``arena run`` (and ``arena competition final``, which runs one) stops on SIGINT, SIGTERM and SIGHUP.

All three do what Ctrl-C does, so a supervisor's stop (``docker stop``, compose, systemd: SIGTERM) or a
closed terminal (SIGHUP) loses nothing and leaves nothing behind:

- while games are played (:func:`stopping`), the signal sets the run loop's stop event: no game starts
  any more, the games in flight finish and are stored; then :func:`raise_if_received` raises
  :class:`Interrupted`;
- anywhere else it raises :class:`Interrupted` (a ``KeyboardInterrupt``) in the main thread, which
  unwinds as Ctrl-C does, closing what is open;
- during the clean-up (:func:`shielded`: bots, lobby, referee, sandbox, the output lock) a signal is
  only noted, so the clean-up runs whole.

``arena``'s ``main`` then prints one line (:func:`line`) and exits with status 128 + the signal's number: 130 for
SIGINT, 143 for SIGTERM, 129 for SIGHUP (the shell's convention, so a supervisor sees which signal
ended it). A signal ignored when the arena started (``nohup``'s SIGHUP, the SIGINT of a background
job) stays ignored; the handlers are installed only in the main thread (:func:`handled`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

#: The signals that stop a run.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal (number ``signum``) that arrived outside the run loop, raised in the main thread."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signum_of(e: KeyboardInterrupt) -> int:
    """The signal behind an interruption (SIGINT for a plain ``KeyboardInterrupt``: Python's Ctrl-C)."""
    return e.signum if isinstance(e, Interrupted) else int(signal.SIGINT)


def exit_status(signum: int) -> int:
    """The exit status of a run stopped by ``signum``: 128 + its number (130, 143, 129)."""
    return 128 + signum


def line(signum: int) -> str:
    """The one line an interrupted run ends with, e.g. ``interrupted (SIGTERM): stored games are kept;
    run the same command to resume``."""
    return f"interrupted ({signal.Signals(signum).name}): stored games are kept; run the same command to resume"


@dataclass
class _State:
    received: int | None = None  # the first stop signal received
    stop: threading.Event | None = None  # set instead of raising: games are being played
    shield: bool = False  # clean-up: only note the signal


_state: _State | None = None


def _handle(signum: int, frame: FrameType | None) -> None:
    state = _state
    if state is None:  # pragma: no cover - the handler is installed only with a state
        raise Interrupted(signum)
    if state.received is None:
        state.received = signum
    if state.shield:
        return
    if state.stop is not None:
        state.stop.set()
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Handle :data:`SIGNALS` as the module docstring says for the block, then restore the old handlers.
    Outside the main thread nothing changes (Python runs signal handlers there only)."""
    global _state
    if threading.current_thread() is not threading.main_thread() or _state is not None:
        yield
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}
    _state = _State()
    try:
        for s, handler in old.items():
            if handler in (signal.SIG_DFL, signal.default_int_handler):  # an ignored one stays ignored
                signal.signal(s, _handle)
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        _state = None


@contextlib.contextmanager
def stopping(stop: threading.Event) -> Iterator[None]:
    """While the run loop plays games: a stop signal sets ``stop`` (no new game starts) instead of raising."""
    state = _state
    if state is None:
        yield
        return
    state.stop = stop
    try:
        yield
    finally:
        state.stop = None


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Clean-up that a stop signal must not cut short: within the block a signal is only noted."""
    state = _state
    if state is None:
        yield
        return
    was, state.shield = state.shield, True
    try:
        yield
    finally:
        state.shield = was


def raise_if_received() -> None:
    """:raises Interrupted: a stop signal was received since :func:`handled` began (the run loop, having
    stored the games in flight, ends the run as a signal elsewhere does)."""
    if _state is not None and _state.received is not None:
        raise Interrupted(_state.received)
