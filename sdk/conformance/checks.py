"""The named checks: each reads the log of one scenario's run (:class:`~sdk.conformance.referee.RunLog`)
and says pass or fail, what was expected and what the bot did.

Each check judges only its own property, so a bot with one fault fails one check: the scripted
referee carries on past faults (a late answer gets the first legal action, an illegal one a
rejection, a Hello with a wrong version is written down and accepted), and the other checks only
need the match to go on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from sdk.conformance.launch import Limits
from sdk.conformance.lobby import DOWN_S, MIN_REDIAL_GAP_S, REDIAL_S
from sdk.conformance.logs import RequestSent, RunLog
from sdk.conformance.scenarios import RULE_OPTIONS

PROTOCOL_VERSION = "allfours.v1"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's outcome: ``passed``, and what the bot did (one line)."""

    passed: bool
    did: str


class Mode(enum.Enum):
    """How the bot is launched: once per match (``PER_GAME``, as the arena's per-game bots) or once as a
    long-lived worker of a lobby (``LOBBY``, ``--lobby``; docs/protocol.md, "Workers and the lobby")."""

    PER_GAME = "per-game"
    LOBBY = "lobby"


BOTH_MODES = frozenset(Mode)


@dataclass(frozen=True, slots=True)
class Check:
    """A named check: the scenario it runs, what it expects (one line; ``{startup_s}``-style fields are
    filled from :class:`~sdk.conformance.launch.Limits`), its judge, and the modes it belongs to (a
    check of one mode only is not part of the other mode's suite: neither run nor listed there)."""

    name: str
    scenario: str
    expected: str
    judge: Callable[[RunLog, Limits], Verdict]
    modes: frozenset[Mode] = BOTH_MODES


def _completed(log: RunLog) -> str:
    """Empty if the match was played to MatchEnd with the bot connected, else why not."""
    if log.failure:
        return log.failure
    if not log.match_end_sent:
        return "the match did not reach MatchEnd"
    return ""


def _all_legal(log: RunLog, games: set[int] | None = None) -> str:
    """Empty if every request (of ``games``) got a legal first answer, else the first that did not."""
    for r in log.requests:
        if r.resent or (games is not None and r.game not in games):
            continue
        if r.first_answer_malformed:
            return _malformed(r)
        if r.first_answer is None:
            return f"no answer to seq {r.seq} ({r.phase}) within {r.time_left_ms} ms"
        if not r.first_answer_legal:
            return f"seq {r.seq} ({r.phase}): answered {r.first_answer}, not one of the legal actions"
    return ""


def _malformed(r: RequestSent) -> str:
    return f"seq {r.seq} ({r.phase}): sent a malformed message ({r.first_answer_malformed}), a protocol error"


def _played(log: RunLog, why: str = "") -> Verdict:
    """Pass if the match completed and every request got a legal first answer."""
    problem = _completed(log) or _all_legal(log)
    n = len([r for r in log.requests if not r.resent])
    if problem:
        return Verdict(False, problem)
    return Verdict(True, f"answered {n} requests legally{why} and the match ended normally")


def judge_join(log: RunLog, _: Limits) -> Verdict:
    if not log.hellos:
        return Verdict(False, log.failure or "never opened a Play stream")
    h = log.hellos[0]
    if not h.first_message:
        return Verdict(False, "the first message on the stream was not a Hello")
    if h.ticket != log.ticket:
        return Verdict(False, f"Hello carried ticket {h.ticket[:40]!r}, not the one it was given")
    if h.protocol_version != PROTOCOL_VERSION:
        return Verdict(False, f"Hello carried protocol_version {h.protocol_version[:40]!r}")
    return Verdict(True, f"Hello with its ticket, protocol_version {PROTOCOL_VERSION}, bot_name {h.bot_name[:40]!r}")


