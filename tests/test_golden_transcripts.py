"""Golden transcripts (tests/golden/, docs/bot-authors.md, Golden transcripts): the real referee, with scripted
clients in fixed matches, must send exactly the stored messages, byte for byte.

After an intended wire change, regenerate with ``python -m tests.golden --write`` and review the diff.
"""

from __future__ import annotations

import pytest

from tests.golden import MATCHES, GoldenMatch, path_of, transcript


@pytest.mark.parametrize("match", MATCHES, ids=lambda m: m.name)
def test_the_referee_sends_the_golden_transcript(match: GoldenMatch) -> None:
    stored = path_of(match).read_bytes()
    now = transcript(match).encode("utf-8")
    if now != stored:
        old, new = stored.decode().splitlines(), now.decode().splitlines()
        at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        pytest.fail(f"{path_of(match).name} line {at + 1} differs (regenerate with python -m tests.golden --write "
                    f"if the wire change is intended):\n- {old[at][:600] if at < len(old) else '(end)'}\n"
                    f"+ {new[at][:600] if at < len(new) else '(end)'}", pytrace=False)


def test_the_transcripts_show_what_they_claim() -> None:
    """The fumbling seat's rejection, the ignored duplicate and each match's end are in the files."""
    two = path_of(MATCHES[0]).read_text()
    assert two.count("<- action_rejected { seq: 3 reason: REASON_CARD_NOT_IN_HAND") == 1
    assert two.count("-> decision { seq: 3 action { kind: ACTION_KIND_PLAY card: \"QD\" } }") == 2  # answer + duplicate
    for m in MATCHES:
        text = path_of(m).read_text()
        players = int(m.rules["players"])  # type: ignore[call-overload]
        assert text.count("<- match_end {") == players
        assert text.count("<- welcome {") == players
