"""docs/sdk.md says what it shows: its card example runs, and every return form it lists for `act`
resolves to the legal action it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from referee.rules import Beg, Call, Card, GiveOne, Pass, Play, RunPack, Stand
from sdk import IllegalChoice, resolve_choice

DOC = Path(__file__).resolve().parent.parent / "docs" / "sdk.md"


def test_the_cards_example_runs() -> None:
    text = DOC.read_text()
    section = text[text.index("### Cards, ranks and suits") : text.index("## Adding your bot to a tournament")]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {})  # its asserts are the checks


def test_cards_do_not_compare_but_ranks_do() -> None:
    with pytest.raises(TypeError):
        max([Card.parse("TH"), Card.parse("AS")])  # type: ignore[type-var]


@pytest.mark.parametrize(
    ("choice", "action"),
    [
        (Card.parse("TH"), Play(Card.parse("TH"))),
        ("TH", Play(Card.parse("TH"))),
        ("10h", Play(Card.parse("TH"))),
        ("th", Play(Card.parse("TH"))),
        ("stand", Stand()),
        ("beg", Beg()),
        ("give", GiveOne()),
        ("run", RunPack()),
        ("pass", Pass()),
        ("call 5C", Call(Card.parse("5C"))),
        (Play(Card.parse("TH")), Play(Card.parse("TH"))),
    ],
)
def test_every_return_form_the_docs_list(choice: object, action: object) -> None:
    legal = (Stand(), Beg(), GiveOne(), RunPack(), Pass(), Play(Card.parse("TH")), Call(Card.parse("5C")))
    assert resolve_choice(choice, legal) == action  # type: ignore[arg-type]
    with pytest.raises(IllegalChoice):
        resolve_choice(choice, tuple(a for a in legal if a != action))  # type: ignore[arg-type]


def test_every_name_the_context_and_hook_tables_list_exists() -> None:
    """Each field docs/sdk.md lists for `ctx`, its observation and shortcuts, and each hook's argument is an
    attribute of the class it names (a renamed field would leave the docs promising what a bot cannot read)."""
    import sdk
    from referee.rules import Observation

    text = DOC.read_text()
    table = text[text.index("| field | meaning |"):text.index("Shortcuts:")]
    named = [(sdk.Context, n) for cell in re.findall(r"^\| ([^|]*) \|", table, flags=re.M)
             for n in re.findall(r"`(\w+)`", cell)]
    named += [(Observation, n) for n in re.findall(r"`(\w+)`", table[table.index("may see"):table.index("| `legal`")])]
    named += [(sdk.Context, n) for n in re.findall(r"`ctx\.(\w+)`", text[text.index("Shortcuts:"):])[:5]]
    for hook, cls, names in re.findall(r"^\| `(on_\w+)\(\w+\)` \| `(\w+)`: (.*) \|$", text, flags=re.M):
        named += [(sdk.Bot, hook)] + [(getattr(sdk, cls), n) for n in re.findall(r"`(?:\w+\.)?(\w+)`", names)]
    assert len(named) > 50, named
    missing = [f"{cls.__name__}.{n}" for cls, n in named if not hasattr(cls, n)]
    assert not missing, f"docs/sdk.md names what the SDK does not have: {missing}"


BOT_AUTHORS = DOC.parent / "bot-authors.md"


@pytest.mark.slow
def test_bot_authors_python_path_runs_as_written(tmp_path: Path) -> None:
    """issue 24, item 9: docs/bot-authors.md's Python steps, followed literally in a copy of the
    repository's layout (mybot.py at the root, the config beside the demo): the tournament runs and
    mybot plays in it (a copy of demo.toml at the root broke: its paths are relative to its folder)."""
    import shutil
    import subprocess
    import sys

    doc = BOT_AUTHORS.read_text()
    root = DOC.parent.parent
    section = doc[doc.index("## Python"):doc.index("## Any language")]
    (tmp_path / "mybot.py").write_text(re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
                                       .replace("\n   ", "\n").removeprefix("   "))
    for name in ("sample_bots", "sdk", "referee", "allfours", "arena"):
        (tmp_path / name).symlink_to(root / name)
    assert "`mkdir mybots && cp mybot.py mybots/`" in section
    (tmp_path / "mybots").mkdir()
    shutil.copyfile(tmp_path / "mybot.py", tmp_path / "mybots" / "mybot.py")
    (tmp_path / "examples").mkdir()
    assert "cp examples/demo.toml examples/my.toml" in section
    shutil.copyfile(root / "examples" / "demo.toml", tmp_path / "examples" / "my.toml")
    cfg = tmp_path / "examples" / "my.toml"
    text = cfg.read_text()
    assert 'set `name = "my"` and `output = "../arena-out/my"`' in section
    text = re.sub(r'(?m)^name = "demo"', 'name = "my"', text)
    text = re.sub(r'(?m)^output = "[^"]*"', 'output = "../arena-out/my"', text)
    block = re.search(r"```toml\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    text += "\n" + "\n".join(line.strip() for line in block.splitlines()) + "\n"
    # Only to keep the test short: 2 games a pairing (the doc's copy plays the demo's 6).
    cfg.write_text(re.sub(r"(?m)^games_per_pairing = \d+", "games_per_pairing = 2", text))
    assert "run `arena run examples/my.toml`" in section
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", "examples/my.toml", "--no-progress",
                           "--bootstrap", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import json

    games = [json.loads(x) for x in (tmp_path / "arena-out" / "my" / "games.jsonl").read_text().splitlines()]
    mine = [g for g in games if "mybot" in (g["a"], g["b"])]
    assert mine and all(g["terminations"] == ["normal"] * 4 for g in mine), mine


def test_bot_authors_cpp_stub_command_runs_as_written(tmp_path: Path) -> None:
    """docs/bot-authors.md, "Any language" step 1: the C++ stub command, run as written in a folder
    holding the repository's ``proto/``, makes the C++ message and gRPC stubs of referee.proto (it had
    no ``-I`` and no .proto file: protoc then only says ``Missing input file``)."""
    import shutil
    import subprocess

    if shutil.which("protoc") is None or shutil.which("grpc_cpp_plugin") is None:
        pytest.skip("protoc or grpc_cpp_plugin missing (scripts/setup.sh installs them)")
    doc = BOT_AUTHORS.read_text()
    step = doc[doc.index("1. **Generate stubs**"):doc.index("2. **Read your ticket")]
    command = re.search(r"`([^`]*--cpp_out[^`]*)`", step).group(1)  # type: ignore[union-attr]
    command = " ".join(command.split())
    (tmp_path / "proto").symlink_to(DOC.parent.parent / "proto")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (command, done.stderr[-2000:])
    made = {p.name for p in tmp_path.rglob("referee*") if p.is_file()}
    assert made == {"referee.pb.h", "referee.pb.cc", "referee.grpc.pb.h", "referee.grpc.pb.cc"}, (command, made)
