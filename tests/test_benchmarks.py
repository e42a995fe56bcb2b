"""The benchmark scripts run as a user runs them (``python benchmarks/X.py`` from anywhere) and
print their figures. Sizes are tiny: this checks that they work, not how fast anything is (speed is
measured by running the benchmarks themselves, not by timed tests)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(script: str, *args: str, cwd: Path) -> str:
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.slow
def test_engine_benchmark_prints_its_figures(tmp_path: Path) -> None:
    out = run("engine.py", "--seconds", "0.3", cwd=tmp_path)
    assert re.search(r"games/s=\d", out) and re.search(r"actions/s=[\d,]+", out), out


@pytest.mark.slow
def test_referee_benchmark_prints_its_figures(tmp_path: Path) -> None:
    out = run("referee.py", "--seconds", "0.3", "--matches", "2", "--games", "1", cwd=tmp_path)
    assert re.search(r"round trips/s", out) and re.search(r"ratio vs bare:\s+p50 [\d.]+\s+p99 [\d.]+", out), out


@pytest.mark.slow
def test_referee_benchmark_measures_a_baseline_checkout_in_the_same_rounds(tmp_path: Path) -> None:
    # This checkout stands in for the baseline: its referee runs as a third server from its own directory.
    out = run("referee.py", "--seconds", "0.3", "--matches", "2", "--games", "1", "--rounds", "2",
              "--baseline", str(ROOT), cwd=tmp_path)
    baseline = r"baseline ratio:\s+p50 [\d.]+\s+p99 [\d.]+\s+\(.*: [1-9]\d* samples in the same rounds\)"
    assert re.search(baseline, out), out


@pytest.mark.slow
def test_referee_shape_benchmark_prints_each_shape_against_the_bare_ping_pong(tmp_path: Path) -> None:
    out = run("referee_shape.py", "--seconds", "0.4", "--rounds", "1", cwd=tmp_path)
    assert re.search(r"DecisionRequest:\s+[1-9]\d+ bytes", out), out
    for shape in ("one stream, Pong \\(bare\\)", "one stream, DecisionRequest", "two streams, Pong",
                  "two streams, DecisionRequest"):
        assert re.search(shape + r":\s+p50 [\d.]+ ms\s+p99 [\d.]+ ms\s+ratio p50 [\d.]+\s+\([1-9]\d* round trips\)",
                         out), (shape, out)
    assert re.search(r"\(bare\):\s+p50 [\d.]+ ms\s+p99 [\d.]+ ms\s+ratio p50 1\.00", out), out


@pytest.mark.slow
def test_referee_work_benchmark_prints_its_figures(tmp_path: Path) -> None:
    out = run("referee_work.py", "--matches", "2", "--games", "1", "--profile", cwd=tmp_path)
    assert re.search(r"decisions:\s+[1-9]\d* in 2 matches", out), out
    assert re.search(r"submit \(CPU\):\s+p50 [\d.]+ us\s+mean [\d.]+ us", out), out
    assert re.search(r"all \(CPU\):\s+[\d.]+ us a decision", out) and "referee/match.py" in out, out


@pytest.mark.slow
def test_arena_benchmark_prints_its_figures(tmp_path: Path) -> None:
    # 16 games: the processes' CPU is read from /proc/PID/stat in clock ticks (10 ms), and with 2 games
    # the workers' whole share could fall between two ticks and read 0 (it did, in a landing's CI).
    out = run("arena.py", "--bots", "2", "--games-per-pairing", "16", "--players", "2", "--per-game-games", "2",
              cwd=tmp_path)
    figures = json.loads(out)
    assert figures["games"] == 16 and figures["played_normally"] == 16 and figures["per_game_games"] == 2, out
    for key in ("games_per_s", "referee_games_per_s", "ratio", "per_game_games_per_s"):
        assert figures[key] > 0, out
    assert abs(figures["ratio"] - figures["games_per_s"] / figures["referee_games_per_s"]) < 0.01, out
    assert set(figures["lobby_phases_ms"]) == {"create", "play", "record", "store", "wait"}, out
    cpu = figures["cpu_ms_per_game"]  # where the CPU goes: every process measured did some work
    assert set(cpu["referee_alone"]) == {"referee", "seats"} and set(cpu["lobby"]) == {"arena", "workers"}, out
    assert all(v > 0 for side in cpu.values() for v in side.values()), out


@pytest.mark.slow
def test_ratings_benchmark_prints_its_figures(tmp_path: Path) -> None:
    out = run(
        "ratings.py", "--bots", "4", "12", "--games-per-bot", "40", "--bootstrap", "50", "--repeat", "1", cwd=tmp_path
    )
    assert re.search(r"bots=12\s+games=480\s.*full=[\d.]+s .*games/s=[\d,]+", out), out


@pytest.mark.slow
def test_soak_benchmark_prints_growth_per_match(tmp_path: Path) -> None:
    out = run("soak.py", "--matches", "3", "--warmup", "1", "--keep", "1", cwd=tmp_path)
    assert re.search(r"growth per match: keep all -?[\d.]+ KiB, retention -?[\d.]+ KiB", out), out
    assert out.count("0 with a seat short of MatchEnd") == 2, out


@pytest.mark.slow
def test_serve_publish_benchmark_prints_both_leagues_and_their_ratio(tmp_path: Path) -> None:
    out = run("serve_publish.py", "--bots", "4", "--games-per-pairing", "4", "--play", "6", "--game-ms", "1",
              cwd=tmp_path)
    assert re.search(r"every game\s+games=24\s+publications=6\s", out), out  # one after each of the 6 games
    assert re.search(r"spaced\s+games=24\s+publications=\d+\s", out), out
    assert re.search(r"spaced/every = [\d.]+", out), out


@pytest.mark.slow
def test_publish_benchmark_prints_both_ways_and_finds_the_same_files_and_board(tmp_path: Path) -> None:
    out = run("publish.py", "--bots", "4", "--games-per-pairing", "4", "--play", "4", cwd=tmp_path)
    assert "league: 4 bots, 20 games stored, then 4 more" in out, out
    for kind in ("live", "final"):
        assert re.search(rf"{kind}\s+recomputed: mean [\d.]+ s .* kept: mean [\d.]+ s .* recomputed/kept = [\d.]+"
                         r"\s+same files: yes", out), out
    assert re.search(r"web\s+recomputed: mean [\d.]+ s .* kept: mean [\d.]+ s .* recomputed/kept = [\d.]+"
                     r"\s+unchanged: mean [\d.]+ s\s+same page: yes", out), out


@pytest.mark.slow
def test_load_benchmark_prints_dispatch_memory_and_drops(tmp_path: Path) -> None:
    out = run("load.py", "--matches", "4", "--workers", "2", cwd=tmp_path)
    assert re.search(r"dispatch loaded:\s+p50 [\d.]+ ms\s+p99 [\d.]+ ms", out), out
    assert re.search(r"referee RSS:\s+before [\d.]+ MiB\s+peak [\d.]+ MiB", out), out
    assert "0 seats without MatchEnd, 0 matches not completed, 0 stream errors  (none)" in out, out


@pytest.mark.slow
def test_ladder_benchmark_prints_its_table(tmp_path: Path) -> None:
    args = ["--entrants", "12", "--pairs-per-entrant", "2", "--seeds", "1", "2", "--scale", "30", "--reach-share", "1"]
    out = run("ladder.py", *args, cwd=tmp_path)
    figures = json.loads(out)
    schedules = {"ladder", "round_robin", "random", "openskill", "round_robin_full"}
    assert figures["budget_pairs"] == 24 and figures["seeds"] == [1, 2], out
    for run_ in figures["runs"]:
        assert schedules <= set(run_), out
        for kind in schedules - {"round_robin_full"}:
            assert run_[kind]["games"] == 48, (kind, out)  # the same budget for every schedule
        assert run_["round_robin_full"]["games"] == 2 * 66, out
        for kind in schedules:
            assert -1 <= run_[kind]["spearman"] <= 1 and 0 <= run_[kind]["top10_precision"] <= 1, out
        reached = run_["ladder_games_to_full_rr_spearman"]
        assert reached is None or 0 < reached <= 2 * 66, out
    assert set(figures["summary"]["ladder"]) == {"games", "spearman", "top10_precision"}, out
    assert set(figures["floors"]) == {
        "ladder_spearman_at_least_0.90",
        "ladder_above_random_every_seed",
        "ladder_reaches_full_rr_within_25pct",
    }, out
    scale = figures["scale"]
    assert scale["entrants"] == 30 and scale["choose_ms"] > 0 and scale["fit_after_game_ms"] > 0, out
    assert scale["live_publication_ms"] > 0 and scale["fit_over_live"] > 0, out


@pytest.mark.slow
def test_ladder_bound_study_prints_each_design_per_seed(tmp_path: Path) -> None:
    args = ["--entrants", "12", "--seeds", "1", "--reach-share", "1", "--windows", "2", "--batch", "2"]
    figures = json.loads(run("ladder_bound.py", *args, cwd=tmp_path))
    assert figures["entrants"] == 12 and [r["seed"] for r in figures["runs"]] == [1], figures
    (seed,) = figures["runs"]
    assert seed["round_robin_full"]["games"] == 2 * 66 and seed["round_robin_F_pred"] > 0, seed
    for name in ("greedy_spearman", "greedy_kendall", "window_2"):
        design = seed[name]
        assert design["games"] is None or 0 < design["games"] <= 2 * 66, (name, seed)
        assert design["share"] is None or 0 < design["share"] <= 1, (name, seed)
    for name in ("greedy_spearman", "greedy_kendall", "window_2", "ladder"):
        assert -1 <= seed[name]["expected_spearman_at_25pct"] <= 1 and seed[name]["F_pred_at_25pct"] >= 0, seed
        reach = seed[name]["expected_reach_share"]
        assert reach is None or 0 < reach <= 1, (name, seed)


def _load_benchmark(name: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A benchmark script as a module (they are scripts, not a package), with the benchmarks' folder
    on ``sys.path`` for this test, as when it runs as a script (its shared modules: ``_pairs``)."""
    import importlib.util

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class _Sampled:
    """One deal a seeing bot valued its actions on, beside the true deal of that moment."""

    phase: Any
    seat: int
    deal: Any
    truth: Any