def judge_phases(log: RunLog, _: Limits) -> Verdict:
    """Passes if the bot's first answer to a request was legal in each of beg, dealer, play and call; else
    names the phases without one (and those it was asked in, if any)."""
    answered: dict[str, int] = {}
    for r in log.requests:
        if not r.resent and r.first_answer_malformed:
            return Verdict(False, _malformed(r))
        if r.resent or r.first_answer is None:
            continue
        if not r.first_answer_legal:
            return Verdict(False, f"seq {r.seq} ({r.phase}): answered {r.first_answer}, not one of the legal actions")
        answered[r.phase] = answered.get(r.phase, 0) + 1
    missing = [p for p in ("beg", "dealer", "play", "call") if p not in answered]
    if missing:
        asked = sorted({r.phase for r in log.requests})
        return Verdict(False, f"no legal answer in phase(s) {', '.join(missing)}"
                       + (f" (asked in: {', '.join(asked)})" if asked else "")
                       + (f"; {log.failure}" if log.failure else ""))
    return Verdict(True, "legal answers in " + ", ".join(f"{p} x{answered[p]}" for p in ("beg", "dealer", "play",
                                                                                          "call")))


def judge_deadline(log: RunLog, _: Limits) -> Verdict:
    worst = 0.0
    for r in log.requests:
        if r.resent:
            continue
        if r.first_answer_at is None or r.timed_out:
            late = "" if r.first_answer_at is None else f" (answered {1000 * (r.first_answer_at - r.sent_at):.0f} ms)"
            return Verdict(False, f"seq {r.seq} ({r.phase}) not answered within its {r.time_left_ms} ms{late}")
        worst = max(worst, r.first_answer_at - r.sent_at)
    if not log.requests:
        return Verdict(False, log.failure or "never asked")
    return Verdict(True, f"{len(log.requests)} answers, slowest {1000 * worst:.0f} ms (limit "
                         f"{log.requests[0].time_left_ms} ms)")


def judge_retry(log: RunLog, _: Limits) -> Verdict:
    # A rejection with seq 0 (undecodable bytes, an empty message) names no request: not the staged one.
    seq = next((s for s, _ in log.rejections if s), 0)
    if not seq:
        return Verdict(False, log.failure or "the staged rejection never happened (no answer to reject)")
    tries = [d for d in log.by_seq(seq) if d.verdict in ("answer", "illegal", "rejected-on-purpose")]
    if len(tries) < 2:
        return Verdict(False, f"no new answer to seq {seq} after ActionRejected (the first legal action was "
                              f"played at the deadline)")
    retry = tries[1]
    if retry.verdict != "answer":
        return Verdict(False, f"retried seq {seq} with {retry.action}: {retry.verdict}")
    return Verdict(True, f"retried seq {seq} with {retry.action} after ActionRejected")


def judge_seq_echo(log: RunLog, _: Limits) -> Verdict:
    for d in log.decisions:
        if d.seq == 0:
            return Verdict(False, f"answered with seq 0 ({d.action}) instead of echoing the request's seq")
        if d.verdict == "unknown-seq":
            return Verdict(False, f"sent seq {d.seq}, which was never sent to it")
    if not log.decisions:
        return Verdict(False, log.failure or "sent no decisions")
    return Verdict(True, f"{len(log.decisions)} decisions, each echoing its request's seq")


def judge_resend(log: RunLog, _: Limits) -> Verdict:
    resent = [r for r in log.requests if r.resent and r.answered_at is not None]
    if not resent:
        return Verdict(False, log.failure or "the staged re-send never happened")
    r = resent[0]
    again = [d for d in log.by_seq(r.seq) if d.at >= r.sent_at]
    if again:
        return Verdict(False, f"answered the re-sent seq {r.seq} again ({again[0].action}) after answering it")
    later = [q for q in log.requests if not q.resent and q.k > r.k]
    if not later or later[0].first_answer is None:
        return Verdict(False, f"ignored the re-sent seq {r.seq} but then did not answer the next request")
    return Verdict(True, f"ignored the re-sent seq {r.seq} and answered seq {later[0].seq}")


