"""The ``[[bots]]`` tables of test tournaments, written once (tests/test_arena_*.py): bots whose
games are simulated (``command = ["true"]``, never started) or played by the instant bot."""

from __future__ import annotations

#: The instant bot (arena/testing/instant_bot.py), with the ``{python}`` placeholder of configs.
INSTANT = '["{python}", "-m", "arena.testing.instant_bot"]'
#: A command that is never started: the games are simulated (``--simulate``) or read from the store.
NEVER_STARTED = '["true"]'


def bots_toml(*names: str, command: str = NEVER_STARTED, **keys: str) -> str:
    """One ``[[bots]]`` table a name, each with ``command`` and ``keys`` (TOML values as text, e.g.
    ``sandbox='"none"'``), in the order given: ``bots_toml("a", "b")`` is two simulated bots."""
    extra = "".join(f"{key} = {value}\n" for key, value in keys.items())
    return "".join(f'[[bots]]\nname = "{name}"\ncommand = {command}\n{extra}' for name in names)
