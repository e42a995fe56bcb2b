"""The SDK's bot interface and local mode (sdk/bot.py, sdk/local.py)."""

from __future__ import annotations

import json
import random

import pytest

from referee.dealing import cut_deck, deck_for
from referee.rules import (
    BEG,
    STAND,
    Card,
    Observation,
    Phase,
    Play,
    RuleSet,
    cut_for_dealer,
    parse_action,
)
from sample_bots.random_bot import RandomBot
from sdk import Bot, Context, IllegalChoice, decision_rng, load_bot, resolve_choice
from sdk.bot import EVENT_KINDS, DealEnd, Event, GameEnd, MatchEnd, MatchInfo
from sdk.local import main, play_local, seed_bytes


def test_resolve_choice_accepts_actions_notation_and_cards() -> None:
    legal = (Play(Card.parse("TH")), Play(Card.parse("2C")))
    assert resolve_choice(legal[0], legal) == legal[0]
    assert resolve_choice("th", legal) == legal[0]
    assert resolve_choice(Card.parse("2C"), legal) == legal[1]
    assert resolve_choice("beg", (BEG, STAND)) is BEG


@pytest.mark.parametrize("choice", ["AS", "stand", "nonsense", 7, None])
def test_resolve_choice_rejects_what_is_not_legal_and_names_the_legal_actions(choice: object) -> None:
    legal = (Play(Card.parse("TH")), Play(Card.parse("2C")))
    with pytest.raises(IllegalChoice) as err:
        resolve_choice(choice, legal)
    assert "legal: TH 2C" in str(err.value)
    assert err.value.choice == choice


def test_decision_rng_is_reproducible_and_differs_per_seat_and_decision() -> None:
    draws = [decision_rng("m1", 2, 7).random() for _ in range(2)]
    assert draws[0] == draws[1]
    others = {decision_rng("m1", 3, 7).random(), decision_rng("m1", 2, 8).random(),
              decision_rng("m2", 2, 7).random()}
    assert draws[0] not in others and len(others) == 3


def test_seed_bytes_forms() -> None:
    hexseed = "ab" * 32
    assert seed_bytes(hexseed) == bytes.fromhex(hexseed)
    assert seed_bytes(b"\x01" * 32) == b"\x01" * 32
    assert seed_bytes("1") == seed_bytes(1) != seed_bytes("2")
    assert len(seed_bytes(None)) == 32
    with pytest.raises(ValueError, match="32 bytes"):
        seed_bytes(b"short")


class Recorder(Bot):
    """Plays the first legal action and records every context and hook call."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []
        self.calls: list[tuple[str, object]] = []

    def act(self, ctx: Context) -> str:
        self.contexts.append(ctx)
        return str(ctx.legal[0])  # notation strings are accepted too

    def on_welcome(self, info: MatchInfo) -> None:
        self.calls.append(("welcome", info))

    def on_event(self, event: Event) -> None:
        self.calls.append(("event", event))

    def on_deal_end(self, deal: DealEnd) -> None:
        self.calls.append(("deal_end", deal))

    def on_game_end(self, game: GameEnd) -> None:
        self.calls.append(("game_end", game))

    def on_match_end(self, result: MatchEnd) -> None:
        self.calls.append(("match_end", result))


def test_events_report_every_action_and_running_scores() -> None:
    bot = Recorder()
    play_local([bot, RandomBot()], seed="events", games=1)
    events = [e for k, e in bot.calls if k == "event"]
    actions = [e.action for e in events if e.action is not None]  # type: ignore[attr-defined]
    mine = [c.decision for c in bot.contexts]
    assert len(actions) >= 2 * len(mine) - 2  # both seats act about equally often
    scored = [e for e in events if e.kind == "points_scored"]  # type: ignore[attr-defined]
    totals = [0, 0]
    for e in scored:
        totals[e.side] += e.value  # type: ignore[attr-defined]
        assert e.scores == tuple(totals)  # type: ignore[attr-defined]


def test_local_match_deals_from_the_seed_like_the_referee() -> None:
    bots = [Recorder() for _ in range(4)]
    key = seed_bytes("deals")
    play_local(bots, seed=key.hex(), games=1)
    dealer = cut_for_dealer(cut_deck(key, 1), 4)
    first = (dealer + 1) % 4
    ctx = bots[first].contexts[0]
    deck = deck_for(key, 1, 1)
    # Dealt in threes from the dealer's right (docs/rules.md, The deal 1): this seat's first six cards.
    assert ctx.observation.dealer == dealer
    assert ctx.hand == (*deck[0:3], *deck[12:15])
    assert ctx.observation.kicks[0] == deck[24]
    assert ctx.phase is Phase.BEG


def test_the_deal_passes_to_the_right_after_every_deal_and_into_the_next_game() -> None:
    """docs/rules.md, Match: the cut picks game 1's first dealer; after each deal the deal passes to the
    right (a pack that ran dry is dealt again by the same dealer, The deal 4), and a later game starts
    with the deal passing to the right of the previous game's last dealer."""
    bots = [Recorder() for _ in range(4)]
    key = seed_bytes("rotation")
    play_local(bots, seed=key.hex(), games=3)
    events = [e for k, e in bots[0].calls if k == "event"]
    dry = {(e.game, e.deal) for e in events if isinstance(e, Event) and e.kind == "deal_ended" and e.ran_dry}
    starts = [e for e in events if isinstance(e, Event) and e.kind in ("game_started", "deal_started")]
    assert [e.game for e in starts if e.kind == "game_started"] == [1, 2, 3]
    expected = cut_for_dealer(cut_deck(key, 1), 4)
    for e in starts:
        assert e.dealer == expected, e
        if e.kind == "deal_started" and (e.game, e.deal) not in dry:
            expected = (expected + 1) % 4