def _play_seeing(monkeypatch: pytest.MonkeyPatch, sights: list[str], seed: str) -> tuple[Any, list[_Sampled]]:
    """One local game of ``strength_ceiling.SeeingSearchBot`` at 2 ms, a seat for each of ``sights``
    (its ``--sees`` name): the module, and every deal the bots sampled with the truth beside it."""
    from sdk.local_table import play_local

    ceiling = _load_benchmark("strength_ceiling", monkeypatch)
    sampled: list[_Sampled] = []

    class Spy(ceiling.SeeingSearchBot):  # type: ignore[misc, name-defined]
        def act(self, ctx):  # type: ignore[no-untyped-def]
            self.phase, self.seat = ctx.phase, ctx.seat
            return super().act(ctx)

        def _sample(self, know, rng):  # type: ignore[no-untyped-def]
            deal = super()._sample(know, rng)
            sampled.append(_Sampled(self.phase, self.seat, deal, self.oracle.true_deal()))
            return deal

    oracle = ceiling.Oracle()
    with ceiling.watching(oracle):
        play_local([Spy(oracle, ceiling.SEES[sight], ms=2) for sight in sights], seed=seed)
    assert oracle.state is None
    with pytest.raises(RuntimeError, match="inside watching"):
        oracle.true_deal()
    return ceiling, sampled


