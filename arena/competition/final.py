"""The final evaluation (``arena competition freeze``, then ``arena competition final``).

At the freeze a fresh master seed is drawn and only its commitment shown (:func:`freeze`); the final is
a round robin of each competitor's chosen entry (:meth:`CompetitionBook.finalists`) with more games a
pairing, played from that seed by ``arena run`` in ``OUTPUT/final`` (its own store, ratings and
leaderboard, named ``NAME final``), written as an ordinary config file there (:func:`write_final_config`,
0600: it holds the seed until the final's board reveals it; then anyone may read what was played).
Remote finalists keep their bot tokens (the digests are copied into the final's store, for its own lobby): a
disqualification or a revoke made afterwards revokes those copies too, and an undo gives them back, as in the
league's store (:class:`arena.competition.book.LeagueTokens`); the config is written and the copies made in one
turn on the folder's ``competition.lock`` (``arena competition final``, :func:`arena.cli.competing.final_run_args`),
so a disqualify run meanwhile comes either before (left out) or after (the copies revoked).
A disqualification made once the final is written holds in its run as well (container entries too): the run
reads the competition's book at each look for games to start and forfeits theirs (``run_games``' ``barred``;
:func:`arena.competition.book.competition_folder` ties the final's folder to the book), and its board lists them
as the league's does; :func:`in_final` says which of these the disqualify did.

A competitor whose token is revoked when the final's config is written is not in it, nor is a remote
entry without a live bot token (revoking a competitor revokes those too): either would only forfeit
every game as a no-show. :attr:`Final.left_out` says who, one line each.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from arena.competition.book import FINAL_CONFIG, FINAL_DIR, CompetitionBook, Submission
from arena.competition.desk import FROZEN_KEY, SEED_KEY
from arena.config import TournamentConfig
from referee.dealing import commitment


class FinalError(ValueError):
    """A final that cannot be played; ``str(e)`` is one line."""


@dataclass(frozen=True, slots=True)
class Final:
    """A written final: its config's ``path``, and ``left_out``: one line for each competitor with an
    accepted entry who is not in it, naming them and why."""

    path: Path
    left_out: tuple[str, ...]


def choose_finalists(book: CompetitionBook, league: Path) -> tuple[list[Submission], list[str]]:
    """Each live competitor's entry (:meth:`CompetitionBook.finalists`) and a line for each one left out:
    a competitor disqualified (``arena competitor disqualify``, even if added again), one whose token is revoked,
    or a remote entry with no live bot token in the league's store
    (``league``: its output folder) — it could only forfeit every game (no_show)."""
    from arena.tournament.runner import DB_NAME
    from arena.tournament.store import Store

    live = {name for name, ok in book.competitors() if ok}
    chosen = book.finalists()
    remote_tokens: dict[str, list[str]] = {}
    if any(s.kind == "remote" for s in chosen) and (league / DB_NAME).is_file():
        with Store(league / DB_NAME) as store:
            remote_tokens = store.token_digests()
    finalists, left_out = [], []
    gone = book.disqualified()
    for sub in chosen:
        if sub.competitor in gone:
            left_out.append(f"not in the final: {sub.competitor} ({sub.entrant}), disqualified: "
                            f"{gone[sub.competitor].reason}")
        elif sub.competitor not in live:
            left_out.append(f"not in the final: {sub.competitor} ({sub.entrant}), whose competitor token is revoked")
        elif sub.kind == "remote" and not remote_tokens.get(sub.entrant):
            left_out.append(f"not in the final: {sub.competitor} ({sub.entrant}), a remote bot whose bot tokens "
                            "are revoked (revoking a competitor revokes them: register it again before the freeze)")
        else:
            finalists.append(sub)
    return finalists, left_out


def freeze(book: CompetitionBook) -> str:
    """Stop submissions and draw the final's master seed (once); returns its commitment (SHA-256 hex)."""
    if book.get_meta(FROZEN_KEY) is None:
        book.set_meta(SEED_KEY, secrets.token_bytes(32).hex())
        book.set_meta(FROZEN_KEY, repr(time.time()))
    seed = book.get_meta(SEED_KEY)
    assert seed is not None
    return commitment(bytes.fromhex(seed))


def _bot_table(sub: Submission, config: TournamentConfig) -> str:
    """One ``[[bots]]`` table of a finalist (a container bot, or a remote one)."""
    lines = ["[[bots]]", f"name = {json.dumps(sub.entrant)}", f"version = {json.dumps(sub.version)}"]
    if sub.kind == "remote":
        lines.append("remote = true")
    else:
        c = config.competition
        assert c is not None
        lines += [f"image = {json.dumps(sub.image)}", f"cpus = {c.cpus}", f"memory = {c.memory_mb}"]
    return "\n".join(lines) + "\n"


