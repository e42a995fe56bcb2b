"""``python -m sdk.conformance [options] [--lobby] -- COMMAND [ARGS…]`` (also ``allfours-conformance``).

Runs the conformance checks of the mode (per game, or ``--lobby``: :mod:`sdk.conformance.lobby`)
against the bot started by COMMAND and prints a table (check, pass or fail, what was expected, what
the bot did), the end of the bot's own output in each scenario with a failing check, and a one-line
summary; ``--json`` prints one JSON object instead
(``{"summary", "mode", "passed", "failure", "checks": [{"check", "status", "expected", "did",
"scenario"}], "output_tails": {scenario: text}, "bot_counts": {"exceptions", "fallbacks", "scenarios"}}``;
``failure`` is ``""`` or the one line saying why a lobby run stopped early; ``output_tails`` the end of
the bot's own output in each scenario with a failing check; ``bot_counts`` the failures of its own code
the bot reported in its Decisions, which no check judges, also a line under the table). Exit
status: 0 if every check selected passed, 1 if one failed (or, quietly, if the reader of the output
went away: ``--list | head``), 2 on a usage error (an unknown check or rule option, a check of the
other mode, no command, a command that cannot be started).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from referee.rules import RuleSet
from sdk.conformance.checks import CHECKS, Check, Mode, checks_of
from sdk.conformance.launch import TAIL_BYTES, Limits, bot_argv, run_scenario
from sdk.conformance.lobby import run_lobby
from sdk.conformance.logs import RunLog
from sdk.conformance.scenarios import RuleOptions, RuleValue, build_scenarios


@dataclass(frozen=True, slots=True)
class Outcome:
    """One check's row: ``status`` is ``pass``, ``fail`` or ``skip``."""

    check: str
    status: str
    expected: str
    did: str
    scenario: str


@dataclass(frozen=True, slots=True)
class BotCounts:
    """The failures of its own code a bot reported in its Decisions (``Decision.counts``), summed over the
    scenarios: ``exceptions`` its strategy raised, ``fallbacks`` moves its client sent in place of the
    strategy's, and the ``scenarios`` with any. The checks do not judge them (they judge the protocol)."""

    exceptions: int = 0
    fallbacks: int = 0
    scenarios: tuple[str, ...] = ()

    @staticmethod
    def of(logs: Sequence[RunLog]) -> BotCounts:
        """The sum over ``logs``, one per scenario, but the fallbacks the suite caused: a legal move refused on
        purpose (the retry scenario) that the bot, asked again, repeats is replaced by the SDK's fallback, no
        failure of the bot's own code (one such fallback per refusal at most)."""
        fallbacks = {log.scenario: max(0, log.bot_fallbacks - _refused_on_purpose(log)) for log in logs}
        failed = [log for log in logs if log.bot_exceptions or fallbacks[log.scenario]]
        return BotCounts(sum(log.bot_exceptions for log in failed), sum(fallbacks[log.scenario] for log in failed),
                         tuple(log.scenario for log in failed))

    def line(self) -> str:
        """One line for the table's reader, or ``""`` when the bot reported no failure."""
        if not self.scenarios:
            return ""
        return (f"note: its own code failed: the bot reported {self.exceptions} exceptions and {self.fallbacks} "
                f"fallback moves (Decision.counts) in {len(self.scenarios)} scenarios "
                f"({', '.join(self.scenarios)}); the checks judge the protocol, not those moves: see its log")


def _refused_on_purpose(log: RunLog) -> int:
    """The legal answers the scripted referee of ``log`` refused on purpose (the retry scenario's)."""
    return sum(1 for d in log.decisions if d.verdict == "rejected-on-purpose")


@dataclass(slots=True)
class Report:
    """A run's rows, when a lobby run stopped early why (one line; else ``""``), and ``tails``: the end
    of the bot's own output in each scenario (scenario -> text)."""

    outcomes: list[Outcome]
    failure: str = ""
    tails: dict[str, str] = field(default_factory=dict)
    bot_counts: BotCounts = field(default_factory=BotCounts)


_DEFAULTS = Limits()


def parse_rules(text: str | None) -> dict[str, RuleValue]:
    """``"deal_in=ones,hang_jack=false"`` as rule options (values: ints, true/false, or text).

    :raises ValueError: naming a malformed item, an unknown option or a bad value.
    """
    out: dict[str, RuleValue] = {}
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--rules: {item!r} is not KEY=VALUE")
        text_value = value.strip()
        v: RuleValue = text_value
        if text_value.lower() in ("true", "false"):
            v = text_value.lower() == "true"
        elif text_value.lstrip("-").isdigit():
            v = int(text_value)
        out[key.strip()] = v
    if "players" in out:
        raise ValueError("--rules: set the number of players with --players")
    RuleSet.from_dict(out)  # raises ValueError naming the option
    return out