def _before_play(s: _Sampled) -> bool:
    from referee.rules import Phase

    return s.phase in (Phase.BEG, Phase.DEALER)


def _in_play(s: _Sampled) -> bool:
    from referee.rules import Phase

    return s.phase is Phase.PLAY


def test_the_seeing_search_bot_values_the_true_deal_only_in_its_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    """strength_ceiling's oracle hands the bot the referee's real hands and stock in the phases it sees,
    and the sampled deals (never the truth for a whole game) in the others; the local table's own
    ``observe`` is back in place afterwards."""
    import sdk.local_table as local_table

    observe = local_table.observe
    _, sampled = _play_seeing(monkeypatch, ["play", "pre"], "ceiling")
    assert local_table.observe is observe
    in_play = [s.deal == s.truth for s in sampled if _in_play(s)]
    before = [s.deal == s.truth for s in sampled if _before_play(s)]
    assert in_play and before, sampled
    # Seat 0 sees the deal in play, seat 1 before it; each seat's other phase is sampled.
    assert any(in_play) and not all(in_play), sampled
    assert any(before) and not all(before), sampled


def test_the_partner_seeing_bot_samples_around_its_partners_true_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--sees partner``: in play every sampled deal holds the partner's true hand, while the opponents'
    hands are still sampled (not always the truth); before play nothing is seen."""
    _, sampled = _play_seeing(monkeypatch, ["partner"] * 4, "partner")

    def partner(s: _Sampled) -> bool:
        p = (s.seat + 2) % 4
        return bool(s.deal.hands[p] == s.truth.hands[p])

    def opponents(s: _Sampled) -> bool:
        return all(s.deal.hands[(s.seat + k) % 4] == s.truth.hands[(s.seat + k) % 4] for k in (1, 3))

    in_play = [s for s in sampled if _in_play(s)]
    before = [s for s in sampled if _before_play(s)]
    assert in_play and before, sampled
    assert all(partner(s) for s in in_play), sampled
    assert not all(opponents(s) for s in in_play), sampled
    assert not all(partner(s) for s in before), sampled


def test_the_hands_seeing_bot_knows_every_hand_before_play_but_not_the_packs_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--sees hands``: before play every sampled deal holds every seat's true hand and the stock's true
    cards, in an order that is not always the pack's (what a run deals stays unknown); in play the
    deals are sampled as usual."""
    _, sampled = _play_seeing(monkeypatch, ["hands"] * 4, "hands")
    before = [s for s in sampled if _before_play(s)]
    in_play = [s for s in sampled if _in_play(s)]
    assert before and in_play, sampled
    assert all(s.deal.hands == s.truth.hands and sorted(s.deal.stock) == sorted(s.truth.stock) for s in before)
    assert not all(s.deal.stock == s.truth.stock for s in before), before
    assert not all(s.deal.hands == s.truth.hands for s in in_play), in_play


def within_interval(row: dict[str, Any]) -> bool:
    """The row's ``elo`` lies in its 95% interval (an end ``None`` is unbounded: ``sdk.spar.elo_interval``)."""
    low, high = row["ci_low"], row["ci_high"]
    return (low is None or low <= row["elo"]) and (high is None or row["elo"] <= high)


@pytest.mark.slow
def test_strength_ceiling_prints_a_row_per_phase_seen(tmp_path: Path) -> None:
    out = run("strength_ceiling.py", "--pairs", "1", "--ms", "2", "--players", "2", "--sees", "none", "all",
              cwd=tmp_path)
    figures = json.loads(out)
    assert [r["sees"] for r in figures["rows"]] == ["none", "all"], out
    for r in figures["rows"]:
        assert r["pairs"] == 1 and len(r["pair_scores"]) == 1 and 0 <= r["score"] <= 1, out
        assert within_interval(r), out


