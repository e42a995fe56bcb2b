"""The competition's commands (docs/competition.md): the host's ``arena competitor add|disqualify|list`` and
``arena competition freeze|retry|final|close``; the competitor's ``arena submit`` (``--select``, ``--remote``) and
``arena submissions`` (``--games``, ``--log GAME SEAT``).

Exit status: 0; 1 when the arena refuses (the status code and its one line) or a followed submission
ends rejected or failed; 2 on bad arguments or config (one line).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from arena.config import ConfigError, load_config

#: What a competitor command asks the Submission service for (:func:`_ask`).
T = TypeVar("T")


class _Usage(Exception):
    """A one-line usage error (exit status 2)."""


def competing_command(args: argparse.Namespace, console: Console, err: Console) -> int:
    """Run ``arena competitor``, ``competition``, ``submit`` or ``submissions`` (see the module docstring)."""
    import grpc

    from arena.tournament.lock import OutputLocked

    def error(message: str, status: int) -> int:
        err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
        return status

    try:
        if args.command == "competitor":
            return _competitor(args, console, err)
        if args.command == "competition" and args.competition_command == "retry":
            return _retry(args, console, err)
        if args.command == "competition" and args.competition_command == "close":
            return _close(args, console, err)
        if args.command == "competition":
            return _freeze(args, console, err)
        if args.command == "submit":
            return _submit(args, console, err)
        return _submissions(args, console)
    except ConfigError as e:
        return _config_errors(e, err)
    except (_Usage, ValueError) as e:
        return error(str(e), 2)
    except OutputLocked as e:  # a host command's turn on the folder never came (:func:`_competitor`)
        return error(str(e), 1)
    except grpc.RpcError as e:
        return error(f"{e.code().name}: {e.details()}{_unavailable_hint(e, args)}", 1)


#: What gRPC's details of UNAVAILABLE hold when a call's stream was up and the connection then closed
#: (``Stream removed (Socket closed)``, ``Stream removed (recvmsg:Connection reset by peer (104))``): the
#: arena went away mid-call, which no TLS setting explains.
STREAM_REMOVED = "Stream removed"


def _unavailable_hint(e: Any, args: argparse.Namespace) -> str:
    """What an UNAVAILABLE means (``""`` for another code): the arena went away during the call (for an
    upload: the submission was not received), or, only for a connection that never came up, what to
    change about TLS (:func:`_tls_hint`)."""
    import grpc

    if e.code() != grpc.StatusCode.UNAVAILABLE:
        return ""
    if STREAM_REMOVED in str(e.details() or ""):
        if args.command == "submit" and getattr(args, "select", None) is None:
            return (" (the arena closed the connection during the upload (stopped or restarted?): the submission "
                    "was not received; submit it again once the arena is back)")
        return (" (the arena closed the connection before it answered (stopped or restarted?): try again once it "
                "is back)")
    return _tls_hint(str(e.details() or ""), args)


def _tls_hint(details: str, args: argparse.Namespace) -> str:
    """What to change when a connection could not be made over TLS, or for want of it
    (:func:`referee.tls.tls_hint` for the arena's address and ``--tls-ca``), else ``""``."""
    from referee.tls import tls_hint

    ca = getattr(args, "tls_ca", None)
    return tls_hint(details, getattr(args, "arena", ""), f"--tls-ca {ca}" if ca else None)


def _output(args: argparse.Namespace) -> Path:
    """The output folder of ``args.config`` (``--output`` first). :raises _Usage: no [competition] table."""
    config = load_config(args.config)
    if config.competition is None:
        raise _Usage(f"{config.source}: no [competition] table: add one to take submissions (docs/competition.md)")
    return Path(args.output).resolve() if args.output else config.output


def _config_errors(e: ConfigError, err: Console) -> int:
    """Print every problem of a broken config, one ``config error: …`` line each (as `arena run` prints
    them); returns exit status 2."""
    for one in e.errors:
        err.print(f"[red]config error:[/red] {escape(str(one))}", soft_wrap=True, highlight=False)
    return 2


def _competitor(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena competitor add|disqualify|list``; a command that changes disqualifications or remote bots' tokens
    takes its turn on the folder's :func:`arena.tournament.lock.lock_changes` (two commands at once would
    interleave their book's and league store's writes). :raises OutputLocked: that turn never came."""
    from arena.competition.book import BOOK_NAME, CompetitionBook
    from arena.tournament.lock import lock_changes

    output = _output(args)
    if args.competitor_command == "list" and not (output / BOOK_NAME).is_file():
        err.print("no competitors yet", highlight=False)  # a look makes no output folder and no book
        return 0
    if args.competitor_command == "disqualify" and not (output / BOOK_NAME).is_file():
        raise _Usage(f"no competitor {args.name!r}: none was added in {output} (is {args.config} the competition's "
                     "config?)")
    # a change takes its turn before it opens the book: `arena restore` (which takes its turn too) may replace it
    changes = args.competitor_command == "disqualify" or (args.competitor_command == "add" and args.revoke)
    with lock_changes(output) if changes else contextlib.nullcontext(), CompetitionBook(output) as book:
        if args.competitor_command == "list":
            competitors = book.competitors()
            for name, live in competitors:
                console.print(f"{name}\t{'live' if live else 'revoked'}", highlight=False, soft_wrap=True)
            if not competitors:
                err.print("no competitors yet", highlight=False)
            return 0
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", args.name):
            raise _Usage(f"competitor name {args.name!r}: use 1 to 64 letters, digits, '_', '.', '-'")
        if args.competitor_command == "disqualify":  # one turn for both databases' writes (arena/tournament/lock.py)
            return _disqualify(args, output, book, err)
        if args.revoke:
            _known(book, args.name)
            done = book.revoke_competitor(args.name)
            err.print(f"{args.name}: token revoked" if done else f"{args.name}: token already revoked",
                      highlight=False)
            _revoke_remote_bots(output, book, args.name, err)
            return 0
        token = book.add_competitor(args.name)
    console.print(token, highlight=False, soft_wrap=True)
    err.print(f"competitor token for {args.name}: shown once, keep it secret; they submit with "
              "ALLFOURS_COMPETITOR_TOKEN=TOKEN arena submit DIR --arena HOST:PORT", highlight=False, soft_wrap=True)
    return 0


def _known(book: Any, name: str) -> None:
    """:raises _Usage: ``name`` is no competitor of ``book`` (a mistyped name must not pass for a revoked token)."""
    names = [known for known, _ in book.competitors()]
    if name not in names:
        raise _Usage(f"no competitor {name!r} (competitors: {', '.join(names) or 'none'})")


def _disqualify(args: argparse.Namespace, output: Path, book: Any, err: Console) -> int:
    """``arena competitor disqualify CONFIG NAME --reason TEXT [--undo]``: record it in the book (who, when, why,
    by whom), revoking the token and the remote bots' tokens as ``--revoke`` does (``--undo`` gives those bots'
    tokens back, the ones it revoked); a running ``arena serve`` sees it within
    :data:`arena.competition.pipeline.POLL_S` seconds (docs/competition.md)."""
    import getpass

    from arena.competition.book import LeagueTokens
    from arena.competition.final import in_final
    from arena.competition.pipeline import POLL_S
    from arena.lobby.setup import TOKEN_POLL_S

    _known(book, args.name)
    if args.undo:
        if args.reason is not None:
            raise _Usage("--undo takes no --reason (the disqualification's record keeps its own)")
        undone = book.undo_disqualification(args.name, LeagueTokens(output))
        done = undone is not None and not undone.again  # again: an undo killed before it gave the tokens back
        final = in_final(output, [s.entrant for s in book.submissions(args.name)], undone=True)
        err.print(f"{args.name}: disqualification undone: their entries are scheduled and rated again (a running "
                  f"`arena serve` within {POLL_S:g} s); {final}; their token stays revoked: `arena competitor add "
                  f"{args.config} {args.name}` makes a new one" if done else f"{args.name}: not disqualified",
                  highlight=False, soft_wrap=True, markup=False)
        if undone and undone.restored:
            err.print(f"{args.name}'s remote bots ({', '.join(undone.restored)}): {sum(undone.restored.values())} "
                      "token(s) the disqualification revoked are valid again: their workers register with them "
                      f"once a running `arena serve` has the entries back (within {POLL_S:g} s)",
                      highlight=False, soft_wrap=True, markup=False)
        return 0
    if args.reason is None:
        raise _Usage('give --reason "TEXT": why, shown on the board beside their entries')
    try:
        by = getpass.getuser()
    except (KeyError, OSError):
        by = ""
    taken = book.disqualify(args.name, args.reason, by, LeagueTokens(output))  # BookError: exit 2 with its line
    entrants = [s.entrant for s in book.submissions(args.name)]
    err.print(f"{args.name}: disqualified ({book.disqualified()[args.name].reason}); token revoked; entries "
              f"{', '.join(entrants) or '(none yet)'} are no longer scheduled and their games are left out of the "
              f"ratings (a running `arena serve` within {POLL_S:g} s; games in flight finish); "
              f"{in_final(output, entrants)}",
              highlight=False, soft_wrap=True, markup=False)
    if taken:
        err.print(f"{args.name}'s remote bots ({', '.join(taken)}): {sum(map(len, taken.values()))} token(s) revoked; "
                  f"a running `arena serve` refuses them within {TOKEN_POLL_S:g} s or so and drops their workers "
                  "(`--undo` gives these back)", highlight=False, soft_wrap=True, markup=False)
    return 0


def _freeze(args: argparse.Namespace, console: Console, err: Console) -> int:
    from arena.competition.book import BOOK_NAME, CompetitionBook
    from arena.competition.final import freeze

    output = _output(args)
    unknown = _Usage(f"{output}: no competitor was added there: is {args.config} the competition's config? "
                     "(arena competitor add CONFIG NAME, arena competitor list CONFIG)")
    if not (output / BOOK_NAME).is_file():
        raise unknown  # a freeze of the wrong config made an empty competition there, frozen
    with CompetitionBook(output) as book:
        if not book.competitors():
            raise unknown
        committed = freeze(book)
    console.print(committed, highlight=False)
    err.print("submissions are frozen: the arena refuses new ones; the line above commits to the final's master "
              "seed (arena competition final reveals it)", highlight=False, soft_wrap=True)
    return 0


def _retry(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena competition retry CONFIG [ID ...]``: failed submissions back to the build queue, a line each."""
    from arena.competition.book import BOOK_NAME, CompetitionBook

    output = _output(args)
    if not (output / BOOK_NAME).is_file():
        raise _Usage(f"{output}: no submission was made there: is {args.config} the competition's config?")
    with CompetitionBook(output) as book:
        retried = book.retry_failed(args.ids)  # BookError, a ValueError: exit 2 with its line
    for sub in retried:
        console.print(_line(sub), highlight=False, soft_wrap=True, markup=False)
    err.print(f"{len(retried)} failed submission(s) back in the build queue" if retried else
              "no failed submission to retry", highlight=False, soft_wrap=True)
    return 0