def selected_checks(only: Sequence[str], players: int, mode: Mode = Mode.PER_GAME) -> tuple[list[Check], list[Outcome]]:
    """The checks of ``mode`` to run (all, or those named in ``only``), and skip rows for those that
    cannot run with ``players``. The other mode's own checks are not part of this mode's suite.

    :raises ValueError: for a name in ``only`` that is not a check, or is a check of the other mode.
    """
    suite = checks_of(mode)
    unknown = [n for n in only if n not in {c.name for c in CHECKS}]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(unknown)}; checks: {', '.join(c.name for c in suite)}")
    elsewhere = [n for n in only if n not in {c.name for c in suite}]
    if elsewhere:
        how = "run without --lobby" if mode is Mode.LOBBY else "add --lobby"
        raise ValueError(f"{', '.join(elsewhere)}: not a check of {mode.value} mode ({how})")
    chosen = [c for c in suite if not only or c.name in only]
    skips: list[Outcome] = []
    if players == 2:
        if any(c.name == "pack-runs-dry" for c in chosen):
            skips.append(Outcome("pack-runs-dry", "skip", "", "needs 4 players (with 2 the bot's own choice "
                                                              "decides whether the pack is run)", ""))
        chosen = [c for c in chosen if c.name != "pack-runs-dry"]
    return chosen, skips


async def run_checks(command: Sequence[str], checks: Sequence[Check], players: int, rules: RuleOptions,
                     limits: Limits, on_log: Callable[[RunLog], None] | None = None,
                     mode: Mode = Mode.PER_GAME, socket_dir: str | None = None) -> Report:
    """Run each scenario the checks need once, in order (per game: one bot process each; lobby mode: all
    as Assignments to one worker), then judge every check. ``socket_dir``: per game, the scripted referee
    listens on a unix socket in that folder (:func:`sdk.conformance.launch.start_referee`).

    :raises ValueError: for a check that is not of ``mode`` (see :func:`selected_checks`), or a command
        with an unknown placeholder.
    :raises OSError: if the command cannot be started.
    """
    if wrong := [c.name for c in checks if mode not in c.modes]:
        raise ValueError(f"{', '.join(wrong)}: not a check of {mode.value} mode")
    bot_argv(command, "", "", 0)  # an unknown placeholder raises here, before any server is started
    scenarios = build_scenarios(players, rules)
    needed = [scenarios[name] for name in dict.fromkeys(c.scenario for c in checks)]
    logs: dict[str, RunLog] = {}
    if mode is Mode.LOBBY:
        # lobby-redial: after the scenarios, the lobby restarts and the worker plays a copy of its scenario
        redial = next((scenarios[c.scenario] for c in checks if c.name == "lobby-redial"), None)
        logs = await run_lobby(needed, command, limits, redial=redial)
    for sc in needed:
        if sc.name not in logs:
            logs[sc.name] = await run_scenario(sc, command, limits, socket_dir)
        if on_log is not None:
            on_log(logs[sc.name])
    out = []
    for c in checks:
        v = c.judge(logs[c.scenario], limits)
        out.append(Outcome(c.name, "pass" if v.passed else "fail", c.expected.format(**asdict(limits)), v.did,
                           c.scenario))
    lobby = next((log.lobby for log in logs.values() if log.lobby is not None), None)
    return Report(out, lobby.fatal if lobby is not None else "", {n: log.stderr_tail for n, log in logs.items()},
                  BotCounts.of(list(logs.values())))


def print_table(outcomes: Sequence[Outcome], console: Console, mode: Mode = Mode.PER_GAME, failure: str = "",
                tails: Mapping[str, str] | None = None, bot_counts: BotCounts | None = None) -> None:
    """The table, the bot's own output in the scenarios of failing checks (:func:`print_tails`), the one
    line saying why a lobby run stopped early (if it did), the one line on the failures the bot reported
    of its own code (:meth:`BotCounts.line`, if any), and the summary."""
    title = "allfours.v1 conformance" + (" (lobby mode)" if mode is Mode.LOBBY else "")
    table = Table(title=title, show_lines=False)
    for col in ("check", "result", "expected", "the bot"):
        table.add_column(col, overflow="fold")
    style = {"pass": "green", "fail": "bold red", "skip": "yellow"}
    for o in outcomes:
        # expected and did may quote the bot's own text (its protocol_version, its last output): not markup
        table.add_row(o.check, f"[{style[o.status]}]{o.status.upper()}[/]", escape(o.expected), escape(o.did))
    console.print(table)
    print_tails(outcomes, tails or {}, console)
    if failure:
        console.print(f"[bold red]stopped:[/] {escape(failure)}", markup=True, highlight=False)
    if note := (bot_counts or BotCounts()).line():
        console.print(note, style="yellow", markup=False, highlight=False, soft_wrap=True)
    console.print(summary(outcomes))


def print_tails(outcomes: Sequence[Outcome], tails: Mapping[str, str], console: Console) -> None:
    """The end of the bot's own output (its last :data:`TAIL_BYTES`) in each scenario of a failing check,
    as it wrote it (no markup); scenarios with the same output (a lobby run's one worker) share one block."""
    failing = dict.fromkeys(o.scenario for o in outcomes if o.status == "fail" and o.scenario in tails)
    blocks: dict[str, list[str]] = {}
    for scenario in failing:
        blocks.setdefault(tails[scenario].rstrip(), []).append(scenario)
    for text, scenarios in blocks.items():
        where = ", ".join(scenarios)
        if not text:
            console.print(f"the bot's own output ({where}): nothing", markup=False, highlight=False)
            continue
        console.print(f"the bot's own output ({where}; its last {TAIL_BYTES // 1024} KiB at most):",
                      style="bold", markup=False, highlight=False)
        console.print(text, markup=False, highlight=False, soft_wrap=True)