def write_final_config(config: TournamentConfig, book: CompetitionBook, output: Path, games_per_pairing: int) -> Final:
    """Write ``<output>/final/final.toml``: the finalists (:func:`choose_finalists`), the seed drawn at the
    freeze, the league's rules and time control. :raises FinalError: not frozen yet, fewer than two
    finalists, or a final already over (its seed revealed) that this one would change
    (:func:`_check_not_over`)."""
    seed = book.get_meta(SEED_KEY)
    if book.get_meta(FROZEN_KEY) is None or seed is None:
        raise FinalError("the competition is not frozen: run `arena competition freeze CONFIG` first")
    finalists, left_out = choose_finalists(book, output)
    if len(finalists) < 2:
        but = f" ({len(left_out)} more left out: {'; '.join(left_out)})" if left_out else ""
        raise FinalError(f"{len(finalists)} competitor(s) with an accepted entry: a final needs two{but}")
    folder = output / FINAL_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    rules = "\n".join(f"{k} = {json.dumps(v)}" for k, v in config.rules.to_dict().items())
    clock = "\n".join(f"{k} = {v}" for k, v in sorted(config.time_control.items()))
    head = (f"[tournament]\nname = {json.dumps(config.name + ' final')}\nplayers = {config.players}\n"
            f"games_per_pairing = {games_per_pairing}\nconcurrency = {config.concurrency}\n"
            f"master_seed = \"{seed}\"\noutput = {json.dumps(str(folder))}\nlobby = {json.dumps(config.lobby)}\n"
            f"blind_seats = {str(config.blind_seats).lower()}\n"
            f"[tournament.rules]\n{rules}\n[tournament.time_control]\n{clock}\n")
    notes = "".join(f"# {line}\n" for line in left_out)
    path = folder / FINAL_CONFIG
    text = notes + head + "\n" + "\n".join(_bot_table(s, config) for s in finalists)
    _check_not_over(path, text)
    _write_private(path, text)
    _copy_remote_tokens(finalists, output, folder)
    return Final(path, tuple(left_out))


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600, also an existing file): a final's config
    holds its master seed, secret until the final is over (a remote finalist knowing it would know every
    deal); its board reveals the seed then, and the file may be shown."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def _check_not_over(path: Path, text: str) -> None:
    """:raises FinalError: the final of ``path`` is over (its store's ``finished_at``: the master seed is
    published) and ``text``, the config about to be written, plays other games than it did (more games a
    pairing, other finalists): anyone could compute their deals from the public seed. The same config
    again only publishes the board again."""
    import tomllib

    from arena.tournament.runner import DB_NAME
    from arena.tournament.store import Store

    if not path.is_file() or not (path.parent / DB_NAME).is_file():
        return
    with Store(path.parent / DB_NAME) as store:
        if store.get_meta("finished_at") is None:
            return
    old, new = tomllib.loads(path.read_text(encoding="utf-8")), tomllib.loads(text)
    for t in (old, new):  # what the bots are told, not which games are played (a final written before it)
        t["tournament"].pop("blind_seats", None)
    if old == new:
        return
    was, now = old["tournament"]["games_per_pairing"], new["tournament"]["games_per_pairing"]
    bots = [", ".join(b["name"] for b in t.get("bots", [])) for t in (old, new)]
    # the games a pairing, given or the default (twice the league's): not named as a flag the host may not
    # have given, and the flag that publishes the board again is named
    change = (f"{now} games a pairing (it was played with {was})" if was != now else
              f"the finalists {bots[1]} (it was played by {bots[0]})" if bots[0] != bots[1] else
              "another config (the league's rules or time control changed)")
    again = f"`--games-per-pairing {was}` publishes it again" if was != now else "run it unchanged to publish it again"
    raise FinalError(f"the final is over and its master seed is revealed: {change} would deal games anyone can "
                     f"compute from the public seed; its board stands as published ({again})")


def listed(output: Path, entrants: list[str]) -> list[str]:
    """Those of ``entrants`` (``name@version``) the final already written in the output folder ``output`` lists
    (``<output>/final/final.toml``; ``[]`` without one, or one that cannot be read), in its order."""
    import tomllib

    try:
        bots = tomllib.loads((output / FINAL_DIR / FINAL_CONFIG).read_text(encoding="utf-8")).get("bots", [])
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    names = [b.get("name") for b in bots if isinstance(b, dict)]
    return [n for n in names if n in entrants]


def in_final(output: Path, entrants: list[str], undone: bool = False) -> str:
    """One clause: what the disqualification of a competitor whose entries are ``entrants`` (or its undoing,
    ``undone``) does to the final in the output folder ``output``: none written that lists them; one written
    (being played, or to be) whose games of theirs not started yet are forfeited as its run comes to each (or
    played again), read from the book at each look (:func:`arena.report.disqualified.read_barred`); or one played
    to its end, whose games stand as played and whose board, published again, lists them (or no longer does)."""
    from arena.tournament.runner import DB_NAME
    from arena.tournament.store import Store

    written = listed(output, entrants)
    if not written:
        return "not in the final"
    names = ", ".join(written)
    db = output / FINAL_DIR / DB_NAME
    over = False
    if db.is_file():
        with Store(db) as store:
            over = store.get_meta("finished_at") is not None
    if over:
        return (f"the final, played to its end, lists {names}: its games stand as played; its board lists them "
                + ("disqualified no more" if undone else "disqualified, the others rated without their games")
                + " once published again (`arena run` of its config)")
    if undone:
        return f"the final written lists {names}: its games of theirs not yet started are played"
    return (f"the final already written lists {names}: its games not yet started are forfeited (disqualified) as "
            "its run comes to each, and a remote bot's tokens there are revoked too")


def _copy_remote_tokens(finalists: list[Submission], league: Path, final: Path) -> None:
    """Give the final's store the token digests remote finalists have in the league's."""
    from arena.tournament.runner import DB_NAME
    from arena.tournament.store import Store

    remote = [s.entrant for s in finalists if s.kind == "remote"]
    if not remote:
        return
    with Store(league / DB_NAME) as src, Store(final / DB_NAME) as dst:
        have = dst.token_digests()
        for name in remote:
            for digest in src.token_digests(name).get(name, []):
                if digest not in have.get(name, []):
                    dst.add_token(name, digest)
