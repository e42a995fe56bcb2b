"""The docs and the command lines agree: every `--flag` the README and docs/*.md write after a command
exists in that command's parser, and every flag a command has is written in a paragraph that names the
command (a user reading about `arena submit` finds `--wait-timeout` there). Found by running every
documented command as written: `arena submit --wait-timeout` and the conformance suite's
`--socket-dir` were in no doc at all."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


class _Parsed(Exception):
    """Raised in place of parsing, carrying the parser a ``main`` built."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def _built_by(main: Callable[[list[str]], object]) -> argparse.ArgumentParser:
    """The parser that ``main`` builds before it parses its arguments (it is stopped there)."""

    def capture(self: argparse.ArgumentParser, *_: object, **__: object) -> None:
        raise _Parsed(self)

    real = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture  # type: ignore[assignment,method-assign]
    try:
        main([])
    except _Parsed as got:
        return got.parser
    finally:
        argparse.ArgumentParser.parse_args = real  # type: ignore[method-assign]
    raise AssertionError(f"{main} parsed no arguments")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Each documented command as the docs write it, with its parser."""
    from arena.cli.parser import parser as arena_parser
    from arena.formats import sprt
    from arena.ratings import fit
    from referee.cli import _parser as referee_parser
    from sdk import local, spar
    from sdk import run as sdk_run
    from sdk.conformance import cli as conformance

    return {"arena": arena_parser(), "referee": referee_parser(), "python -m sdk.local": _built_by(local.main),
            "python -m sdk.spar": _built_by(spar.main), "python -m sdk.run": sdk_run._parser(),
            "python -m sdk.conformance": conformance._parser(), "allfours-conformance": conformance._parser(),
            "python -m arena.ratings": _built_by(fit.main), "python -m arena.formats.sprt": _built_by(sprt.main)}


def _commands(name: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, set[str]]]:
    """``(command, its --flags)`` for the parser and each sub-command under it (``arena competitor add``)."""
    flags: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, sub_parser in action.choices.items():
                yield from _commands(f"{name} {sub}", sub_parser)
        flags |= {s for s in action.option_strings if s.startswith("--") and s != "--help"}
    yield name, flags


COMMANDS = dict(cmd for name, p in _parsers().items() for cmd in _commands(name, p))
#: Where a command's text ends on a line: a comment, a shell separator, a pipe.
_END = re.compile(r"\s#|\s\|\s|&&|;|\s&(?:\s|$)|\)\s|\s→")


def _spans(text: str) -> Iterator[str]:
    """Each line of a fenced block and each inline code span (folded onto one line) of ``text``."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        yield from block.splitlines()
    yield from (s.replace("\n", " ") for s in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S)))


def _written_flags(span: str) -> Iterator[tuple[str, str]]:
    """``(command, flag)`` for each ``--flag`` written after a known command in ``span``."""
    for start in sorted({c.split()[0] if c.startswith(("arena", "referee")) else c for c in COMMANDS}):
        for m in re.finditer(r"(?:^|(?<=[\s(=$]))" + re.escape(start) + r"\s+(.*)", span):
            words = _END.split(m.group(1))[0].replace("[", " ").replace("]", " ").split()
            command = start
            while words and f"{command} {words[0]}" in COMMANDS:
                command += " " + words.pop(0)
            if command not in COMMANDS or command.split()[-1] in ("arena", "referee"):
                continue  # prose that names the program ("the arena process"), not a command line
            for word in words:
                if word == "--":
                    break  # the conformance suite's bot command follows
                for flag in word.split("/"):
                    if flag.startswith("--"):
                        yield command, re.split(r"[=,.;:)'\"…]", flag)[0]


def test_every_flag_the_docs_write_exists() -> None:
    wrong = [f"{doc.relative_to(ROOT)}: {command} has no {flag}: {span.strip()[:100]}"
             for doc in DOCS for span in _spans(doc.read_text()) for command, flag in _written_flags(span)
             if flag not in COMMANDS[command]]
    assert not wrong, "\n".join(wrong)


def _paragraphs() -> list[str]:
    """The docs cut into paragraphs, list items and table rows."""
    return [p for doc in DOCS for p in re.split(r"\n\s*\n|\n(?=\|)|\n(?=\s*- )|\n(?=\s*\d+\. )", doc.read_text())]


def _named(command: str) -> tuple[str, ...]:
    """How a paragraph names ``command``: ``arena competitor add`` by ``arena competitor``, ``python -m
    sdk.run`` by ``sdk.run``, the conformance suite by ``conformance``."""
    words = command.removeprefix("python -m ").split()
    if words[0] == "allfours-conformance" or words[0] == "sdk.conformance":
        return ("conformance",)
    return (" ".join(words[:2]),) if len(words) > 1 else (words[0],)


def test_every_flag_is_in_a_paragraph_naming_its_command() -> None:
    paragraphs = _paragraphs()
    missing = [f"{command} {flag}" for command, flags in COMMANDS.items() for flag in sorted(flags)
               if command != "allfours-conformance"  # python -m sdk.conformance's parser
               if not any(re.search(re.escape(flag) + r"(?![\w-])", p) and any(n in p for n in _named(command))
                          for p in paragraphs)]
    assert not missing, "flags no paragraph naming their command mentions:\n" + "\n".join(missing)


@pytest.mark.parametrize(("span", "found"), [
    ("arena run CONFIG --referee A:P --no-such-flag   # --not-this", [("arena run", "--referee"),
                                                                    ("arena run", "--no-such-flag")]),
    ("python -m sdk.conformance [--players 2|4] [--lobby] -- node bot.js --x",
     [("python -m sdk.conformance", "--players"), ("python -m sdk.conformance", "--lobby")]),
    ("referee serve --tls-cert/--tls-key", [("referee serve", "--tls-cert"), ("referee serve", "--tls-key")]),
    ("the arena process --output", []),
])
def test_the_scan_reads_command_lines(span: str, found: list[tuple[str, str]]) -> None:
    """The scan finds the flags of a command line and nothing in prose (so the tests above can fail)."""
    assert list(_written_flags(span)) == found


def test_every_environment_variable_the_docs_name_is_read_or_set_somewhere() -> None:
    """An `ALLFOURS_…` variable in the docs is one the code reads or sets (a `…_FILE` one: its variable's,
    read through `referee.credentials`); a renamed variable would leave the docs setting nothing."""
    code = "\n".join(p.read_text(errors="replace") for folder in ("arena", "sdk", "referee", "sample_bots", "docker",
                                                                 "scripts")
                     for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".js", ".cc", ".sh", ".Dockerfile"))
    code += (ROOT / "compose.yaml").read_text()
    named = {v for doc in DOCS for v in re.findall(r"\bALLFOURS_[A-Z_]*[A-Z]\b", doc.read_text())}
    named -= {"ALLFOURS_TOKEN"}  # ALLFOURS_TOKEN_<BOT>, ALLFOURS_TOKEN_{RANDOM,…}: the demo scripts' family
    assert len(named) > 20, named
    unread = sorted(v for v in named if v.removesuffix("_FILE") not in code)
    assert not unread, f"variables the docs name and no code reads: {unread}"