def summary(outcomes: Sequence[Outcome]) -> str:
    """``"conformance: 19 passed, 1 failed (resume), 0 skipped"``."""
    failed = [o.check for o in outcomes if o.status == "fail"]
    n = {s: sum(1 for o in outcomes if o.status == s) for s in ("pass", "fail", "skip")}
    return (f"conformance: {n['pass']} passed, {n['fail']} failed" + (f" ({', '.join(failed)})" if failed else "")
            + f", {n['skip']} skipped")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sdk.conformance", usage="%(prog)s [options] -- COMMAND [ARGS...]",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--players", type=int, choices=(2, 4), default=4,
                   help="players in the general scenarios (default 4); players-2 and players-4 always run")
    p.add_argument("--rules", default=None, metavar="KEY=VALUE[,...]",
                   help="rule options for the general scenarios, e.g. deal_in=ones,hang_jack=false")
    p.add_argument("--only", action="append", default=[], metavar="CHECK", help="run only this check (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--lobby", action="store_true",
                   help="lobby mode: launch the bot once as a worker (ALLFOURS_LOBBY, ALLFOURS_BOT_TOKEN, "
                        "ALLFOURS_BOT_NAME) and play every scenario as an Assignment")
    p.add_argument("--startup-limit", type=float, default=_DEFAULTS.startup_s, metavar="S",
                   help=f"seconds from launch to Hello (lobby mode: Register) (default {_DEFAULTS.startup_s:g})")
    p.add_argument("--memory-limit", type=float, default=_DEFAULTS.memory_mib, metavar="MIB",
                   help=f"peak resident memory of the bot's processes (default {_DEFAULTS.memory_mib:g})")
    p.add_argument("--socket-dir", metavar="DIR", default=None,
                   help="the scripted referee listens on a unix socket in DIR (the bot gets unix:DIR/...): for a "
                        "bot in a container without a network, with DIR mounted at the same path")
    p.add_argument("--list", action="store_true", help="list the checks (with --lobby: of lobby mode) and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the checks, print; returns the exit status. If the reader of the
    output goes away (``--list | head``) it stops quietly with status 1 (the Python docs' note on
    SIGPIPE; rich does the same for the table)."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # a reader gone during the last lines shows here, not in the flush at exit
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1
    return status


def _main(argv: Sequence[str] | None) -> int:
    """:func:`main` without its handling of a closed output."""
    args = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, command = args[:i], args[i + 1:]
    p = _parser()
    opts = p.parse_args(args)
    mode = Mode.LOBBY if opts.lobby else Mode.PER_GAME
    if opts.list:
        for c in checks_of(mode):
            print(f"{c.name:24} {c.expected.format(**asdict(Limits()))}")
        return 0
    if not command:
        p.error("no bot command: put it after --, e.g. -- python -m sdk.run sample_bots.random_bot:RandomBot")
    try:
        rules = parse_rules(opts.rules)
        checks, skips = selected_checks(opts.only, opts.players, mode)
    except ValueError as e:
        p.error(str(e))
    limits = Limits(startup_s=opts.startup_limit, memory_mib=opts.memory_limit)
    console = Console(stderr=opts.json, width=None if sys.stdout.isatty() else 150)
    try:
        report = asyncio.run(run_checks(command, checks, opts.players, rules, limits,
                                        on_log=None if opts.json else _progress(console), mode=mode,
                                        socket_dir=opts.socket_dir))
    except (OSError, ValueError) as e:
        p.error(f"cannot start the bot {command[0]!r}: {e}")
    outcomes = report.outcomes + skips
    passed = all(o.status != "fail" for o in outcomes)
    if opts.json:
        failing = {o.scenario for o in outcomes if o.status == "fail"}
        print(json.dumps({"summary": summary(outcomes), "mode": mode.value, "passed": passed,
                          "failure": report.failure, "checks": [asdict(o) for o in outcomes],
                          "bot_counts": {**asdict(report.bot_counts), "scenarios": list(report.bot_counts.scenarios)},
                          "output_tails": {k: v for k, v in report.tails.items() if k in failing}}, indent=1))
    else:
        print_table(outcomes, console, mode, report.failure, report.tails, report.bot_counts)
    return 0 if passed else 1


def _progress(console: Console) -> Callable[[RunLog], None]:
    def show(log: RunLog) -> None:
        tail = f" — {escape(log.failure)}" if log.failure else ""
        ending = "" if log.lobby is not None else f", exit {log.exit_code}"
        console.print(f"[dim]scenario {log.scenario}: {len(log.requests)} requests{ending}, "
                      f"{log.wall_s:.1f} s{tail}[/]")
    return show


if __name__ == "__main__":
    sys.exit(main())
