"""The viewer's frames (arena/web/frames.py) as a property: over random games, a seat's view never
holds a card that seat could not know at that step, and the all-hands view replays to the engine's
scores. Games are played by a seeded random choice among the legal actions; decks from the seed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from web_helpers import cards_in, random_record, seat_knowledge

from arena.web.frames import ALL, compact_frames, expand_frames, replay_frames


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**64), players=st.sampled_from([2, 4]), target=st.sampled_from([7, 14]))
def test_a_seat_view_holds_only_what_the_seat_could_know(seed: int, players: int, target: int) -> None:
    lines = random_record(seed, players, target)
    for seat in range(players):
        frames = replay_frames(lines, seat)["frames"]
        known = list(seat_knowledge(lines, seat))
        assert len(frames) == len(known)
        for frame, (_, may_know, hidden) in zip(frames, known, strict=True):
            shown = cards_in(frame)
            assert shown <= may_know and not shown & hidden, (seat, frame["i"], shown - may_know)
            assert frame["hands"][seat] is not None and all(
                h is None for s, h in enumerate(frame["hands"]) if s != seat)
    every = replay_frames(lines, ALL)["frames"]
    assert every[-1]["final_scores"] == lines[-1]["scores"]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**64), players=st.sampled_from([2, 4]))
def test_a_step_lists_each_happening_once(seed: int, players: int) -> None:
    """The sidebar lists a step's text and then its events: no event says again what the text says
    (a deal step once read "deal 1: seat 0 deals" and then "deal 1, seat 0 deals")."""
    lines = random_record(seed, players, 7)
    for frame in replay_frames(lines, ALL)["frames"]:
        words = frame["text"].replace(":", ",")
        assert words not in frame["events"], (frame["i"], frame["text"], frame["events"])
        assert len(set(frame["events"])) == len(frame["events"]), frame["events"]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**64), players=st.sampled_from([2, 4]), target=st.sampled_from([7, 14]))
def test_compact_frames_expand_to_the_frames_in_three_fifths_of_the_size(seed: int, players: int,
                                                                         target: int) -> None:
    """A page carries its frames as changes from the frame before (``compact_frames``), which the page's
    script expands (``expand_frames`` is the same in Python): every view expands to its frames, and the
    compact JSON is at most three fifths of the whole frames' (43-50% over 300 random games; a replay
    page was ten to twenty times its record)."""
    lines = random_record(seed, players, target)
    for view in [ALL, *range(players)]:
        frames = replay_frames(lines, view)["frames"]
        compact = compact_frames(frames)
        assert expand_frames(compact) == frames
        whole, small = (len(json.dumps(f, separators=(",", ":"))) for f in (frames, compact))
        assert small * 5 <= whole * 3, (view, small, whole)


def test_a_frame_with_a_compact_key_is_refused() -> None:
    with pytest.raises(ValueError, match="may not have a key '_gone' or '_more'"):
        compact_frames([{"i": 0}, {"i": 1, "_more": {}}])