@pytest.mark.slow
def test_search_trials_print_a_row_per_trial_and_a_zero_margin_changes_nothing(tmp_path: Path) -> None:
    trials = ["none", "ismcts", "beg-margin:0", "give-margin:0", "ties:0", "trick", "signal", "view", "exact:12"]
    out = run("search_trials.py", "--trial", *trials, "--pairs", "2", "--ms", "3", "--players", "2", cwd=tmp_path)
    rows = {r["trial"]: r for r in json.loads(out)["rows"]}
    assert list(rows) == trials, out
    for r in rows.values():
        assert r["pairs"] == 2 and len(r["pair_scores"]) == 2 and within_interval(r), out
        # Where the points came from. High is scored in every deal played out (at most once a deal: not
        # in one whose pack ran dry, nor in the deal a kick ends the game in); one stand or beg a deal,
        # but for a deal a game ends in at its first kick (at most one of each of the row's 4 games).
        high = sum(r["points_per_deal"]["high"])
        assert r["deals"] >= 4 and 0.5 < high <= 1.0, out
        assert set(r["points_per_deal"]) == {"kick", "one", "high", "low", "jack", "hang_jack", "game", "all"}, out
        assert set(r["choices"]) == {"begged", "stood", "gave_one", "ran_pack"}, out
        first_choices = sum(sum(r["choices"][c]) for c in ("stood", "begged"))
        assert r["deals"] - 4 <= first_choices <= r["deals"], out
    # A margin of 0 is the bot's own rule: the same choices, so the same games.
    assert rows["beg-margin:0"]["pair_scores"] == rows["give-margin:0"]["pair_scores"] == rows["none"]["pair_scores"]
    # Head to head every deal is searched exactly: the trick trial is the bot itself there; nor is there
    # a partner to signal to, and the view and exact trials change only a table of four.
    assert rows["trick"]["pair_scores"] == rows["signal"]["pair_scores"] == rows["none"]["pair_scores"]
    assert rows["view"]["pair_scores"] == rows["exact:12"]["pair_scores"] == rows["none"]["pair_scores"]
    assert all(0 <= r["decision_cpu_ms_p50"] <= r["decision_cpu_ms_p99"] for r in rows.values()), out


def test_the_trick_trial_searches_the_trick_in_progress_then_plays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """``trick_search`` is the minimax, every hand open, over the cards left in the trick in progress with a
    playout's value at its end: it equals a plain minimax over every legal card (no pruning, no merged
    cards) on random 4-player positions mid-trick, and a playout's value when the trick is complete."""
    import random

    from referee.rules import Phase, RuleSet, apply, legal_actions
    from sample_bots.search import bot as search
    from sample_bots.search.fast import Budget, DealValue, cards_in, dealt_facts, playout, position_of_state
    from sample_bots.search.reference import random_play_state

    trials = _load_benchmark("search_trials", monkeypatch)

    def plain(pos: Any, value: Any) -> float:
        if not pos.trick:
            return playout(pos.copy(), value, Budget(10**9))
        results = []
        for card in cards_in(pos.legal()):
            undo = pos.play(card)
            results.append(plain(pos, value))
            pos.unplay(card, undo)
        return max(results) if (pos.to_act & 1) == value.side else min(results)

    checked = 0
    for k in range(40):
        state = random_play_state(k, RuleSet(players=4, target=1000), 24)
        rng = random.Random(k)
        for _ in range(1 + k % 3 + 4 * rng.randrange(3)):  # into a trick, perhaps a trick or two later
            state = apply(state, rng.choice(legal_actions(state)))
        if state.phase is not Phase.PLAY:
            continue
        pos, dealt = position_of_state(state)
        if not pos.trick:
            continue
        high, low, jack_side, _ = dealt_facts(dealt, pos.trump)
        value = DealValue.build(k % 2, (k % 7, k % 5), 14, high, low, jack_side, 3)
        assert trials.trick_search(pos.copy(), value, Budget(10**9)) == plain(pos.copy(), value)
        checked += 1
    assert checked >= 15
    assert search.EXACT_CARDS_FOUR == 16  # what the trial's "too large to search exactly" means