def judge_resume(log: RunLog, _: Limits) -> Verdict:
    if not log.streams_dropped:
        return Verdict(False, log.failure or "the staged drop never happened")
    seq = log.streams_dropped[0]
    # The stream the referee dropped is the one the request went out on (not always stream 1: a bot may
    # have come back on its own before); the resume is judged on the first stream opened after it.
    dropped = next((r.stream for r in log.requests if r.seq == seq and not r.resent), 1)
    later = [h for h in log.hellos if h.stream > dropped]
    if not later:
        return Verdict(False, f"did not open a new stream after the referee dropped it (seq {seq} pending)"
                       + (f": {log.failure}" if log.failure else ""))
    h = later[0]
    if h.ticket != log.ticket:
        return Verdict(False, "reconnected with another ticket than the one it was given")
    answers = [d for d in log.by_seq(seq) if d.stream == h.stream and d.verdict == "answer"]
    if not answers:
        return Verdict(False, f"reconnected but did not answer the re-sent seq {seq} on the new stream")
    problem = _completed(log)
    if problem:
        return Verdict(False, problem)
    return Verdict(True, f"reconnected {1000 * (h.at - _drop_time(log, seq)):.0f} ms after the drop with the same "
                         f"ticket and answered seq {seq}")


def _drop_time(log: RunLog, seq: int) -> float:
    return next((r.sent_at for r in log.requests if r.seq == seq), 0.0)


def judge_multi_game(log: RunLog, _: Limits) -> Verdict:
    games = sorted({r.game for r in log.requests if r.first_answer is not None})
    if games != [1, 2]:
        return Verdict(False, f"answered in game(s) {games or 'none'} of 2" + (f": {log.failure}" if log.failure
                                                                                 else ""))
    return _played(log, " in games 1 and 2")


def judge_kick(log: RunLog, _: Limits) -> Verdict:
    if any(r.game == 1 for r in log.requests):
        return Verdict(False, "internal: game 1 did not end on its kick")  # pragma: no cover - the deck fixes it
    if not any(r.game == 2 and r.first_answer is not None for r in log.requests):
        return Verdict(False, "after game 1 ended on the kick it did not answer in game 2"
                       + (f": {log.failure}" if log.failure else ""))
    return _played(log, " in game 2 after game 1 ended on the kick")


def judge_played(log: RunLog, _: Limits) -> Verdict:
    return _played(log)


def judge_dry(log: RunLog, _: Limits) -> Verdict:
    return _played(log, " after the pack ran dry in deal 1")


def judge_exit(log: RunLog, limits: Limits) -> Verdict:
    if not log.match_end_sent:
        return Verdict(False, log.failure or "the match did not reach MatchEnd")
    if log.exit_code is None:
        return Verdict(False, f"still running {limits.exit_s:.0f} s after MatchEnd (killed)")
    if log.exit_code != 0:
        return Verdict(False, f"exited with status {log.exit_code} after MatchEnd")
    return Verdict(True, f"exited 0, {1000 * (log.exit_after_end_s or 0):.0f} ms after MatchEnd")


def judge_unknown(log: RunLog, _: Limits) -> Verdict:
    return _played(log, " with an unknown message, event kind and fields")


def judge_limits(log: RunLog, limits: Limits) -> Verdict:
    if log.startup_s is None:
        return Verdict(False, log.failure or "never sent a Hello")
    did = f"start-up {log.startup_s:.2f} s, peak memory {log.peak_rss_mib:.0f} MiB"
    ok = log.startup_s <= limits.startup_s and log.peak_rss_mib <= limits.memory_mib
    return Verdict(ok, did)