def test_bots_see_only_their_own_seat() -> None:
    bots = [Recorder() for _ in range(4)]
    play_local(bots, seed="views", games=1)
    for seat, bot in enumerate(bots):
        assert bot.contexts
        for ctx in bot.contexts:
            assert isinstance(ctx.observation, Observation)
            assert ctx.seat == ctx.observation.seat == ctx.observation.to_act == seat
            assert ctx.side == seat % 2
            assert ctx.legal == ctx.observation.legal and ctx.legal
            assert len(ctx.hand) == ctx.observation.hand_sizes[seat]
            assert not hasattr(ctx, "state")


def test_hooks_are_called_in_order_with_consistent_facts() -> None:
    bots = [Recorder(), Recorder()]
    result = play_local(bots, rules=RuleSet(players=2), seed="hooks", games=2)
    for seat, bot in enumerate(bots):
        kinds = [k for k, _ in bot.calls]
        assert kinds[0] == "welcome" and kinds[-1] == "match_end"
        assert kinds.count("game_end") == 2
        welcome = bot.calls[0][1]
        assert isinstance(welcome, MatchInfo) and welcome.seat == seat and welcome.games == 2
        events = [e for k, e in bot.calls if k == "event"]
        kinds_seen = {e.kind for e in events}  # type: ignore[attr-defined]
        assert {"game_started", "deal_started", "kick", "card_played", "trick_won", "points_scored",
                "deal_ended", "game_ended"} <= kinds_seen <= set(EVENT_KINDS)
        deal_ends = [d for k, d in bot.calls if k == "deal_end"]
        games = [g for k, g in bot.calls if k == "game_end"]
        # The points reported at each deal's end add up to each game's final scores.
        for g in games:
            assert isinstance(g, GameEnd)
            pts = [p for d in deal_ends if d.game == g.game for p in d.points]  # type: ignore[attr-defined]
            totals = (sum(p.value for p in pts if p.side == 0), sum(p.value for p in pts if p.side == 1))
            assert totals == g.scores
    assert bots[0].calls[-1][1] == result.match


def test_local_play_is_reproducible_from_the_seed() -> None:
    def run(seed: str) -> tuple[object, ...]:
        r = play_local([RandomBot() for _ in range(4)], seed=seed, games=3)
        return (r.seed, r.match, r.decisions)

    assert run("same") == run("same")


def test_a_duck_typed_bot_without_hooks_plays() -> None:
    class Bare:
        def act(self, ctx: Context) -> object:
            return ctx.legal[-1]

    result = play_local([Bare(), Bare()], seed="bare", games=1)
    assert result.bots == ("Bare", "Bare")
    assert result.match.games[0].winner in (0, 1)
    assert max(result.match.games[0].scores) >= 14


def test_an_illegal_choice_stops_local_play_with_a_clear_error() -> None:
    class Cheat(Bot):
        def act(self, ctx: Context) -> object:
            return "AS" if Play(Card.parse("AS")) not in ctx.legal else "2C"

    with pytest.raises(IllegalChoice, match="not a legal action"):
        play_local([Cheat(), Cheat()], seed="cheat")


def test_play_local_rejects_bad_tables() -> None:
    with pytest.raises(ValueError, match="4 players need 4 bots"):
        play_local([RandomBot(), RandomBot()], rules=RuleSet(players=4))
    bot = RandomBot()
    with pytest.raises(ValueError, match="its own bot object"):
        play_local([bot, bot])
    with pytest.raises(ValueError, match="at least 1"):
        play_local([RandomBot(), RandomBot()], games=0)


def test_load_bot() -> None:
    assert isinstance(load_bot("sample_bots.random_bot:RandomBot"), RandomBot)
    for bad in ("sample_bots.random_bot", "no.such.module:X", "sample_bots.random_bot:Nope", "random:Random"):
        with pytest.raises(ValueError):
            load_bot(bad)