def test_the_ties_trial_plays_the_heuristic_card_within_its_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ties:EPS``: with a margin wider than any value difference (1.0) every card is the heuristic
    bot's; the choices before play stay the search's own."""
    from referee.rules import Phase, Play
    from sample_bots.heuristic import HeuristicBot
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    compared = 0

    class Check(trials.TieBot):  # type: ignore[misc, name-defined]
        def act(self, ctx):  # type: ignore[no-untyped-def]
            nonlocal compared
            action = super().act(ctx)
            if ctx.phase is Phase.PLAY and isinstance(action, Play):
                assert action == HeuristicBot().act(ctx)
                compared += 1
            return action

    play_local([Check(2, 1.0), HeuristicBot(), Check(2, 1.0), HeuristicBot()], seed="ties")
    assert compared > 10


def test_the_exact_trial_moves_the_exact_search_for_its_own_decisions_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``exact:N``: while the trial's bot decides, the exact search at four starts at ``N`` cards (``exact:0``
    never searches exactly), the bot's own threshold is back afterwards, and ``exact:16`` is the bot itself."""
    from sample_bots.heuristic import HeuristicBot
    from sample_bots.search import SearchBot
    from sample_bots.search import bot as search
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    thresholds: list[int] = []
    solved: list[int] = []
    real_small, real_solve = search._small, search.solve

    def small(pos):  # type: ignore[no-untyped-def]
        thresholds.append(search.EXACT_CARDS_FOUR)
        return real_small(pos)

    def solve(*args, **kwargs):  # type: ignore[no-untyped-def]
        solved.append(1)
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(search, "_small", small)
    monkeypatch.setattr(search, "solve", solve)
    play_local([trials.ExactBot(2, 12), HeuristicBot(), trials.ExactBot(2, 12), HeuristicBot()], seed="exact")
    assert thresholds and set(thresholds) == {12} and solved
    assert search.EXACT_CARDS_FOUR == 16
    solved.clear()
    play_local([trials.ExactBot(2, 0), HeuristicBot(), trials.ExactBot(2, 0), HeuristicBot()], seed="exact")
    assert not solved
    same = play_local([trials.ExactBot(2, 16), HeuristicBot(), trials.ExactBot(2, 16), HeuristicBot()], seed="exact")
    bot = play_local([SearchBot(ms=2), HeuristicBot(), SearchBot(ms=2), HeuristicBot()], seed="exact")
    assert (same.match, same.decisions) == (bot.match, bot.decisions)


def test_the_signal_trial_says_its_fact_and_reads_its_partners(monkeypatch: pytest.MonkeyPatch) -> None:
    """``signal:EPS``: with a margin wider than any value difference (1.0) the signaller says its fact
    with every card it can, so the true deal agrees with every signal its partner has read (weight 1)
    while sampled deals do not always (the reading tells deals apart); a card's fact is the hand's
    before it is played, the cards played since put back."""
    import random

    from referee.rules import Phase
    from sample_bots.heuristic import HeuristicBot
    from sample_bots.search.infer import knowledge, sample_deal
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    ceiling = _load_benchmark("strength_ceiling", monkeypatch)
    oracle = ceiling.Oracle()
    read = contradicted = 0

    class Check(trials.SignalBot):  # type: ignore[misc, name-defined]
        def act(self, ctx):  # type: ignore[no-untyped-def]
            nonlocal read, contradicted
            obs = ctx.observation
            if ctx.phase is Phase.PLAY:
                know = knowledge(obs)
                if trials.signal_weight(know, obs, oracle.true_deal()) != 1.0:
                    contradicted += 1
                weights = [trials.signal_weight(know, obs, sample_deal(know, random.Random(i))) for i in range(8)]
                read += any(w < 1.0 for w in weights)
            return super().act(ctx)

    bots = [Check(2, 1.0), HeuristicBot(), Check(2, 1.0), HeuristicBot()]
    with ceiling.watching(oracle):
        play_local(bots, seed="signal")
    assert contradicted == 0 and read > 10
    assert bots[0].could > 10 and bots[0].said == bots[0].could and bots[2].said == bots[2].could


def test_the_view_trial_lets_each_seat_choose_from_what_it_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    """``view:K``: in 4-player games each seat modelled in the trick in progress chooses a card legal for it,
    on deals that keep its own hand and every hand's size and deal the other seats and the stock exactly
    the cards it cannot see (the sampled deal's other hands and stock); the bot's budget counts the work."""
    from sample_bots.heuristic import HeuristicBot
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    deals = choices = 0
    real_deal, real_choice = trials.sample_deal, trials.seen_choice

    def checked_deal(view, rng):  # type: ignore[no-untyped-def]
        nonlocal deals
        deal = real_deal(view, rng)
        assert deal.hands[view.seat] == view.hands[view.seat]
        assert tuple(bin(h).count("1") for h in deal.hands) == view.sizes
        others = seen = 0
        for x in range(view.players):
            if x != view.seat:
                others |= deal.hands[x]
                seen |= view.hands[x]
        assert others | sum(1 << c for c in deal.stock) == view.unseen | seen
        assert not view.unseen & view.hands[view.seat]
        deals += 1
        return deal

    def checked_choice(s, deal, pos, *rest):  # type: ignore[no-untyped-def]
        nonlocal choices
        used = s.budget.used
        card = real_choice(s, deal, pos, *rest)
        assert pos.legal() >> card & 1 and s.budget.used >= used
        choices += 1
        return card

    monkeypatch.setattr(trials, "sample_deal", checked_deal)
    monkeypatch.setattr(trials, "seen_choice", checked_choice)
    play_local([trials.ViewBot(5, 2), HeuristicBot(), trials.ViewBot(5, 2), HeuristicBot()], seed="view")
    assert deals > 50 and choices > 50


def test_search_trials_name_an_unknown_trial_in_one_line(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "search_trials.py"), "--trial", "deeper"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown trial 'deeper'" in r.stderr.strip().splitlines()[-1], r.stderr


