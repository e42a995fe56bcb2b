"""Verify a match record: ``python -m referee.verify RECORD.jsonl``.

Replays the record (docs/record.md) through the engine and checks:

- the shape: a header first (``record_version`` this verifier knows), only known line types, one
  ``result`` line just before the ``seed`` line, which is the last line;
- the revealed seed hashes to the header's ``seed_commitment``;
- each game's first dealer: the header's ``first_dealer`` or the cut (``cut_deck(seed, 1)``) for
  game 1, then one seat to the right of the previous game's last dealer (docs/rules.md, Match); no game
  starts before the previous one ended, and no more games than the header's ``games``;
- every deal's deck equals ``deck_for(seed, game, deal)`` and comes when the engine waits for one;
- every action applies (``apply``) with its seat, in its game and deal; ``out_of_turn`` exactly when
  the seat is not the one to act (then ``seq`` 0); answers carry increasing ``seq`` numbers; a
  ``timeout`` action is the first legal action at that moment;
- every rejected action is rejected by the engine with the recorded reason and message (the
  message names the card and the state, so a changed card in a ``rejected`` line fails);
- every game's scores, winner, points and number of deals; a forfeited game is the last one, was not
  played to its end, and is won by the side that did not forfeit;
- the result: games won; the winner; the status against the games and the seats' terminations
  (``completed``: every game of the header played, every seat ``normal``; ``forfeited``: the seat(s)
  that forfeited are on ``forfeited_side``, the others ``other_seat_forfeited``; ``aborted``: every
  seat ``aborted``, no winner); each seat's strikes, illegal and protocol error counts against the
  timeout actions and rejected lines; its ``connected_at_end`` a boolean when present (a record
  written before it has none: unknown, which passes).

Exit status 0 with ``OK ...`` on stdout, 1 with ``FAIL line N: ...`` on stderr (one line; also for a
file that is not UTF-8 or not JSON lines, or cannot be read), 2 for usage errors.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import NoReturn

from referee.dealing import SHUFFLE_VERSION, deck_for, first_dealer_by_cut, parse_seed, verify_commitment
from referee.outcome import ARENA_ONLY, MatchStatus, Termination
from referee.record import RECORD_VERSION, RecordError, read_record
from referee.rules import (
    Phase,
    RuleError,
    RuleSet,
    State,
    apply,
    deal,
    legal_actions,
    new_game,
    next_seat,
    parse_action,
)
from referee.rules.cards import parse_deck

#: Every line type of a record version 1 (docs/record.md).
LINE_TYPES = ("header", "game", "deal", "action", "rejected", "game_end", "result", "seed")
#: Seat terminations a record may hold: the referee's (:class:`referee.outcome.Termination` without
#: the arena's own and ``unspecified``).
TERMINATIONS = tuple(t.value for t in Termination if t not in ARENA_ONLY and t != Termination.UNSPECIFIED)
#: The terminations that forfeit the match for the seat's side.
FORFEITS = tuple(t for t in TERMINATIONS if Termination(t).forfeits)
#: The statuses of an ended match.
STATUSES = (MatchStatus.COMPLETED.value, MatchStatus.FORFEITED.value, MatchStatus.ABORTED.value)


class VerifyError(ValueError):
    """A record that does not replay: the message names the line and the mismatch."""


class _Fail(Exception):
    """A mismatch on the line being checked, or on line ``line`` if given."""

    def __init__(self, msg: str, line: int | None = None) -> None:
        super().__init__(msg)
        self.line = line


def _fail(msg: str, line: int | None = None) -> NoReturn:
    raise _Fail(msg, line)


def _int(o: dict[str, object], key: str) -> int:
    v = o.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        _fail(f"{o['type']}.{key} must be a whole number, not {v!r}")
    return v


def _opt_side(o: dict[str, object], key: str) -> int | None:
    v = o.get(key)
    if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v not in (0, 1)):
        _fail(f"{o['type']}.{key} must be a side (0 or 1) or null, not {v!r}")
    return v


def _side(s: int | None) -> str:
    return "null (no side)" if s is None else f"side {s}"


def read_lines(path: str) -> list[str]:
    """The lines of the record file ``path``, decoded as UTF-8.

    :raises OSError: if the file cannot be read.
    :raises RecordError: naming the first line that is not UTF-8 text.
    """
    with open(path, "rb") as f:
        data = f.read()
    lines = []
    for n, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise RecordError(f"line {n}: not UTF-8 text (byte 0x{raw[e.start]:02x} at position {e.start + 1})") \
                from None
    return lines


def verify_lines(lines: Iterable[str]) -> str:
    """Verify a record given as lines; return the ``OK ...`` summary.

    :raises VerifyError: ``line N: ...`` naming the first line that does not check out.
    :raises RecordError: ``line N: ...`` for a line that is not a JSON object with a ``type``.
    """
    items = list(read_record(lines))
    if not items:
        raise VerifyError("line 1: the record is empty (expected a header line)")
    v = _Verifier(items)
    cur = items[0]
    try:
        v.check_shape()
        for cur in items:
            v.line(cur[1])
    except _Fail as e:
        raise VerifyError(f"line {e.line or cur[0]}: {e}") from None
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as e:
        raise VerifyError(f"line {cur[0]}: malformed {cur[1].get('type')} line: {type(e).__name__}: {e}") from None
    return v.summary()


class _Verifier:
    """The state of one verification, line by line (see :func:`verify_lines`)."""

    def __init__(self, items: list[tuple[int, dict[str, object]]]) -> None:
        self.items = items
        self.header = items[0][1]
        self.result: dict[str, object] = {}
        self.seed = b""
        self.rules = RuleSet()
        self.games = 0
        self.state: State | None = None
        self.game = 0
        self.in_game = False
        self.next_dealer: int | None = None
        self.games_won = [0, 0]
        self.forfeited_game: int | None = None
        self.n_deals = self.n_actions = self.n_rejected = 0
        self.last_seq = 0
        self.timeouts: list[int] = []
        self.illegal: list[int] = []
        self.protocol: list[int] = []

    # ------------------------------------------------------------------ shape and header

    def check_shape(self) -> None:
        """Header first, result then seed last; the seed matches the commitment; a header we know."""
        h = self.header
        if h.get("type") != "header":
            _fail(f"the first line must be the header, got type {h.get('type')!r}")
        if h.get("record_version") != RECORD_VERSION or isinstance(h.get("record_version"), bool):
            _fail(f"unknown record_version {h.get('record_version')!r} (this verifier knows {RECORD_VERSION})")
        if h.get("shuffle", SHUFFLE_VERSION) != SHUFFLE_VERSION:
            _fail(f"unknown shuffle {h.get('shuffle')!r} (this verifier knows {SHUFFLE_VERSION})")
        rules = h.get("rules")
        if not isinstance(rules, dict):
            _fail(f"header.rules must be an object, not {rules!r}")
        try:
            self.rules = RuleSet.from_dict(rules)
        except (ValueError, TypeError) as e:
            _fail(f"bad rules: {e}")
        players = self.rules.players
        self.games = _int(h, "games")
        if self.games < 1:
            _fail(f"header.games must be at least 1, not {self.games}")
        names = h.get("seat_names")
        if not isinstance(names, list) or len(names) != players or not all(isinstance(x, str) for x in names):
            _fail(f"header.seat_names must be {players} names, not {names!r}")
        fd = h.get("first_dealer")
        if fd is not None and (not isinstance(fd, int) or isinstance(fd, bool) or not 0 <= fd < players):
            _fail(f"header.first_dealer must be a seat of {players} or null, not {fd!r}")
        if not isinstance(h.get("seed_commitment"), str):
            _fail(f"header.seed_commitment must be 64 hex digits, not {h.get('seed_commitment')!r}")
        self.timeouts, self.illegal, self.protocol = [0] * players, [0] * players, [0] * players

        ns, last = self.items[-1]
        if last.get("type") != "seed":
            _fail("the record ends without its seed line (the last line must be the seed; has the match ended?)",
                  ns)
        seeds = [n for n, o in self.items if o.get("type") == "seed"]
        if len(seeds) > 1:
            _fail("a seed line before the end (the seed line is the last line, once)", seeds[0])
        nr, before = self.items[-2] if len(self.items) > 2 else self.items[0]
        if before.get("type") != "result":
            _fail(f"expected the result line (just before the seed line), got type {before.get('type')!r}", nr)
        results = [n for n, o in self.items if o.get("type") == "result"]
        if len(results) > 1:
            _fail("a second result line (the result is the line before the seed, once)", results[0])
        self.result = before
        try:
            self.seed = parse_seed(str(last.get("seed", "")))
        except ValueError as e:
            _fail(str(e), ns)
        commitment = h.get("seed_commitment")
        if not isinstance(commitment, str) or not verify_commitment(self.seed, commitment):
            _fail(f"the seed does not hash to the header's commitment {commitment}", ns)

    # ------------------------------------------------------------------ lines

    def line(self, o: dict[str, object]) -> None:
        """Check one line after the shape check (the header line included: nothing more to do)."""
        t = o.get("type")
        if o is self.header:
            return
        if t not in LINE_TYPES:
            _fail(f"unknown line type {t!r} (record version {RECORD_VERSION} has {', '.join(LINE_TYPES)})")
        getattr(self, f"_{t}")(o)

    def _header(self, o: dict[str, object]) -> None:
        _fail("a second header line")

    def _seed(self, o: dict[str, object]) -> None:
        pass  # checked with the shape

    def _game(self, o: dict[str, object]) -> None:
        if self.in_game:
            _fail(f"game {self.game + 1} starts before game {self.game} ended (no game_end line)")
        self.game += 1
        game = self.game
        if _int(o, "game") != game:
            _fail(f"expected game {game}, got {o.get('game')}")
        if game > self.games:
            _fail(f"game {game} but the header says {self.games} game(s)")
        if game == 1:
            fd = self.header.get("first_dealer")
            expected = fd if fd is not None else first_dealer_by_cut(self.seed, self.rules.players)
        else:
            expected = self.next_dealer
        dealer = _int(o, "dealer")
        if dealer != expected:
            _fail(f"game {game}: the first dealer should be seat {expected}, record says {dealer}")
        self.state = new_game(self.rules, dealer)
        self.in_game = True

    def _deal(self, o: dict[str, object]) -> None:
        state = self.state
        if state is None or not self.in_game or state.phase is not Phase.DEAL:
            phase = state.phase.value if state is not None and self.in_game else "no game"
            _fail(f"a deck was dealt but the game is not waiting for one (phase {phase})")
        expected_deal = state.deal_number + 1
        if o.get("game") != self.game or o.get("deal") != expected_deal:
            _fail(f"expected game {self.game} deal {expected_deal}, got game {o.get('game')} deal {o.get('deal')}")
        deck_in = o.get("deck")
        if not isinstance(deck_in, list):
            _fail(f"deal.deck must be a list of 52 cards, not {deck_in!r}")
        try:
            deck = parse_deck(deck_in)
        except ValueError as e:
            _fail(f"bad deck: {e}")
        want = deck_for(self.seed, self.game, expected_deal)
        if deck != want:
            first = next(i for i in range(52) if deck[i] != want[i])
            _fail(f"game {self.game} deal {expected_deal}: the deck differs from deck_for(seed) at position {first}: "
                  f"{deck[first]} recorded, {want[first]} derived")
        if o.get("dealer") != state.dealer:
            _fail(f"the dealer should be seat {state.dealer}, record says {o.get('dealer')}")
        self.state = deal(state, deck)
        self.n_deals += 1

    def _playing(self, what: str) -> State:
        if self.state is None or not self.in_game:
            _fail(f"{what} outside a game")
        return self.state

    def _seat(self, o: dict[str, object]) -> int:
        seat = _int(o, "seat")
        if not 0 <= seat < self.rules.players:
            _fail(f"{o['type']}.seat {seat} does not exist at a table of {self.rules.players}")
        return seat

    def _action(self, o: dict[str, object]) -> None:
        state = self._playing("an action")
        seat = self._seat(o)
        seq = _int(o, "seq")
        if o.get("game") != self.game or o.get("deal") != state.deal_number:
            _fail(f"an action of game {o.get('game')} deal {o.get('deal')} during game {self.game} deal "
                  f"{state.deal_number}")
        by, oot = o.get("by"), o.get("out_of_turn")
        if by not in ("bot", "timeout"):
            _fail(f"action.by must be 'bot' or 'timeout', not {by!r}")
        if not isinstance(oot, bool):
            _fail(f"action.out_of_turn must be true or false, not {oot!r}")
        try:
            action = parse_action(str(o.get("action")))
        except ValueError as e:
            _fail(f"bad action: {e}")
        if oot != (seat != state.to_act):
            to_act = "no seat" if state.to_act is None else f"seat {state.to_act}"
            _fail(f"out_of_turn is {str(oot).lower()} but {to_act} is to act (the action {o.get('action')!r} is "
                  f"by seat {seat})")
        if oot:
            if seq != 0 or by != "bot":
                _fail(f"a play out of turn is sent with seq 0 by the bot, not seq {seq} by {by!r}")
        else:
            if seq <= self.last_seq:
                _fail(f"seq {seq} does not follow seq {self.last_seq} (each request has a new, larger seq)")
            self.last_seq = seq
            if by == "timeout":
                first = legal_actions(state)[0]
                if action != first:
                    _fail(f"a timeout plays the first legal action ({first}), but the record says {action}")
                self.timeouts[seat] += 1
        try:
            self.state = apply(state, action, seat)
        except RuleError as e:
            _fail(f"the action {o.get('action')!r} of seat {seat} does not apply: {e}")
        self.n_actions += 1

    def _rejected(self, o: dict[str, object]) -> None:
        self.n_rejected += 1
        seat = self._seat(o)
        if o.get("reason") == "protocol_error":
            self.protocol[seat] += 1
            return
        state = self._playing("a rejected action")
        self.illegal[seat] += 1
        seq = _int(o, "seq")
        if seq != 0 and (seat != state.to_act or seq <= self.last_seq):
            _fail(f"a rejected answer (seq {seq}) must be by the seat to act ({state.to_act}) with the seq of its "
                  f"pending request (after {self.last_seq}); a play out of turn has seq 0")
        if seq == 0 and seat == state.to_act:
            _fail(f"a rejected answer of the seat to act (seat {seat}) must carry its request's seq, not 0")
        try:
            action = parse_action(str(o.get("action")))
        except ValueError as e:
            _fail(f"bad rejected action: {e}")
        try:
            apply(state, action, seat)
        except RuleError as e:
            if e.reason.value != o.get("reason"):
                _fail(f"rejected {o.get('action')!r} with reason {o.get('reason')}, but the engine says "
                      f"{e.reason.value}")
            if e.message != o.get("message"):
                # The message names the card and the state: a card changed in the line shows here.
                _fail(f"rejected {o.get('action')!r}: the recorded message {o.get('message')!r} is not the "
                      f"engine's {e.message!r}")
            return
        _fail(f"the action {o.get('action')!r} of seat {seat} was rejected but is legal")

    def _game_end(self, o: dict[str, object]) -> None:
        state = self._playing("a game end")
        game = self.game
        if o.get("game") != game:
            _fail(f"game_end for game {o.get('game')} during game {game}")
        scores = list(state.scores)
        if o.get("scores") != scores:
            _fail(f"game {game}: recorded scores {o.get('scores')}, replayed {scores}")
        points = [{"deal": p.deal, "side": p.side, "kind": p.kind, "value": p.value} for p in state.points]
        if o.get("points") != points:
            _fail(f"game {game}: recorded points differ from the replay ({points})")
        if o.get("deals") != state.deal_number:
            _fail(f"game {game}: recorded {o.get('deals')} deals, replayed {state.deal_number}")
        winner = _opt_side(o, "winner")
        forfeited = o.get("forfeited")
        if not isinstance(forfeited, bool):
            _fail(f"game_end.forfeited must be true or false, not {forfeited!r}")
        if forfeited:
            if state.phase is Phase.OVER:
                _fail(f"game {game} is recorded as forfeited but it was played to the end")
            status, loser = self.result.get("status"), self.result.get("forfeited_side")
            if status != "forfeited":
                _fail(f"game {game} is recorded as forfeited but the match's status is {status!r}")
            if loser in (0, 1) and winner != 1 - loser:
                _fail(f"game {game} was forfeited by side {loser} (the result's forfeited_side): its winner is side "
                      f"{1 - loser}, not {_side(winner)}")
            self.forfeited_game = game
        elif state.phase is not Phase.OVER or winner != state.winner:
            _fail(f"game {game}: recorded winner {winner}, replay: phase {state.phase.value}, winner {state.winner}")
        if winner is not None:
            self.games_won[winner] += 1
        self.next_dealer = next_seat(state.dealer, self.rules.players)
        self.in_game = False

    def _result(self, o: dict[str, object]) -> None:
        status = o.get("status")
        if status not in STATUSES:
            _fail(f"result.status must be one of {', '.join(STATUSES)}, not {status!r}")
        if o.get("games_won") != self.games_won:
            _fail(f"games_won {o.get('games_won')} but the games say {self.games_won}")
        winner, loser = _opt_side(o, "winner"), _opt_side(o, "forfeited_side")
        seats = o.get("seats")
        players = self.rules.players
        if not isinstance(seats, list) or len(seats) != players or not all(isinstance(s, dict) for s in seats):
            _fail(f"result.seats must hold one object per seat ({players})")
        names = self.header.get("seat_names")
        if not isinstance(names, list) or len(names) != players:
            _fail(f"header.seat_names must hold one name per seat ({players}), not {names!r}")
        terms: list[str] = []
        for i, s in enumerate(seats):
            if s.get("seat") != i or s.get("name") != names[i]:
                _fail(f"result.seats[{i}] should be seat {i} named {names[i]!r}, got seat {s.get('seat')!r} named "
                      f"{s.get('name')!r}")
            term = s.get("termination")
            if term not in TERMINATIONS:
                _fail(f"seat {i}: unknown termination {term!r}")
            terms.append(term)
            strikes = s.get("strikes")
            allowed = {self.timeouts[i]} | ({self.timeouts[i] + 1} if term == "timeout" else set())
            if strikes not in allowed:
                _fail(f"seat {i}: strikes {strikes!r}, but the record has {self.timeouts[i]} timeout action(s)"
                      + (" (one more if the last timeout forfeited)" if term == "timeout" else ""))
            if s.get("illegal") != self.illegal[i]:
                _fail(f"seat {i}: illegal {s.get('illegal')!r}, but the record has {self.illegal[i]} rejected "
                      f"illegal action(s)")
            if s.get("protocol_errors") != self.protocol[i]:
                _fail(f"seat {i}: protocol_errors {s.get('protocol_errors')!r}, but the record has "
                      f"{self.protocol[i]} protocol error(s)")
            if "connected_at_end" in s and not isinstance(s["connected_at_end"], bool):
                _fail(f"seat {i}: connected_at_end must be true or false (or absent, in a record written "
                      f"before it), not {s.get('connected_at_end')!r}")
        if status == "completed":
            self._completed(terms, winner, loser)
        elif status == "aborted":
            bad = next((i for i, t in enumerate(terms) if t != "aborted"), None)
            if bad is not None:
                _fail(f"status aborted, but seat {bad}'s termination is {terms[bad]!r} (an aborted match ends "
                      f"every seat with 'aborted')")
            if winner is not None or loser is not None:
                _fail(f"an aborted match has no winner and no forfeited side, not winner {_side(winner)}, "
                      f"forfeited_side {_side(loser)}")
        else:
            self._forfeited(terms, winner, loser)

    def _completed(self, terms: list[str], winner: int | None, loser: int | None) -> None:
        bad = next((i for i, t in enumerate(terms) if t != "normal"), None)
        if bad is not None:
            _fail(f"status completed, but seat {bad}'s termination is {terms[bad]!r}")
        if self.in_game or self.game != self.games:
            played = self.game - (1 if self.in_game else 0)
            _fail(f"a completed match played {played} game(s) to the end but the header says {self.games} game(s)")
        if loser is not None:
            _fail(f"a completed match has no forfeited side, not {_side(loser)}")
        won = self.games_won
        expected = None if won[0] == won[1] else (0 if won[0] > won[1] else 1)
        if winner != expected:
            _fail(f"result winner {_side(winner)}, but games won {won[0]}-{won[1]} make the winner {_side(expected)}")

    def _forfeited(self, terms: list[str], winner: int | None, loser: int | None) -> None:
        forfeiters = [i for i, t in enumerate(terms) if t in FORFEITS]
        if not forfeiters:
            _fail(f"status forfeited, but no seat has a forfeit termination ({', '.join(FORFEITS)}): {terms}")
        no_show = [i for i in forfeiters if terms[i] == "no_show"]
        if no_show:
            if len(no_show) != len(forfeiters):
                _fail(f"seats {forfeiters} forfeited, but only seats {no_show} as no_show (a no-show ends the match "
                      f"before play)")
            if self.game:
                _fail(f"a no-show forfeit, but {self.game} game(s) started (every seat joins before play)")
        elif len(forfeiters) > 1:
            _fail(f"seats {forfeiters} all forfeited, but one forfeit ends the match")
        sides = sorted({i % 2 for i in forfeiters})
        expected_loser = sides[0] if len(sides) == 1 else None
        if loser != expected_loser:
            where = "both sides" if expected_loser is None else _side(expected_loser)
            _fail(f"forfeited_side {'null' if loser is None else loser}, but the seat(s) that forfeited "
                  f"({forfeiters}) are on {where}")
        other = next((i for i, t in enumerate(terms) if i not in forfeiters and t != "other_seat_forfeited"), None)
        if other is not None:
            _fail(f"seat {other}'s termination is {terms[other]!r}, but the match was forfeited by seat(s) "
                  f"{forfeiters} (the others end with 'other_seat_forfeited')")
        if self.game and self.forfeited_game != self.game:
            _fail(f"status forfeited after game {self.game} started, but game {self.game} is not recorded as "
                  f"forfeited")
        expected = None if loser is None else 1 - loser
        if winner != expected:
            _fail(f"result winner {_side(winner)}, but {_side(loser)} forfeited: the winner is {_side(expected)}")

    def summary(self) -> str:
        """The one-line ``OK ...`` report."""
        w = self.games_won
        return (f"OK match {self.header.get('match_id')}: {self.game} game(s), {self.n_deals} deal(s), "
                f"{self.n_actions} action(s), {self.n_rejected} rejected; games won {w[0]}-{w[1]}; "
                f"result {self.result.get('status')}; seed matches commitment")


def main(argv: list[str] | None = None) -> int:
    """``python -m referee.verify RECORD``: 0 and ``OK ...`` or 1 and ``FAIL line N: ...`` (2: usage)."""
    args = sys.argv[1:] if argv is None else argv
    usage = "usage: python -m referee.verify RECORD.jsonl"
    if args in (["-h"], ["--help"]):
        print(usage)
        return 0
    if len(args) != 1:
        print(usage, file=sys.stderr)
        return 2
    try:
        print(verify_lines(read_lines(args[0])))
    except OSError as e:
        print(f"FAIL cannot read {args[0]}: {e.strerror or e}", file=sys.stderr)
        return 1
    except (VerifyError, RecordError) as e:
        print(f"FAIL {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
