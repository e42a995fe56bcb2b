"""A bot's surroundings when the arena starts it: its command line with the placeholders filled in,
its environment without the arena's secrets (a bot holding an admin token could call the referee's
Admin API), and the last lines of its log quoted when it fails."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path

from arena.config import ENV_ADMIN_TOKEN, ENV_REFEREE, ENV_TICKET, BotSpec, expand_placeholders
from referee.credentials import file_variable
from referee.wire import printable

#: Lines of a bot's output quoted in the reason when its process exits early.
TAIL_LINES = 2
#: Characters of a bot's output quoted at most.
TAIL_CHARS = 300


def expand_command(bot: BotSpec, values: Mapping[str, str]) -> list[str]:
    """The bot's argv with ``{python}``, ``{config_dir}``, ``{ticket}``, ``{referee}``, ``{seat}`` replaced
    and ``{{``/``}}`` turned into literal braces (the config parser has rejected any other placeholder)."""
    return [expand_placeholders(arg, values) for arg in bot.command]


def admin_secret_names(token_env: str) -> tuple[str, ...]:
    """The variables that hold the referees' admin token or name its file, never handed to a bot:
    ``ALLFOURS_ADMIN_TOKEN``, ``tournament.admin_token_env`` (``token_env``) and each one's ``_FILE``
    (:mod:`referee.credentials`; a trusted bot runs as the arena's user and could read the file)."""
    names = (ENV_ADMIN_TOKEN, token_env)
    return tuple(dict.fromkeys(names + tuple(file_variable(n) for n in names)))


def bot_environment(
    bot: BotSpec,
    ticket: str,
    referee: str,
    secret_names: Collection[str] = (ENV_ADMIN_TOKEN,),
    secret_values: Collection[str] = (),
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one bot process: ``base`` (default: the arena's environment) without its
    secrets (for a process-sandboxed bot, only the variables of :data:`JAIL_PASSES`), plus the bot's
    ``env`` table, ``ALLFOURS_TICKET`` and ``ALLFOURS_REFEREE``.

    Removed: every variable named in ``secret_names`` (the admin token variables), and every variable
    whose value is one of ``secret_values`` or of those variables' values (a copy of a token under
    another name). A bot holding an admin token could call the referee's Admin API.
    """
    env = _inherited(bot, secret_names, secret_values, base)
    return {**env, **bot.env, ENV_TICKET: ticket, ENV_REFEREE: referee}


#: Variables of the project's that hold a credential (``ALLFOURS_ADMIN_TOKEN``, a competitor's
#: ``ALLFOURS_COMPETITOR_TOKEN``, a lobby worker's ``ALLFOURS_BOT_TOKEN``, ...): never passed on from the
#: arena's environment (a host who also submits, or runs a worker, may have them set in that shell).
PROJECT_SECRET = re.compile(r"ALLFOURS_\w*TOKEN\w*")


#: The variables of the arena's environment that reach a process-sandboxed bot (``sandbox = "bwrap"``):
#: how to find programs and libraries and how to print text, nothing that could be a credential (a
#: host's cloud keys or API tokens). The jail sets ``HOME`` and ``TMPDIR`` itself; a bot that needs more
#: names it in its ``env`` table. Trusted bots (``sandbox = "none"``) run as the arena's own user, who can
#: read the arena's environment anyway, and get all of it but the secrets.
JAIL_PASSES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "NODE_PATH", "GRPC_VERBOSITY",
})


def _inherited(
    bot: BotSpec, secret_names: Collection[str], secret_values: Collection[str], base: Mapping[str, str] | None
) -> dict[str, str]:
    """What ``bot`` gets of ``base`` (default: the arena's environment): never the variables named in
    ``secret_names`` or matching :data:`PROJECT_SECRET`, nor any variable holding one of their values or
    one of ``secret_values``; of the rest, a process-sandboxed bot gets only :data:`JAIL_PASSES` and the
    locale's ``LC_*`` variables, any other bot all of it."""
    base = dict(os.environ if base is None else base)
    names = set(secret_names) | {n for n in base if PROJECT_SECRET.fullmatch(n)}
    values = {v for v in secret_values if v} | {base[n] for n in names if base.get(n)}
    env = {k: v for k, v in base.items() if k not in names and v not in values}
    if not bot.jailed:
        return env
    return {k: v for k, v in env.items() if k in JAIL_PASSES or k.startswith("LC_")}


def worker_environment(
    bot: BotSpec,
    lobby: str,
    token: str,
    secret_names: Collection[str] = (ENV_ADMIN_TOKEN,),
    secret_values: Collection[str] = (),
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one local worker process (:mod:`arena.hosting.workers.local`): ``base`` without its
    secrets (as :func:`bot_environment`; for a process-sandboxed bot, only :data:`JAIL_PASSES`), the
    bot's ``env`` table, and the lobby's address, this worker's token, the bot's name and the arena's
    process id (see :mod:`sdk.worker`)."""
    from sdk.worker import LOBBY_ENV, NAME_ENV, PARENT_ENV, TOKEN_ENV

    env = _inherited(bot, secret_names, secret_values, base)
    for name in (ENV_TICKET, ENV_REFEREE):
        env.pop(name, None)
    extra = {LOBBY_ENV: lobby, TOKEN_ENV: token, NAME_ENV: bot.name, PARENT_ENV: str(os.getpid())}
    return {**env, **bot.env, **extra}


def log_tail(path: Path) -> str:
    """The last :data:`TAIL_LINES` non-empty lines of a log file, joined with `` | `` ('' if none),
    after the last error line before them when they do not hold it (a stack trace's cause, e.g. Node's
    ``Error: Cannot find module 'x'``, ends far above its last lines): ``err | … | tail``. The bot's
    text goes into the stored reasons: its control and format characters are dropped
    (:func:`referee.wire.printable`: a right-to-left override would reverse the page's text after it), and
    its parentheses become brackets, so that the public pages can cut the quote exactly
    (:func:`arena.tournament.result.public_reason`: a bot's ``)`` would end it early)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [x for x in (printable(" ".join(line.split())).translate(_NO_PARENS) for line in text.splitlines()) if x]
    tail = " | ".join(lines[-TAIL_LINES:])
    named = any(_ERROR_LINE.match(x) for x in lines[-TAIL_LINES:])
    cause = None if named else next((x for x in reversed(lines[:-TAIL_LINES]) if _ERROR_LINE.match(x)), None)
    if cause is not None:
        cause = cause if len(cause) <= TAIL_CHARS // 2 else cause[: TAIL_CHARS // 2] + "…"
        tail = tail if len(cause) + len(tail) <= TAIL_CHARS else "…" + tail[-(TAIL_CHARS - len(cause)):]
        return f"{cause} | … | {tail}"
    return tail if len(tail) <= TAIL_CHARS else "…" + tail[-TAIL_CHARS:]


#: The bot's parentheses in a quote of its output (:func:`log_tail`).
_NO_PARENS = str.maketrans("()", "[]")

#: A line that names an error: ``Error: …``, ``TypeError: …``, ``ModuleNotFoundError: …``, ``java.io.IOException: …``.
_ERROR_LINE = re.compile(r"[\w.$]*(Error|Exception)(\s*\[\w+\])?: \S")