def test_choice_outcomes_record_what_the_game_then_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each point's outcome of the chosen action is the game's own value at that deal's end (the
    continuation replays the game exactly), the game is the local table's game on the same seed, and
    the other actions' outcomes are continuations of their own."""
    import hashlib

    from sample_bots.heuristic import HeuristicBot
    from sample_bots.search import SearchBot
    from sdk.local_table import play_local

    outcomes = _load_benchmark("choice_outcomes", monkeypatch)
    made: list[object] = []
    game = outcomes.play_game(1, ms=3, play_share=0.5, seed="t", sink=made.append)
    assert made == game.points and {p.phase for p in game.points} == {"beg", "dealer", "play"}
    for p in game.points:
        assert p.outcomes[p.chosen] == game.deal_values[p.deal - 1], p
        assert p.chosen == outcomes.bot_choice(p) and 0 <= p.heuristic < len(p.actions), p
        assert len(p.means) == len(p.outcomes) == len(p.actions) >= 2, p
        assert p.actions == {"beg": ["stand", "beg"], "dealer": ["give", "run"]}.get(p.phase, p.actions), p
        assert all(0.0 <= v <= 1.0 for v in p.outcomes), p
    assert any(len(set(p.outcomes)) > 1 for p in game.points)  # some choices changed what the deal scored
    # The same game on the local table (game 1: the search bot is side 1) ends the same way.
    local = play_local([HeuristicBot(), SearchBot(ms=3), HeuristicBot(), SearchBot(ms=3)],
                       seed=hashlib.sha256(b"t/1").digest())
    assert game.scores == local.match.games[0].scores and local.match.games[0].winner is not None
    assert game.deal_values[-1] == (1.0 if local.match.games[0].winner == 1 else 0.0)


def test_choice_outcomes_compare_ways_of_choosing_on_the_same_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """Explicit points: each way of choosing gains what its changed choices' outcomes say."""
    outcomes = _load_benchmark("choice_outcomes", monkeypatch)

    def point(phase: str, means: list[float], outs: list[float], chosen: int, heuristic: int):  # type: ignore[no-untyped-def]
        actions = {"beg": ["stand", "beg"], "dealer": ["give", "run"]}.get(phase, ["AS", "2S", "KH"])
        return outcomes.Point(0, 1, 1, phase, (0, 0), actions, means, outs, chosen, heuristic)

    points = [
        point("beg", [0.5, 0.58], [0.6, 0.5], chosen=1, heuristic=1),  # beg by 0.08: a margin of 0.1 stands
        point("beg", [0.5, 0.45], [0.2, 0.3], chosen=0, heuristic=1),
        point("dealer", [0.4, 0.52], [0.3, 0.3], chosen=1, heuristic=0),  # run by 0.12
        point("play", [0.2, 0.2, 0.1], [0.5, 0.4, 0.9], chosen=0, heuristic=1),  # the heuristic card ties
    ]
    assert [outcomes.bot_choice(p) for p in points] == [p.chosen for p in points]
    report = outcomes.analyse(points, ["bot", "heuristic", "margin:0.1", "ties:0", "ties:0.01"])
    beg, dealer, play = (report[k]["policies"] for k in ("beg", "dealer", "play"))
    assert beg["bot"] == {"gain": 0.0, "se": 0.0, "changed": 0}
    assert beg["margin:0.1"] == {"gain": 0.05, "se": 0.05, "changed": 1}  # gains 0.1 and 0
    assert beg["heuristic"] == {"gain": 0.05, "se": 0.05, "changed": 1}
    assert dealer["margin:0.1"]["changed"] == 0 and dealer["heuristic"] == {"gain": 0.0, "se": 0.0, "changed": 1}
    assert dealer["ties:0.01"]["changed"] == 0  # the heuristic bot's answer is 0.12 worse to the search
    assert play["ties:0"] == play["ties:0.01"] == play["heuristic"] == {"gain": -0.1, "se": 0.0, "changed": 1}
    assert play["margin:0.1"]["changed"] == 0 and "calibration" not in report["play"]
    # Hindsight: the beg points' best outcomes beat the chosen by 0.1 each; no other dealer answer scored
    # more; the card 0.9 beat the chosen 0.5.
    assert report["beg"]["room"] == {"gain": 0.1, "share": 1.0}
    assert report["dealer"]["room"] == {"gain": 0.0, "share": 0.0}
    assert report["play"]["room"] == {"gain": 0.4, "share": 1.0}
    # Calibration: outcomes' differences exactly 2 d - 0.1 give that line and the bins' means.
    line = [point("beg", [0.5, 0.5 + d], [0.5, 0.5 + 2 * d - 0.1], chosen=int(d > 0), heuristic=0)
            for d in (-0.1, 0.0, 0.1)]
    cal = outcomes.calibration(line)
    assert cal["slope"] == pytest.approx(2.0) and cal["intercept"] == pytest.approx(-0.1)
    assert cal["bins"] == [1, 1, 1] and cal["D"] == pytest.approx([-0.3, -0.1, 0.1])
    late = [outcomes.Point(0, 9, 1, "beg", (outcomes.LATE, 3), ["stand", "beg"], [0.5, 0.5 + d], [0.5, 0.4 + d],
                           int(d > 0), 0) for d in (-0.1, 0.1)]
    split = outcomes.analyse(line + late, ["bot"])["beg"]
    assert split["calibration"]["bins"] == [2, 1, 1, 1]  # all five points, in BINS groups
    assert split["calibration_late"]["slope"] == pytest.approx(1.0)  # only the two late ones: D = d - 0.1
    assert split["calibration_late"]["intercept"] == pytest.approx(-0.1)
    assert "calibration_late" not in outcomes.analyse(line, ["bot"])["beg"]
    for bad in ("deeper", "margin:x", "ties:"):
        with pytest.raises(ValueError, match="unknown way of choosing"):
            outcomes.policy(bad)


