"""Bad input to the local tools (``python -m sdk.local``, ``python -m sdk.spar``) and bots that fail in
them: each a one-line error and a precise exit status, never a traceback (found by a hostile review,
2026-12-03). Real processes: the bots are modules written to a temporary folder on ``PYTHONPATH``."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdk import load_bot
from sdk.local_table import BotFailed, play_local, rules_option

ROOT = Path(__file__).resolve().parent.parent
RANDOM = "sample_bots.random_bot:RandomBot"

#: Bots that fail in each way a bot author's bot may, in a module the tests write.
BAD_BOTS = '''
import sys
from sample_bots.random_bot import RandomBot

class Raises(RandomBot):
    def act(self, ctx):
        raise ZeroDivisionError("the bot divided by zero")

class Exits(RandomBot):
    def act(self, ctx):
        sys.exit(0)

class Interrupted(RandomBot):
    def act(self, ctx):
        raise KeyboardInterrupt

class HookRaises(RandomBot):
    def on_event(self, event):
        raise RuntimeError("hook broke")

class Cheats(RandomBot):
    def act(self, ctx):
        return "beg" if ctx.phase.value == "play" else "9Z"

class NeedsArgs(RandomBot):
    def __init__(self, level):
        super().__init__()

NOT_A_CLASS = 42
'''


def _run(tmp_path: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "badbots.py").write_text(BAD_BOTS)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=env)


def _one_line(r: subprocess.CompletedProcess[str], status: int, *needles: str) -> str:
    """The run's stderr is one line (no traceback), with exit ``status`` and every needle in it."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    message = lines[-1]
    assert all(n in message for n in needles), message
    return message


@pytest.mark.parametrize("module", ["sdk.local", "sdk.spar"])
@pytest.mark.parametrize(("bot", "needles"), [
    ("badbots:Raises", ("seat 0", "badbots:Raises", "ZeroDivisionError: the bot divided by zero")),
    ("badbots:Exits", ("seat 0", "badbots:Exits", "SystemExit")),
    ("badbots:HookRaises", ("badbots:HookRaises", "on_event", "RuntimeError: hook broke")),
    ("badbots:Cheats", ("seat 0", "badbots:Cheats", "bot chose", "legal: ")),
])
def test_a_failing_bot_is_a_one_line_error_with_status_1(tmp_path: Path, module: str, bot: str,
                                                         needles: tuple[str, ...]) -> None:
    args = [bot, RANDOM, "--players", "2"] + (["--pairs", "1"] if module == "sdk.spar" else [])
    r = _run(tmp_path, module, *args)
    message = _one_line(r, 1, *needles)
    assert message.startswith(f"python -m {module}: error: "), message
    assert r.stdout == ""  # no result printed for a match that did not finish


@pytest.mark.parametrize("module", ["sdk.local", "sdk.spar"])
def test_an_interrupt_is_one_line_and_status_130(tmp_path: Path, module: str) -> None:
    r = _run(tmp_path, module, "badbots:Interrupted", RANDOM, "--players", "2")
    _one_line(r, 130, "interrupted")