def judge_lobby_register(log: RunLog, _: Limits) -> Verdict:
    lobby = log.lobby
    if lobby is None:
        return Verdict(False, "not run in lobby mode")
    if not lobby.registers:
        return Verdict(False, lobby.fatal or "never registered at the lobby")
    r = lobby.registers[0]
    if not r.first_message:
        return Verdict(False, "the first message on the lobby stream was not a Register")
    if r.token != lobby.token:
        return Verdict(False, "Register carried another token than ALLFOURS_BOT_TOKEN")
    if r.bot_name != lobby.bot_name:
        return Verdict(False, f"Register carried bot_name {r.bot_name[:40]!r}, not {lobby.bot_name!r}")
    if r.protocol_version != PROTOCOL_VERSION:
        return Verdict(False, f"Register carried protocol_version {r.protocol_version[:40]!r}")
    return Verdict(True, f"Register with its token, bot_name and {PROTOCOL_VERSION}, {r.at:.2f} s after the launch")


def judge_lobby_ready(log: RunLog, limits: Limits) -> Verdict:
    lobby = log.lobby
    if lobby is None:
        return Verdict(False, "not run in lobby mode")
    if not lobby.ended:
        return Verdict(False, lobby.fatal or "no Assignment was played to MatchEnd")
    early = [m for m in lobby.ended if m in lobby.ready_early_s]
    if early:
        return Verdict(False, f"sent the Ready naming {early[0]} before its MatchEnd ("
                              f"{1000 * lobby.ready_early_s[early[0]]:.0f} ms before; {len(early)} of "
                              f"{len(lobby.ended)} matches): the arena's lobby takes a Ready as the seat played, "
                              f"may give the worker another seat meanwhile, and refuses a second Ready")
    missing = [m for m in lobby.ended if m not in lobby.ready_after_s]
    if missing:
        others = sorted({m for m, _ in lobby.readies} - set(lobby.assigned))
        named = f"; Readies named {', '.join(repr(m) for m in others[:2])}, never assigned" if others else ""
        return Verdict(False, f"no Ready naming {missing[0]} within {limits.exit_s:g} s of its MatchEnd "
                              f"({len(lobby.ended) - len(missing)} of {len(lobby.ended)} matches had one{named})")
    if lobby.fatal:  # a worker must stay for its next Assignment
        return Verdict(False, f"a Ready after each of {len(lobby.ended)} matches, then {lobby.fatal}")
    slowest = max(lobby.ready_after_s.values())
    return Verdict(True, f"a Ready after each of {len(lobby.ended)} matches (slowest {1000 * slowest:.0f} ms "
                         f"after MatchEnd)")


def judge_lobby_redial(log: RunLog, _: Limits) -> Verdict:
    lobby = log.lobby
    if lobby is None:
        return Verdict(False, "not run in lobby mode")
    r = lobby.redial
    if r is None:
        return Verdict(False, f"not tried: {lobby.fatal}" if lobby.fatal else "not tried")
    if r.back_at is None:
        return Verdict(False, r.failure)
    down = f"it closed the worker's stream with UNAVAILABLE and was down {DOWN_S:g} s"
    if r.register is None:
        if r.exit_code is not None:
            words = f" (its last output: {r.last_words})" if r.last_words else ""
            return Verdict(False, f"the worker's process ended with status {r.exit_code} when the lobby closed its "
                                  f"stream with UNAVAILABLE (an arena restarting) instead of dialling again{words}")
        return Verdict(False, f"no new Register within {REDIAL_S:g} s of the lobby listening again ({down}): "
                              f"a worker must dial again with back-off until the lobby is back")
    if not r.register.first_message:
        return Verdict(False, "dialled again, but the first message on the new lobby stream was not a Register")
    if (r.register.token, r.register.bot_name) != (lobby.token, lobby.bot_name):
        return Verdict(False, "dialled again, but its new Register carried another token or bot_name than its first")
    gap = r.register.at - (r.refused_at if r.refused_at is not None else r.back_at)
    if gap < MIN_REDIAL_GAP_S:
        return Verdict(False, f"dialled again {1000 * gap:.0f} ms after the lobby refused its first new stream with "
                              f"UNAVAILABLE: a worker must back off (at least {MIN_REDIAL_GAP_S:g} s; from 0.5 s, "
                              f"doubling), or it floods a lobby that refuses it")
    after = (f"registered again {r.register.at - r.back_at:.2f} s after the lobby listened again ({down}), "
             f"{gap:.2f} s after it refused the first new stream")
    if r.failure:
        return Verdict(False, f"{after}, but {r.failure}")
    return Verdict(True, f"{after}, then played {r.match_id} and sent its Ready")


