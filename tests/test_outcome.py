"""The one outcome vocabulary (referee/outcome.py) against the wire's enums, both ways: every
``allfours.v1.Termination`` and ``MatchStatus`` value has its member; every member without a proto
value is one of the arena's own (``ARENA_ONLY``), documented in docs/arena.md; and every place that
lists terminations (the web's filter, referee.verify) takes them from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from arena.ratings.fit import games_from_mapping, rate, read_games
from arena.tournament.result import Failures, GameResult, Unplayed, forfeit_result
from arena.tournament.runner import SimulatedRunner
from arena.tournament.schedule import make_schedule
from arena.web.data import TERMINATIONS as WEB_TERMINATIONS
from arena.web.data import BadQuery, GamesQuery
from referee import verify
from referee.outcome import ARENA_ONLY, CONSEQUENCES, NOT_A_FORFEIT, MatchStatus, Termination

ROOT = Path(__file__).resolve().parents[1]


def test_every_proto_termination_has_a_member_and_back() -> None:
    for name, value in pb.Termination.items():
        member = Termination.from_pb(value)
        assert member.name == name.removeprefix("TERMINATION_"), name
        assert member not in ARENA_ONLY
    proto_names = {n.removeprefix("TERMINATION_") for n, _ in pb.Termination.items()}
    assert {t.name for t in Termination} - proto_names == {t.name for t in ARENA_ONLY}


def test_every_proto_match_status_has_a_member_and_back() -> None:
    assert {MatchStatus.from_pb(v).name for v in pb.MatchStatus.values()} == {s.name for s in MatchStatus}
    assert {n.removeprefix("MATCH_STATUS_") for n, _ in pb.MatchStatus.items()} == {s.name for s in MatchStatus}


def test_unknown_wire_values_are_unspecified() -> None:
    assert Termination.from_pb(999) is Termination.UNSPECIFIED
    assert MatchStatus.from_pb(999) is MatchStatus.UNSPECIFIED


def test_arena_only_members_are_documented_as_such() -> None:
    """docs/arena.md, "Bot failures", lists each of the arena's own terminations as `name`."""
    text = (ROOT / "docs" / "arena.md").read_text()
    section = text[text.index("## Bot failures"):text.index("## Referees")]
    for member in ARENA_ONLY:
        assert f"`{member.value}`" in section, member


@pytest.mark.parametrize("term", list(Termination))
def test_forfeits_is_the_seats_own_failure(term: Termination) -> None:
    assert term.forfeits == (term not in NOT_A_FORFEIT)
    assert not (term in CONSEQUENCES and term in ARENA_ONLY)


def test_the_web_filter_and_verify_take_their_lists_from_it() -> None:
    stored = {t.value for t in Termination} - {"unspecified", "aborted"}
    assert set(WEB_TERMINATIONS) == stored
    for term in ARENA_ONLY:  # the games list can select every termination the arena stores
        GamesQuery(termination=term.value).check()
    with pytest.raises(BadQuery):
        GamesQuery(termination="exploded").check()
    assert set(verify.TERMINATIONS) == {t.value for t in Termination} - {t.value for t in ARENA_ONLY} - {"unspecified"}
    assert set(verify.FORFEITS) == {"timeout", "illegal", "disconnect", "protocol_error", "no_show"}


def test_one_forfeit_builder_scores_no_points_and_names_only_the_failing_seats() -> None:
    game = make_schedule("f", ["ok", "gone"], 2, 4, bytes(32))[0]
    failing = game.sides[1]
    res = forfeit_result(game, {failing: Unplayed(Termination.NOT_STARTED, "could not start")})
    assert (res.scores, res.winner, res.status, res.record_path) == ((0, 0), 0, MatchStatus.FORFEITED, None)
    assert res.terminations == (Termination.OTHER_SEAT_FORFEITED, Termination.NOT_STARTED) * 2
    assert res.reasons == (f"side 1 ({failing}) forfeited: could not start",)
    both = forfeit_result(game, {b: Unplayed(Termination.BROKEN, "3 deaths") for b in game.sides})
    assert both.winner is None and set(both.terminations) == {Termination.BROKEN}


def test_details_round_trip_and_old_rows_read_the_same() -> None:
    game = make_schedule("r", ["a", "b"], 2, 2, bytes(32))[0]
    res = GameResult(game.game_id, "m1", game.pair_id, game.sides, (14, 3), 0, ("side 0 (a) reached 14",), "r.jsonl",
                     game.seed.hex(), game.first_dealer, 1.5, status=MatchStatus.COMPLETED,
                     terminations=(Termination.NORMAL, Termination.CRASH), think_ms=12, referee="h:1",
                     failures=(Failures(), Failures(crashes=1)), phases_ms={"create": 1.0}, workers=("w1", None),
                     attempt=2)
    columns = (res.game_id, res.match_id, res.pair_id, *res.sides, *res.scores, res.winner, list(res.reasons),
               res.record_path, res.seed_hex, res.first_dealer, res.duration_s)
    assert GameResult.from_stored(columns, res.details()) == res
    # an older arena's forfeit of a bot that failed its check: (target, 0), every seat not_started
    old = {"status": "FORFEITED_BEFORE_START", "terminations": ["not_started"] * 2}
    back = GameResult.from_stored((*columns[:5], 14, 0, 0, [], None, *columns[10:]), old)
    assert back.scores == (0, 0) and back.status is MatchStatus.FORFEITED
    assert back.terminations == (Termination.OTHER_SEAT_FORFEITED, Termination.NOT_STARTED)
    played = GameResult.from_stored(columns, {"status": "MATCH_STATUS_COMPLETED", "terminations": ["normal", ""]})
    assert played.status is MatchStatus.COMPLETED and played.terminations[1] is Termination.UNSPECIFIED


def test_a_game_neither_side_played_is_not_a_rating_input() -> None:
    """Both sides forfeit (both bots broken): no winner, and no evidence of which bot is stronger. Its
    games.jsonl row says ``"score": null`` and the ratings (and ``python -m arena.ratings`` on the file)
    leave it out; it used to count as a draw, so a strong and a weak bot that both failed a few games
    were pulled together."""
    schedule = make_schedule("f", ["strong", "weak"], 12, 2, bytes(32))
    played = [SimulatedRunner(strengths={"strong": 200}).play(g) for g in schedule[:6]]
    broken = [forfeit_result(g, {b: Unplayed(Termination.BROKEN, "3 deaths") for b in g.sides}) for g in schedule[6:]]
    rows = [r.rating_row() for r in played + broken]
    assert [r["score"] for r in rows[6:]] == [None] * 6 and all(r.score_a is None for r in broken)
    with_forfeits = rate(games_from_mapping(rows), bootstrap=0)
    assert with_forfeits == rate(games_from_mapping(rows[:6]), bootstrap=0)
    assert with_forfeits["games"] == 6 and with_forfeits["ratings"]["strong"]["games"] == 6
    assert read_games([json.dumps(r) for r in rows]) == games_from_mapping(rows[:6])
