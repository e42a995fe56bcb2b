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
