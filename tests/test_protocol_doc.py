"""docs/protocol.md names enum values as the wire does (fresh-user review: it wrote ``{kind: BEG}`` and
``kind: STAND`` while the stubs, text format and JSON say ``ACTION_KIND_BEG``): messages written out
use the full names, every full name is a value of referee.proto, and the short names of the prose are
the convention the page states (the value with its enum's UPPER_SNAKE prefix dropped)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "protocol.md").read_text()
PROTO = (ROOT / "proto" / "allfours" / "v1" / "referee.proto").read_text()


def enum_values(proto: str) -> dict[str, list[str]]:
    """Each enum of ``proto`` (its name) to its value names, in order."""
    return {name: re.findall(r"^\s*([A-Z][A-Z0-9_]*)\s*=", body, flags=re.M)
            for name, body in re.findall(r"^enum (\w+) \{(.*?)^\}", proto, flags=re.M | re.S)}


def prefix(enum: str) -> str:
    """The UPPER_SNAKE prefix protobuf style gives the values of ``enum`` (``ActionKind``: ``ACTION_KIND_``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum).upper() + "_"


ENUMS = enum_values(PROTO)


def test_the_proto_is_read() -> None:
    assert ENUMS["ActionKind"][:2] == ["ACTION_KIND_UNSPECIFIED", "ACTION_KIND_STAND"]
    assert all(v.startswith(prefix(e)) for e, values in ENUMS.items() for v in values)


def test_messages_written_out_name_kinds_in_full() -> None:
    kinds = set(ENUMS["ActionKind"]) | set(ENUMS["EventKind"])
    written = re.findall(r"\bkind: ([A-Z][A-Z0-9_]*)", DOC)
    assert len(written) > 10, "the worked exchange was not found"
    assert [k for k in written if k not in kinds] == []


def test_full_names_are_values_of_the_proto() -> None:
    values = {v for vs in ENUMS.values() for v in vs}
    prefixes = tuple(prefix(e) for e in ENUMS)
    full = {w for w in re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", DOC) if w.startswith(prefixes)}
    assert {"ACTION_KIND_STAND", "REASON_UNDERTRUMP", "PHASE_BEG"} <= full
    assert sorted(full - values) == []


def test_the_prose_states_the_prefix_convention_and_names_every_kind() -> None:
    assert "prefixes each value with its enum's name in UPPER_SNAKE" in DOC
    for enum in ("ActionKind", "EventKind"):
        for value in ENUMS[enum][1:]:
            short = value.removeprefix(prefix(enum))
            assert f"`{short}`" in DOC or value in DOC, f"{enum} {value} is not in docs/protocol.md"