def _close(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena competition close CONFIG``: end the league for good and reveal its master seed (printed on stdout;
    published in the league's ratings.json, its board and ``arena web``, as a finished ``arena run`` reveals
    its own), under the league folder's lock (exit 1 and one line while ``arena serve`` runs there). The
    competition must be frozen. Run again, it publishes the same again. From then on ``arena serve`` and
    ``arena run`` refuse the folder (:class:`arena.tournament.runner.LeagueClosed`)."""
    from arena.competition.book import BOOK_NAME, CompetitionBook
    from arena.competition.desk import FROZEN_KEY, grow_config
    from arena.report.publish import publish_tournament
    from arena.tournament.lock import OutputLocked, lock_output
    from arena.tournament.runner import CLOSED_KEY, DB_NAME, LEAGUE_KEY, open_tournament
    from arena.tournament.store import StoreMismatch

    config = load_config(args.config)
    output = _output(args)
    assert config.competition is not None  # _output checked it
    if not (output / BOOK_NAME).is_file() or not (output / DB_NAME).is_file():
        raise _Usage(f"{output}: no league of a competition was served there: is {args.config} the competition's "
                     "config? (nothing to close)")
    try:
        with lock_output(output, advice="stop `arena serve` first: the league is closed once it stopped"):
            with CompetitionBook(output) as book:
                if book.get_meta(FROZEN_KEY) is None:
                    raise _Usage("the competition is not frozen: run `arena competition freeze CONFIG` first "
                                 "(closing the league publishes its master seed, and with it the deal of any game "
                                 "it would play)")
                grown = grow_config(config, book, config.competition)
            t = open_tournament(grown, output, closing=True)
            try:
                if t.store.get_meta(LEAGUE_KEY) is None:
                    raise _Usage(f"{output}: its games were played by `arena run`, not served as a league by "
                                 "`arena serve` (nothing to close: `arena run` reveals its seed itself)")
                if t.store.get_meta(CLOSED_KEY) is None:
                    t.store.set_meta(CLOSED_KEY, f"{time.time():.3f}")  # before the publication: a rerun finishes it
                publish_tournament(t, output, args.bootstrap, None)
                seed, commit = t.master_seed.hex(), t.commitment
            finally:
                t.store.close()
    except OutputLocked as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 1
    except StoreMismatch as e:
        raise _Usage(str(e)) from None
    console.print(seed, highlight=False)
    err.print(f"the league is closed: the line above is its master seed (SHA-256 {commit}, as {output}/commitment.json "
              f"committed), published in {output}/ratings.json; `arena serve` and `arena run` refuse this folder "
              f"from now on; anyone checks every league game's deal with `python -m arena.audit {output}`",
              highlight=False, soft_wrap=True, markup=False)
    return 0


def final_command(args: argparse.Namespace, console: Console, err: Console,
                  run_command: Callable[[argparse.Namespace, Console, Console], int]) -> int:
    """``arena competition final``: under the lock of the competition's output folder, write the final's
    config (:func:`final_run_args`) and play it with ``run_command`` (``arena run``'s, in ``<output>/final``).
    A running ``arena serve`` on that folder refuses it: exit status 1 and one line; the final is played
    once serve stopped."""
    from arena.tournament.lock import OutputLocked, lock_output

    try:
        output = _output(args)
    except ConfigError as e:
        return _config_errors(e, err)
    except _Usage as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 2
    try:
        with lock_output(output, advice="stop `arena serve` first: the final is played once the league stopped"):
            run = final_run_args(args, err)  # the final's config written, or an exit status
            return run if isinstance(run, int) else run_command(run, console, err)
    except OutputLocked as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 1


def final_run_args(args: argparse.Namespace, err: Console) -> argparse.Namespace | int:
    """``arena competition final``: write the final's config (:func:`arena.competition.final.write_final_config`)
    and return the ``arena run`` arguments that play it (:mod:`arena.cli.commands` runs them), or exit
    status 2 after one line (not frozen, fewer than two finalists, a bad ``--games-per-pairing``). A
    competitor left out (revoked: :func:`arena.competition.final.choose_finalists`) is named, a line each. It takes
    its turn on the folder's :func:`arena.tournament.lock.lock_changes` before it reads the book, and holds it until
    the remote finalists' tokens are copied: a disqualify or revoke either comes before (left out) or after (it
    revokes the copies too, :class:`arena.competition.book.LeagueTokens`). :raises OutputLocked: that turn never
    came."""
    from arena.competition.book import CompetitionBook
    from arena.competition.final import write_final_config
    from arena.tournament.lock import lock_changes

    try:
        config = load_config(args.config)
        output = _output(args)
        gpp = args.games_per_pairing or 2 * config.games_per_pairing
        if gpp < 2 or gpp % 2:
            raise _Usage(f"--games-per-pairing {gpp}: an even number, at least 2 (duplicate pairs)")
        with lock_changes(output), CompetitionBook(output) as book:
            final = write_final_config(config, book, output, gpp)
    except ConfigError as e:
        return _config_errors(e, err)
    except (_Usage, ValueError) as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)
        return 2
    for line in final.left_out:
        err.print(line, highlight=False, soft_wrap=True, markup=False)
    err.print(f"final evaluation: {final.path}", highlight=False, soft_wrap=True)
    return argparse.Namespace(config=str(final.path), referee=None, admin_token=None, output=None,
                              bootstrap=args.bootstrap, verbose=False, no_progress=True, referee_advertise=None,
                              live=False, metrics_port=None, metrics_host="127.0.0.1", skip_broken=True,
                              simulate=None)


def _client(args: argparse.Namespace) -> Any:
    from arena.competition.client import ENV_COMPETITOR_TOKEN, SubmissionClient
    from referee.credentials import SecretError, env_secret, read_pem

    try:
        token = env_secret(ENV_COMPETITOR_TOKEN)
    except SecretError as e:
        raise _Usage(str(e)) from None
    if not token:
        raise _Usage(f"set ${ENV_COMPETITOR_TOKEN} to your competitor token (the host made it for you), or "
                     f"${ENV_COMPETITOR_TOKEN}_FILE to a file holding it")
    ca = read_pem("--tls-ca", args.tls_ca) if args.tls_ca else None  # PemError: one line, exit 2
    return SubmissionClient(args.arena, token, ca)


def _ask(args: argparse.Namespace, ask: Callable[[Any], T]) -> T:
    """``ask``'s answer from a :func:`_client` of ``args``, whose channel is closed after it (raised or not)."""
    client = _client(args)
    try:
        return ask(client)
    finally:
        client.close()


def _revoke_remote_bots(output: Path, book: Any, competitor: str, err: Console) -> None:
    """Revoke the lobby tokens of ``competitor``'s remote bots (``RegisterRemote``): their workers run on
    the competitor's own machine, so a revoked competitor kept playing the league through them. The league's
    store is read and written through :class:`arena.competition.book.LeagueTokens`, as a disqualification's are."""
    from arena.competition.book import LeagueTokens
    from arena.lobby.setup import TOKEN_POLL_S

    remote = [s.entrant for s in book.submissions(competitor) if s.kind == "remote"]
    if not remote:
        return
    tokens = LeagueTokens(output)
    n = tokens.revoke([digest for digests in tokens.valid(remote).values() for digest in digests])
    err.print(f"{competitor}'s remote bots ({', '.join(remote)}): {n} token(s) revoked; a running `arena serve` "
              f"refuses them within {TOKEN_POLL_S:g} s or so and drops their workers", highlight=False, soft_wrap=True)


def _line(sub: Any) -> str:
    """One submission as a line: id, entrant, status, and the step and reason of a rejection, or why it
    retired for good (its image removed: its reason), or the arena's note on one in play (a remote entry
    whose games wait for its first worker: ``(its games wait for its workers: …)``), and ``[final entry]``
    for the competitor's entry in the final as it stands (the wire's ``final_entry``)."""
    why = f" ({sub.step}: {sub.reason})" if sub.status in ("rejected", "failed") else ""
    said = sub.reason and not why  # an accepted one's reason: why it retired for good (its image went), or a note
    retired = (f" [{sub.reason}]" if said else " [retired]") if sub.retired else ""
    note = f" ({sub.reason})" if said and not sub.retired and sub.status in ("accepted", "playing", "rated") else ""
    final = " [final entry]" if getattr(sub, "final_entry", False) else ""  # the book's own rows have no mark
    return f"#{sub.id} {sub.entrant} {sub.status}{why}{note}{retired}{final}"


def _submit(args: argparse.Namespace, console: Console, err: Console) -> int:
    from arena.competition.client import pack

    if args.select is not None:
        chosen = _ask(args, lambda c: c.select(args.select))
        err.print(f"chosen for the final evaluation: {_line(chosen)}", highlight=False, soft_wrap=True, markup=False)
        return 0
    if args.remote:
        return _register_remote(args, console, err)
    if args.folder is None:
        raise _Usage("give the bot's folder (or --select ID, or --remote --name NAME)")
    if args.image and not args.name:
        raise _Usage("--image needs --name (an image archive has no folder name to take it from)")
    name = args.name or Path(args.folder).resolve().name.lower()
    archive = Path(args.folder).read_bytes() if args.image else pack(args.folder)
    client = _client(args)
    try:
        sub = client.submit(archive, name, args.version, args.entry, image=args.image)
        console.print(str(sub.id), highlight=False)
        err.print(f"submitted: {_line(sub)}", highlight=False, soft_wrap=True, markup=False)
        if not args.wait:
            return 0

        def show(s: Any) -> None:
            err.print(_line(s), highlight=False, soft_wrap=True, markup=False)
            if s.status in ("rejected", "failed") and s.log_tail:
                err.print(s.log_tail, highlight=False, soft_wrap=True, markup=False)

        last = client.follow(sub.id, show, args.wait_timeout, shown=sub.status)  # its line is printed above
    finally:
        client.close()
    return _waited(last, args.wait_timeout, err)


def _register_remote(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``arena submit --remote --name NAME``: a remote entry (RegisterRemote); its bot token alone on stdout."""
    if args.folder is not None or args.image or args.entry:
        raise _Usage("--remote registers a bot that runs on your machine: give no folder, --image or --entry")
    if not args.name:
        raise _Usage("--remote needs --name (the bot's name)")
    sub, token = _ask(args, lambda c: c.register_remote(args.name, args.version))
    console.print(token, highlight=False, markup=False)
    err.print(f"registered: {_line(sub)}; its bot token, on stdout, is shown this once. Its games are scheduled "
              f"now and wait for its first worker (none is forfeited before one connects; once one has, a game "
              f"that finds too few connected for the league's no_show_s, 120 s by default, is): run its workers "
              f"with the token in the environment: ALLFOURS_BOT_TOKEN=TOKEN python -m sdk.run MODULE:Class "
              f"--arena {args.arena} --name {sub.entrant} --reconnect 60 (docs/competition.md)",
              highlight=False, soft_wrap=True, markup=False)
    return 0


def _waited(last: Any, timeout_s: float, err: Console) -> int:
    """The exit status of ``arena submit --wait`` once it stopped following at ``last``: 1 for a rejected
    or failed submission; when ``--wait-timeout`` (seconds) ended the wait first, a line saying so, and 0
    only for a bot already in the league (accepted, playing)."""
    from arena.competition.client import FINAL

    if last.status not in FINAL:
        err.print(f"#{last.id} {last.entrant} still {last.status} after {timeout_s:g} s (--wait-timeout): "
                  "no longer followed; `arena submissions` shows it", highlight=False, soft_wrap=True, markup=False)
        return 0 if last.status in ("accepted", "playing") else 1
    return 1 if last.status in ("rejected", "failed") else 0


def _submissions(args: argparse.Namespace, console: Console) -> int:
    if args.log is not None:
        return _seat_log(args)
    if args.games:
        return _games(args, console)
    subs = _ask(args, lambda c: c.submissions())
    table = Table("id", "entrant", "status", "games", "reason")
    for s in subs:
        marks = ", ".join(m for m, on in (("retired", s.retired), ("final entry", s.final_entry)) if on)
        table.add_row(str(s.id), s.entrant + (f" ({marks})" if marks else ""), s.status, str(s.games),
                      Text(f"{s.step}: {s.reason}" if s.step else s.reason))  # the arena's words, not markup
    console.print(table)
    return 0


def _games(args: argparse.Namespace, console: Console) -> int:
    """``arena submissions --games``: the games of my entrants, oldest first (ListGames)."""
    games = _ask(args, lambda c: c.games())
    table = Table("game", "side 0", "side 1", "score", "my seats")
    for g in games:
        table.add_row(Text(g.game_id), Text(g.a), Text(g.b), f"{g.score_a}-{g.score_b}",
                      ", ".join(str(k) for k in g.seats))
    console.print(table)
    return 0


def _seat_log(args: argparse.Namespace) -> int:
    """``arena submissions --log GAME SEAT``: my bot's log of that seat, its bytes as stored (GetSeatLog)."""
    import sys

    game, seat = args.log
    if not seat.isdigit():
        raise _Usage(f"--log GAME SEAT: SEAT must be a seat number (0-based), not {seat[:20]!r}")
    text = _ask(args, lambda c: c.seat_log(game, int(seat)))
    sys.stdout.buffer.write(text)
    sys.stdout.flush()
    return 0