def test_cli_prints_the_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sample_bots.heuristic:HeuristicBot", "sample_bots.random_bot:RandomBot",
                 "--games", "2", "--seed", "cli"]) == 0
    out = capsys.readouterr().out
    assert "seat 0 (side 0): heuristic" in out and "seat 3 (side 1): random" in out
    assert out.count("\ngame ") == 2 and "games won:" in out
    assert main(["sample_bots.random_bot:RandomBot", "--players", "2", "--seed", "cli", "--json",
                 "--rules", '{"target": 7}']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rules"]["players"] == 2 and data["rules"]["target"] == 7
    assert max(data["games"][0]["scores"]) >= 7 and data["seed"] == seed_bytes("cli").hex()


def test_context_helpers() -> None:
    obs_bot = Recorder()
    play_local([obs_bot, RandomBot()], seed="ctx")
    plays = [c for c in obs_bot.contexts if c.phase is Phase.PLAY]
    assert plays
    for ctx in plays:
        assert set(ctx.legal_cards) <= set(ctx.hand)
        assert ctx.trump is not None
    assert isinstance(plays[0].rng, random.Random)
    assert parse_action(str(plays[0].legal[0])) == plays[0].legal[0]


GOAWAY_CLIENT = """
import sys, time
import sdk  # as a bot or worker does, before grpc
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
ch = grpc.insecure_channel(sys.argv[1], options=[("grpc.keepalive_time_ms", 500),
                                                 ("grpc.keepalive_permit_without_calls", 1),
                                                 ("grpc.http2.max_pings_without_data", 0)])
watch = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest())
next(watch)
print("watching", flush=True)
try:
    next(watch)
except grpc.RpcError as e:
    print("ended", e.code().name, file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize("user_setting", [None, "INFO"])
def test_grpc_core_lines_below_warnings_are_quiet_unless_the_user_asks(user_setting: str | None) -> None:
    """issue 24, item 9: a bot process importing the SDK sets GRPC_VERBOSITY=ERROR unless it is set, so
    gRPC's INFO lines (``Got goaway``, here from a referee's too_many_pings GOAWAY) stay out of its
    output; errors still show, and a user's own setting wins."""
    import os
    import subprocess
    import sys
    from concurrent import futures
    from pathlib import Path

    import grpc
    from grpc_health.v1 import health, health_pb2_grpc

    from referee.server import SERVER_OPTIONS

    server = grpc.server(futures.ThreadPoolExecutor(2), options=SERVER_OPTIONS)
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    if user_setting:
        env["GRPC_VERBOSITY"] = user_setting
    root = Path(__file__).resolve().parents[1]
    client = subprocess.Popen([sys.executable, "-c", GOAWAY_CLIENT, f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**env, "PYTHONPATH": str(root)}, cwd=root)
    try:
        _, err = client.communicate(timeout=120)  # the server sends GOAWAY too_many_pings within seconds
    finally:
        server.stop(0)
    assert "ended UNAVAILABLE" in err and "too_many_pings" in err, err  # the ERROR line shows
    assert ("Got goaway" in err) == (user_setting == "INFO"), err


def test_local_summary_names_the_bot_of_each_winning_side(capsys: pytest.CaptureFixture[str]) -> None:
    """issue 24, item 9: ``python -m sdk.local`` says which bot won, not only ``side 0 wins``."""
    assert main(["sample_bots.heuristic:HeuristicBot", "sample_bots.random_bot:RandomBot", "--players", "2",
                 "--games", "3", "--seed", "7"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = {0: "side 0 (heuristic)", 1: "side 1 (random)"}
    games = [x for x in out if x.startswith("game ")]
    assert len(games) == 3 and all(any(x.endswith(f", {n} wins") for n in names.values()) for x in games), games
    last = out[-1]
    assert last.startswith(f"games won: {names[0]} ") and f", {names[1]} " in last, last
    assert last.endswith(("(heuristic) wins the match", "(random) wins the match", "a tie")), last


@pytest.mark.parametrize(("winner", "says"), [(0, "winner side 0"), (1, "winner side 1"), (None, "no winner")])
def test_sdk_run_says_who_won_or_that_no_side_did(winner: int | None, says: str) -> None:
    """``sdk.run``'s last line; a tie (a drawn match) read ``winner side None`` (fresh-author review)."""
    from sdk.run import summary_line

    games = (GameEnd(game=0, scores=(7, 5), winner=0), GameEnd(game=1, scores=(5, 7), winner=1))
    line = summary_line(MatchEnd(games=games, wins=(1, 1), winner=winner))
    assert line == f"match completed: games won 1-1, {says}, this seat normal"