@pytest.mark.parametrize(("module", "args"), [
    ("sdk.local", ["--games", "2"]),
    ("sdk.local", ["--games", "2", "--json"]),
    ("sdk.local", ["--games", "2", "--duplicate"]),
    ("sdk.spar", ["--pairs", "1", "--json"]),
])
def test_output_into_a_closed_pipe_is_quiet(module: str, args: list[str]) -> None:
    """`python -m sdk.local … --json | head -0` ended in a BrokenPipeError traceback (twice: at the print
    and again at exit); it now stops quietly with status 1, as `arena run … | head` and `python -m
    arena.ratings … | head` do (docs/arena.md, Running)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        done = subprocess.run([sys.executable, "-m", module, RANDOM, RANDOM, "--players", "2", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")


@pytest.mark.parametrize("module", ["sdk.local", "sdk.spar"])
@pytest.mark.parametrize(("args", "needles"), [
    (["--rules", "[1, 2]"], ("--rules", "a JSON object", "list")),
    (["--rules", "null"], ("--rules", "a JSON object")),
    (["--rules", "notjson"], ("--rules", "not JSON")),
    (["--rules", '{"players": 2}', "--players", "4"], ("--rules", "players 2", "--players 4")),
    (["--rules", '{"target": "x"}'], ("target",)),
])
def test_bad_rules_are_usage_errors(tmp_path: Path, module: str, args: list[str], needles: tuple[str, ...]) -> None:
    r = _run(tmp_path, module, RANDOM, RANDOM, *args)
    assert _one_line(r, 2, *needles).startswith(f"python -m {module}: error: ")


@pytest.mark.parametrize("module", ["sdk.local", "sdk.spar"])
@pytest.mark.parametrize(("bot", "needles"), [
    ("badbots:NeedsArgs", ("badbots:NeedsArgs", "no arguments")),
    ("badbots:NOT_A_CLASS", ("badbots:NOT_A_CLASS", "not a class")),
])
def test_a_bot_that_cannot_be_made_is_a_usage_error(tmp_path: Path, module: str, bot: str,
                                                    needles: tuple[str, ...]) -> None:
    _one_line(_run(tmp_path, module, bot, RANDOM), 2, *needles)


@pytest.mark.parametrize(("args", "needles"), [
    (["--games", "0"], ("--games", "at least 1", "0")),
    (["--games", "0", "--duplicate"], ("--games", "even", "0")),
    (["--games", "3", "--duplicate"], ("--games", "even", "3")),
])
def test_local_game_counts_are_checked(tmp_path: Path, args: list[str], needles: tuple[str, ...]) -> None:
    _one_line(_run(tmp_path, "sdk.local", RANDOM, RANDOM, *args), 2, *needles)


def test_the_rules_table_size_comes_from_rules_when_players_is_not_given(tmp_path: Path) -> None:
    """``--rules '{"players": 2}'`` alone seats two (it was silently overridden by the default 4)."""
    assert rules_option('{"players": 2}', None).players == 2
    assert rules_option(None, None).players == 4 and rules_option(None, 2).players == 2
    assert rules_option('{"players": 4}', 4).players == 4
    r = _run(tmp_path, "sdk.local", RANDOM, "--rules", '{"players": 2, "target": 5}', "--json")
    assert r.returncode == 0, r.stderr
    assert '"players": 2' in r.stdout and '"target": 5' in r.stdout


def test_play_local_names_the_seat_and_keeps_the_cause() -> None:
    """In Python the failure is a :class:`BotFailed` whose ``__cause__`` is the bot's own exception
    (its traceback for the author), with the seat, the bot and where it failed."""
    class Broken:
        def act(self, ctx: object) -> object:
            raise ValueError("no idea")

    from sample_bots.random_bot import RandomBot
    with pytest.raises(BotFailed) as err:
        play_local([RandomBot(), Broken()], seed="broken")
    e = err.value
    assert e.seat == 1 and e.bot.endswith(".Broken") and isinstance(e.__cause__, ValueError)
    assert str(e).startswith(f"seat 1 ({e.bot}) failed in game 1, decision ")
    assert str(e).endswith(": ValueError: no idea")


def test_a_bots_error_text_reaches_the_terminal_bounded_and_without_control_characters() -> None:
    """The bot's exception text is the bot's: an escape sequence (here: clear the screen) or a flood must
    not reach the user's terminal as it is (``referee.wire.plain_text``, as for every bot's text)."""
    class Noisy:
        def act(self, ctx: object) -> object:
            raise ValueError("\x1b[2J\x1b[31mgotcha\u202e\n" + "x" * 5000)

    from sample_bots.random_bot import RandomBot
    with pytest.raises(BotFailed) as err:
        play_local([Noisy(), RandomBot()], seed="noisy")
    text = str(err.value)
    # bounded: the text cut at 300 characters, the place in the code (file:line) at 300 too
    assert text.isprintable() and "ValueError: [2J[31mgotcha" in text and len(text) < 800, text


def test_load_bot_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match=r"'sdk\.spar:Z95' is not a class"):
        load_bot("sdk.spar:Z95")  # a float
    with pytest.raises(ValueError, match="cannot be made with no arguments"):
        load_bot("sdk.local_table:BotFailed")  # a class whose constructor needs arguments


def test_an_even_score_is_elo_plus_zero() -> None:
    """An even score printed ``Elo -0.0`` (the negative zero of ``-400 log10(1)``)."""
    from arena.ratings.elo import elo_of_score
    from sdk.spar import SparResult, format_summary

    assert math.copysign(1.0, elo_of_score(0.5)) == 1.0
    result = SparResult(scores=[0.5, 1.0, 0.0])
    text = format_summary("a:A", "b:B", 4, result.summary())
    assert text.startswith("a:A vs b:B, 4 players, 3 duplicate pairs: Elo +0.0 (")


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"ms": float("nan")}, "ms must be a whole number of at least 1, not nan"),
    ({"ms": float("inf")}, "ms must be"), ({"ms": True}, "ms must be"), ({"ms": "5"}, "ms must be"),
    ({"ms": None}, "ms must be"), ({"ms": 0}, "ms must be"), ({"samples": 2.5}, "samples must be"),
    ({"samples": 0}, "samples must be"), ({"seed": "x"}, "seed must be a whole number, not 'x'"),
    ({"indifferent": -1}, "indifferent must be a whole number of at least 0"),
])
def test_search_bot_levels_are_checked(kwargs: dict[str, object], needle: str) -> None:
    """The search bot's parameters (nan, infinity or ``True`` played with no budget or a wrong one)."""
    from sample_bots.search import SearchBot

    with pytest.raises(ValueError, match=needle):
        SearchBot(**kwargs)  # type: ignore[arg-type]
    assert SearchBot(ms=7, samples=3, seed=-2, indifferent=0).ms == 7