@pytest.mark.slow
def test_choice_outcomes_read_back_what_they_wrote(tmp_path: Path) -> None:
    out = run("choice_outcomes.py", "--games", "1", "--ms", "2", "--play-share", "0.2", "--out", "p.jsonl",
              cwd=tmp_path)
    figures = json.loads(out)
    assert figures["points"] == len((tmp_path / "p.jsonl").read_text().splitlines()) > 0, out
    assert json.loads(run("choice_outcomes.py", "--read", "p.jsonl", cwd=tmp_path)) == figures
    (tmp_path / "bad.jsonl").write_text('{"game": 0}\n')
    good = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    for n, (change, why) in enumerate((  # each a point the analysis would have crashed on or misread
            ({"chosen": 5}, "chosen must index the actions"), ({"chosen": -1}, "chosen must be whole numbers"),
            ({"chosen": 1.0}, "chosen must be whole"), ({"heuristic": True}, "heuristic must be whole"),
            ({"means": [0.5]}, "means must be"), ({"means": None}, "means must be"),
            ({"outcomes": ["x"] * len(good["actions"])}, "outcomes must be"),
            ({"outcomes": [2.0] * len(good["actions"])}, "each within 0..1"),
            ({"phase": "kick"}, "phase must be one of beg, dealer, play"), ({"scores": 3}, "scores must be"),
            ({"actions": "AS"}, "actions must be"), ({"extra": 1}, "unknown field extra"))):
        (tmp_path / f"bad{n}.jsonl").write_text(json.dumps({**good, **change}) + "\n")
        said = run_failing(tmp_path, "--read", f"bad{n}.jsonl")
        assert f"bad{n}.jsonl:1: not a point (" in said and why in said, said
    (tmp_path / "nan.jsonl").write_text(json.dumps({**good, "means": [float("nan")] * len(good["actions"])}) + "\n")
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "latin.jsonl").write_bytes(b"\xff\xfe")
    for args, said in ((["--games", "0"], "--games must be at least 1, not 0"),
                       (["--play-share", "2"], "--play-share must be within 0..1, not 2.0"),
                       (["--continue-ms", "0"], "--continue-ms must be at least 1, not 0"),
                       (["--read", "bad.jsonl"], "bad.jsonl:1: not a point (no deal, decision"),
                       (["--read", "nan.jsonl"], "nan.jsonl:1: not a point (means must be"),
                       (["--read", "empty.jsonl"], "no points in empty.jsonl"),
                       (["--read", "latin.jsonl"], "latin.jsonl: not a file of points (not UTF-8 text"),
                       (["--read", "p.jsonl", "--out", "q.jsonl"], "--out does not apply"),
                       (["--policies", "margin:nan"], "unknown way of choosing 'margin:nan'"),
                       (["--policies", "ties:inf"], "unknown way of choosing 'ties:inf'"),
                       (["--policies", "best"], "unknown way of choosing 'best'")):
        assert said in run_failing(tmp_path, *args)


def run_failing(cwd: Path, *args: str) -> str:
    """Run choice_outcomes.py, which must fail as a usage error: its one-line message."""
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "choice_outcomes.py"), *args],
                       cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    return r.stderr.strip().splitlines()[-1]


@dataclass
class Seen:
    """What a :func:`recorded` bot saw: the exact search's threshold at four when it valued the choices before
    play, whether each card it played with a choice was the heuristic bot's, and each beg or stand."""

    thresholds: set[int] = field(default_factory=set)
    heuristic: list[bool] = field(default_factory=list)
    begs: list[object] = field(default_factory=list)


def recorded(base: type, seen: Seen) -> type:
    """``base`` (a search bot class) told that the choices before play are worth ``[0.5, 0.52, 0.52]`` (a beg
    0.02 better than standing on both answers), recording into ``seen``."""
    from referee.rules import Phase, Play
    from sample_bots.heuristic import HeuristicBot
    from sample_bots.search import bot as search

    class Recorded(base):  # type: ignore[valid-type, misc]
        def _before_play_means(self, s, rng):  # type: ignore[no-untyped-def]
            seen.thresholds.add(search.EXACT_CARDS_FOUR)
            return [0.5, 0.52, 0.52]

        def act(self, ctx):  # type: ignore[no-untyped-def]
            action = super().act(ctx)
            if ctx.phase is Phase.PLAY and isinstance(action, Play) and len(ctx.legal) > 1:
                seen.heuristic.append(action == HeuristicBot().act(ctx))
            if ctx.phase is Phase.BEG:
                seen.begs.append(action)
            return action

    return Recorded