CHECKS: list[Check] = [
    Check("join", "basic", f"first message a Hello with its ticket and protocol_version {PROTOCOL_VERSION}",
          judge_join),
    Check("phases", "phases", "a legal action in every phase asked: beg, dealer, play and call", judge_phases),
    Check("deadline", "basic", "every request answered within time_left_ms (2000 ms here)", judge_deadline),
    Check("retry", "retry", "after ActionRejected, a new answer with the same seq before the deadline",
          judge_retry),
    Check("seq-echo", "basic", "every Decision echoes the seq of the request it answers", judge_seq_echo),
    Check("resend", "resend", "a request re-sent after it was answered is not answered again", judge_resend),
    Check("unknown-messages", "unknown-messages",
          "plays on past a message of an unknown kind, an unknown event kind and unknown fields", judge_unknown),
    Check("pack-runs-dry", "pack-runs-dry", "plays on after a deal whose pack ran dry (the dealer deals again)",
          judge_dry),
    Check("kick-ends-game", "kick-ends-game", "plays game 2 after game 1 ended on a kicked jack (target 3)",
          judge_kick),
    Check("multi-game", "multi-game", "plays both games of a 2-game match", judge_multi_game),
    Check("players-2", "players-2", "plays a whole 2-player match (seat 1) legally", judge_played),
    Check("players-4", "players-4", "plays a whole 4-player match (seat 3) legally", judge_played),
    *[Check(name, name, f"plays a whole match legally with {', '.join(f'{k}={v}' for k, v in opts.items())}",
            judge_played) for name, opts in RULE_OPTIONS.items()],
    Check("resume", "resume", "after the referee drops the stream: a new stream with the same ticket, "
                              "then an answer to the re-sent request", judge_resume),
    Check("exit", "basic", "exits with status 0 within {exit_s:g} s of MatchEnd", judge_exit,
          frozenset({Mode.PER_GAME})),
    Check("limits", "basic", "Hello (lobby mode: Register) within {startup_s:g} s of the launch; peak memory at "
                             "most {memory_mib:g} MiB", judge_limits),
    Check("lobby-register", "basic", f"first a Register with ALLFOURS_BOT_TOKEN, ALLFOURS_BOT_NAME and "
                                     f"{PROTOCOL_VERSION}", judge_lobby_register, frozenset({Mode.LOBBY})),
    Check("lobby-ready", "multi-game", "a Ready naming the match within {exit_s:g} s after each MatchEnd (not "
                                       "before), and every next Assignment played",
          judge_lobby_ready, frozenset({Mode.LOBBY})),
    Check("lobby-redial", "basic", f"after the lobby closes its stream with UNAVAILABLE and comes back on the "
                                   f"same address {DOWN_S:g} s later (an arena restarting): a new Register within "
                                   f"{REDIAL_S:g} s, at least {MIN_REDIAL_GAP_S:g} s after its first new stream "
                                   "was refused (back-off), then the next Assignment played and a Ready",
          judge_lobby_redial, frozenset({Mode.LOBBY})),
]


def checks_of(mode: Mode) -> list[Check]:
    """The suite of ``mode``, in order (``exit`` is per-game only; ``lobby-register``, ``lobby-ready`` and
    ``lobby-redial`` are lobby-mode only)."""
    return [c for c in CHECKS if mode in c.modes]