@pytest.mark.parametrize(("scores", "expected"), [
    ([0.0] * 6, "Elo below -544.7 (every game lost, so the estimate is a bound: the score 0 is clamped to "
                "1/(4 pairs); 95% -inf .. -"),
    ([1.0] * 6, "Elo above +544.7 (every game won, so the estimate is a bound: the score 1 is clamped to "
                "1 - 1/(4 pairs); 95% +"),
])
def test_a_clamped_estimate_is_printed_as_a_bound(scores: list[float], expected: str) -> None:
    """Every game lost (or won) printed ``Elo -544.7 (95% -544.7 .. -70.4)``: the estimate equal to the
    interval's bound with no word of the clamp (fresh-user review). The line says it is a bound."""
    from sdk.spar import SparResult, format_summary

    summary = SparResult(scores=scores).summary()
    first = format_summary("a:A", "b:B", 4, summary).splitlines()[0]
    assert first.startswith("a:A vs b:B, 4 players, 6 duplicate pairs: " + expected), first
    high = "+inf" if summary["ci_high"] is None else f"{summary['ci_high']:+}"
    assert first.endswith(f" .. {high}), score {summary['score']}")
    assert (summary["ci_low"], summary["ci_high"]).count(None) == 1  # the end beyond the clamp is unbounded
    assert summary["elo"] == (-544.7 if scores[0] == 0 else 544.7)  # the JSON fields are unchanged


@pytest.mark.parametrize("module", ["sdk.local", "sdk.spar"])
def test_a_bots_exception_is_placed_at_its_own_line_of_code(tmp_path: Path, module: str) -> None:
    """The one line said what the bot raised (``ZeroDivisionError: …``) but not where in its code: the
    author had to call ``play_local`` from Python for the traceback. It now names the file and line of the
    bot's own code that raised (the deepest frame in the bot's module), still in one line."""
    line = BAD_BOTS.splitlines().index('        raise ZeroDivisionError("the bot divided by zero")') + 1
    r = _run(tmp_path, module, "badbots:Raises", RANDOM, "--players", "2",
             *(["--pairs", "1"] if module == "sdk.spar" else []))
    message = _one_line(r, 1, "ZeroDivisionError: the bot divided by zero")
    assert f"in act at {tmp_path / 'badbots.py'}:{line}: ZeroDivisionError" in message, message