def test_the_stack_trial_puts_three_trials_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """``stack``: while it decides, the exact search at four starts at its ``cards`` (16 by default, the bot's
    own since the thirty-first session; here 12, and the bot's own threshold is back afterwards); with a
    margin wider than any value difference (``stack:1``) every card with a choice is the
    heuristic bot's, and ``stack:-1`` never plays it for that reason; a beg 0.02 better than standing on both
    answers (under the trial's 0.06) stands."""
    from referee.rules import STAND, Play
    from sample_bots.heuristic import HeuristicBot
    from sample_bots.search import bot as search
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    seen = Seen()
    thresholds, heuristic, begs = seen.thresholds, seen.heuristic, seen.begs
    Check = recorded(trials.StackBot, seen)

    assert trials.make("stack", 2)().eps == 0.01
    assert trials.make("stack", 2)().cards == 16
    play_local([Check(2, cards=12, eps=1.0), HeuristicBot(), Check(2, cards=12, eps=1.0), HeuristicBot()], seed="stack")
    assert thresholds == {12} and search.EXACT_CARDS_FOUR == 16
    assert heuristic and all(heuristic) and begs and set(begs) == {STAND}
    heuristic.clear()

    class Means(Check):
        def _card_means(self, s, legal, rng):  # type: ignore[no-untyped-def]
            moves = [a for a in legal if isinstance(a, Play)]
            theirs = HeuristicBot().act(self.ctx)  # the decision's context, as TieBot keeps it
            best = next((i for i, m in enumerate(moves) if m != theirs), 0)  # the best mean: never theirs
            return moves, [1.0 if i == best else 0.999 for i in range(len(moves))]

    play_local([Means(2, eps=-1.0), HeuristicBot(), Means(2, eps=-1.0), HeuristicBot()], seed="stack")
    assert heuristic and not any(heuristic)


def test_the_plain_trial_is_the_bot_before_the_prior(monkeypatch: pytest.MonkeyPatch) -> None:
    """``plain``, the bot until the thirty-first session: while it decides, the exact search at four starts at
    20 cards (the bot's own 16 is back afterwards); a beg 0.02 better than standing on both answers begs (the
    bot's ``BEG_MARGIN`` of 0.06 at four stands); the card is the best mean, the heuristic bot's card only when
    it is that."""
    from referee.rules import BEG, Play
    from sample_bots.heuristic import HeuristicBot
    from sample_bots.search import bot as search
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    assert isinstance(trials.make("plain", 2)(), trials.PlainBot)
    seen = Seen()

    class Check(recorded(trials.PlainBot, seen)):  # type: ignore[misc]
        def _card_means(self, s, legal, rng, rows=None):  # type: ignore[no-untyped-def]
            moves = [a for a in legal if isinstance(a, Play)]
            theirs = HeuristicBot().act(s.ctx)
            best = next((i for i, m in enumerate(moves) if m != theirs), 0)  # the best mean: never theirs
            return moves, [1.0 if i == best else 0.999 for i in range(len(moves))]

    play_local([Check(2), HeuristicBot(), Check(2), HeuristicBot()], seed="plain")
    assert seen.thresholds == {20} and search.EXACT_CARDS_FOUR == 16
    assert seen.heuristic and not any(seen.heuristic) and seen.begs and set(seen.begs) == {BEG}



def test_the_twins_trial_samples_on_while_the_heuristic_card_has_a_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    """``twins``: a card's twin is another card near the best that every deal valued exactly alike (rows: deals,
    columns ``AS 2S KH``); the trial's bot plays whole games at both table sizes."""
    from referee.rules import RuleSet
    from sample_bots.heuristic import HeuristicBot
    from sdk.local_table import play_local

    trials = _load_benchmark("search_trials", monkeypatch)
    assert isinstance(trials.make("twins", 2)(), trials.TwinBot)
    assert trials.has_twin(0, [[0.5, 0.5, 0.2], [0.6, 0.6, 0.1]])  # AS and 2S alike, both the best
    assert trials.has_twin(2, [[0.5, 0.2, 0.5]])  # KH alike AS
    assert not trials.has_twin(0, [[0.5, 0.49, 0.2], [0.6, 0.6, 0.1]])  # one deal told them apart
    assert not trials.has_twin(2, [[0.5, 0.2, 0.2], [0.6, 0.3, 0.3]])  # KH alike 2S, but neither near the best
    for players in (2, 4):
        bots = [b for _ in range(players // 2) for b in (trials.TwinBot(2), HeuristicBot())]
        assert play_local(bots, rules=RuleSet(players=players), seed="twins").match.games[0].winner is not None


@pytest.mark.slow
def test_log_flood_benchmark_prints_the_drain_and_its_unthrottled_baseline(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in run("log_flood.py", "--seconds", "0.5", cwd=tmp_path).splitlines()]
    assert [r["setting"].split(",")[0] for r in rows] == ["process", "process"], rows
    throttled, free = rows
    assert throttled["ratio"] == 1.0 and free["ratio"] > 0 and free["discarded_mb"] > throttled["discarded_mb"] > 0
