"""The ``arena`` command: ``arena run CONFIG [--referee HOST:PORT --admin-token T] [--output DIR]``.

Runs (or resumes) the tournament of a TOML config (docs/tournament-config.md), then rates every
stored game and publishes the results (docs/arena.md). Exit status: 0 when every scheduled game is
played and published; 1 on a runtime failure (the games stored so far are kept: run the same command
again to resume); 2 on a bad config or arguments; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from arena import publish
from arena.config import ConfigError, TournamentConfig, load_config
from arena.ratings import DEFAULT_BOOTSTRAP, games_from_mapping, rate
from arena.runner import GameRunner, SimulatedRunner, Tournament, open_tournament, run_games
from arena.store import GameResult, StoreMismatch


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="arena", description="All Fours bot tournaments.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run or resume the tournament of CONFIG, then rate and publish")
    run.add_argument("config", help="tournament config (TOML)")
    run.add_argument("--referee", metavar="HOST:PORT", help="use this referee instead of an embedded one")
    run.add_argument("--admin-token", metavar="T", help="admin token of --referee")
    run.add_argument("--output", metavar="DIR", help="output folder (default: the config's tournament.output)")
    run.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, help="bootstrap resamples for intervals")
    run.add_argument("--verbose", action="store_true", help="show the embedded referee's log")
    run.add_argument("--no-progress", action="store_true", help="no live progress bar")
    run.add_argument(
        "--simulate",
        type=float,
        metavar="SECONDS",
        default=None,
        help="testing aid: no referee or bots; outcomes are simulated, each game sleeping SECONDS",
    )
    return p


def tournament_facts(t: Tournament, complete: bool) -> dict[str, Any]:
    """JSON-ready facts published with the ratings; the master seed only when ``complete``."""
    return {
        "name": t.config.name,
        "players": t.config.players,
        "games_per_pairing": t.config.games_per_pairing,
        "bots": {b.name: b.version for b in t.config.bots},
        "rules": t.config.rules.to_dict(),
        "config_fingerprint": t.config.fingerprint(),
        "commitment": t.commitment,
        "master_seed": t.master_seed.hex() if complete else None,
        "scheduled": len(t.schedule),
        "played": t.store.count(),
    }


def publish_tournament(t: Tournament, output: Path, bootstrap: int, console: Console | None) -> dict[str, Any]:
    """Rate every stored game and write the output files; print the table to ``console`` if given.

    :returns: the ratings result (see :func:`arena.ratings.rate`).
    """
    results = t.store.results(order=[g.game_id for g in t.schedule])
    complete = not t.store.pending(t.schedule)
    facts = tournament_facts(t, complete)
    if complete and t.store.get_meta("finished_at") is None:
        t.store.set_meta("finished_at", f"{time.time():.3f}")
    rows = publish.games_rows(results)
    ratings = rate(games_from_mapping(rows), bootstrap=bootstrap, names=[b.name for b in t.config.bots])
    publish.write_outputs(output, results, ratings, facts)
    if console is not None:
        console.print(publish.ratings_table(ratings, facts))
        console.print(f"output: {output}  (leaderboard.html, ratings.json, ratings.csv, games.jsonl)")
        if complete:
            console.print(f"master seed (revealed): {t.master_seed.hex()}  sha256: {t.commitment}")
    return ratings


def make_runner(config: TournamentConfig, args: argparse.Namespace, output: Path) -> tuple[GameRunner, Any]:
    """The game runner for ``args`` and a closer to call at the end (stops an embedded referee)."""
    if args.simulate is not None:
        return SimulatedRunner(delay_s=args.simulate, target=config.rules.target), lambda: None
    from arena.match_runner import GrpcGameRunner, connect_referee

    if args.referee is None and not args.verbose:
        import logging

        import structlog

        # the embedded referee logs every match event; keep the terminal for the progress bar
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    conn = connect_referee(args.referee, args.admin_token)
    return GrpcGameRunner(config, conn, output), conn.close


def run_command(args: argparse.Namespace, console: Console) -> int:
    """``arena run``: see the module docstring for the exit status."""
    try:
        config = load_config(args.config)
    except ConfigError as e:
        console.print(f"[red]config error:[/red] {e}", markup=True, highlight=False)
        return 2
    if args.referee and not args.admin_token:
        console.print("[red]error:[/red] --referee needs --admin-token")
        return 2
    output = Path(args.output).resolve() if args.output else config.output
    try:
        t = open_tournament(config, output)
    except StoreMismatch as e:
        console.print(f"[red]error:[/red] {e}")
        return 2
    try:
        pending = t.store.pending(t.schedule)
        console.print(
            f"tournament {config.name}: {len(t.schedule)} games scheduled, "
            f"{len(t.schedule) - len(pending)} already played; master seed commitment {t.commitment}"
        )
        if pending:
            runner, close = make_runner(config, args, output)
            stop = threading.Event()
            try:
                with publish.progress_bar(
                    len(t.schedule), len(t.schedule) - len(pending), console, enabled=not args.no_progress
                ) as advance:

                    def on_result(result: GameResult, written: bool) -> None:
                        advance(1)
                        failed = [r for r in result.reasons if "fail" in r or "timed out" in r or "crash" in r]
                        if failed and args.no_progress:
                            console.print(f"{result.game_id}: {'; '.join(result.reasons)}", highlight=False)

                    run_games(pending, runner, t.store, config.concurrency, on_result, stop)
            except KeyboardInterrupt:
                stop.set()
                console.print("[yellow]interrupted[/yellow]: stored games are kept; run the same command to resume")
                return 130
            except Exception as e:
                console.print(
                    f"[red]error:[/red] {type(e).__name__}: {e}\nstored games are kept; run the same command to resume"
                )
                return 1
            finally:
                close()
        publish_tournament(t, output, args.bootstrap, console)
        return 0
    finally:
        t.store.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arena`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    console = Console(stderr=False)
    if args.command == "run":
        return run_command(args, console)
    return 2  # pragma: no cover - argparse rejects other commands


if __name__ == "__main__":
    sys.exit(main())
