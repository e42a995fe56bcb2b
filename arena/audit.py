"""Audit a published tournament from its public files alone: ``python -m arena.audit OUTPUT [--seed HEX]``.

``referee.verify`` checks one match record against itself (its deals against its own match seed, its
play against the rules). This checks what ties the records to the tournament, from what the output
folder publishes (``commitment.json``, ``ratings.json``, ``games.jsonl``, ``records/``), so that an
outsider who distrusts the host can check that:

- the revealed master seed (``ratings.json``'s ``tournament.master_seed``: a finished ``arena run``'s, a
  competition's final's, a league's once ``arena competition close`` ended it; or ``--seed`` for one
  revealed elsewhere) hashes to ``commitment.json``;
- every game's deal seed is the one the master seed gives its pairing and pair
  (:func:`arena.tournament.schedule.pair_seed`: the pair's seed, or for the second game of a pair
  with a remote entrant the pair's second seed), so no deal was chosen after the commitment;
- every game's sides are its pairing's entrants (``tournament.entrants``, in their numbers' order),
  side 0 the lower number in the pair's first game and the other in its second (the swap), the first
  dealer the pair's (``k % players``), and, once the seed is revealed, both games of every pair and
  every pair before a pairing's last are published (a host who dropped a game or a pair it disliked is
  caught);
- every game's record passes ``referee.verify``, deals from that seed (its commitment and its last
  line), was played under the tournament's rules by the seats' entrants, and has the result
  ``games.jsonl`` publishes (match id, winner, scores), and each line's ``score`` (the ratings' input) is
  its winner's; every record has the tournament's one time control (that of most of them). A game
  without a record must be one forfeited before it was played (a seat ``not_started``, ``broken`` or
  ``no_show``, every other one that or ``other_seat_forfeited``).

A closed league (``tournament.league_closed``) may have left its pairings' last pairs half played (it was
stopped, or an entrant left, between a pair's two games, and plays no more): those are counted on the ``OK``
line, not failed. A league still served (``tournament.league``, its seed secret) gets an ``OK`` line saying
so and what was checked instead.

Each problem is one line ``FAIL games.jsonl line N (GAME): ...`` (or ``FAIL commitment.json: ...``) on
stderr; exit status 0 with an ``OK`` summary on stdout when there is none, 1 otherwise, 2 for a folder
that is not a published tournament. What it cannot see: a game the host played again and published
only once (the same deal, the newer record), and anything before the commitment was published.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.tournament.schedule import pair_seed, pairing_number
from referee.dealing import commitment, parse_seed
from referee.outcome import Termination
from referee.record import RecordError, read_record
from referee.verify import VerifyError, read_lines, verify_lines

__all__ = ["AuditError", "Published", "audit", "main"]

#: Seat terminations of a game stored without a match (no record): nothing was played.
UNPLAYED = frozenset({Termination.NOT_STARTED.value, Termination.BROKEN.value, Termination.NO_SHOW.value})


class AuditError(ValueError):
    """The folder is not a published tournament (a file missing or unreadable); ``str(e)`` is one line."""


@dataclass(frozen=True, slots=True)
class Published:
    """What a tournament's folder publishes about itself: its ``name``, ``players``, ``rules`` (every
    RuleSet option), ``entrants`` (labels in the order of their numbers), the ``commitment`` of
    ``commitment.json`` (SHA-256 hex), the revealed ``master_seed`` (None: not revealed), the ``active``
    entrants (those the config schedules now) and the ``remote`` ones among them, whose pairs' second
    games are dealt on their own (None: a folder published before these lists were)."""

    name: str
    players: int
    rules: Mapping[str, object]
    entrants: tuple[str, ...]
    commitment: str
    master_seed: bytes | None
    active: frozenset[str] | None
    remote: frozenset[str] | None
    league: str | None = None  # "served": a league under `arena serve` (seed secret); "closed": its seed revealed


def _json_file(path: Path) -> dict[str, object]:
    """The JSON object in ``path``. :raises AuditError: missing, unreadable or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise AuditError(f"{path}: cannot read it: {e.strerror or e}") from None
    except ValueError as e:
        raise AuditError(f"{path}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise AuditError(f"{path}: not a JSON object")
    return data


def load_published(folder: Path, seed_hex: str | None = None) -> Published:
    """Read ``commitment.json`` and ``ratings.json``'s ``tournament`` of ``folder``; ``seed_hex`` (64 hex
    digits) stands for the revealed master seed when given. :raises AuditError: a file missing or
    malformed, or a ``seed_hex`` that is not a seed."""
    com = _json_file(folder / "commitment.json").get("master_seed_sha256")
    t = _json_file(folder / "ratings.json").get("tournament")
    if not isinstance(com, str) or not isinstance(t, dict):
        raise AuditError(f"{folder}: commitment.json has no master_seed_sha256 or ratings.json no tournament")
    revealed = seed_hex if seed_hex is not None else t.get("master_seed")
    try:
        seed = None if revealed is None else parse_seed(str(revealed))
    except ValueError as e:
        raise AuditError(f"the revealed master seed: {e}") from None
    entrants = t.get("entrants")
    if not isinstance(entrants, list) or not isinstance(t.get("name"), str) or t.get("players") not in (2, 4):
        raise AuditError(f"{folder / 'ratings.json'}: tournament lacks its name, players or entrants")
    rules, active, remote = t.get("rules"), t.get("active"), t.get("remote")
    league = "closed" if t.get("league_closed") is True else "served" if t.get("league") is True else None
    return Published(str(t["name"]), int(str(t["players"])), rules if isinstance(rules, dict) else {},
                     tuple(str(e) for e in entrants), com, seed,
                     frozenset(str(r) for r in active) if isinstance(active, list) else None,
                     frozenset(str(r) for r in remote) if isinstance(remote, list) else None, league)


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where a game id puts the game in the schedule: entrants ``i < j``, game ``n`` of the pairing."""

    i: int
    j: int
    n: int

    @property
    def pair(self) -> int:
        return self.n // 2

    @property
    def swapped(self) -> bool:
        return self.n % 2 == 1


def _slot(pub: Published, game_id: str) -> _Slot:
    """:raises ValueError: a game id that is not ``<name>-p<i>-<j>-g<n>`` of known entrants ``i < j``."""
    m = re.fullmatch(re.escape(pub.name) + r"-p(\d+)-(\d+)-g(\d+)", game_id)
    if m is None:
        raise ValueError(f"the game id is not {pub.name}-p<i>-<j>-g<n>")
    i, j, n = (int(x) for x in m.groups())
    if not i < j < len(pub.entrants):
        raise ValueError(f"entrants {i} and {j}: not two of the {len(pub.entrants)} published, lower first")
    return _Slot(i, j, n)


def _check_schedule(pub: Published, slot: _Slot, row: Mapping[str, object]) -> list[str]:
    """The row's place in the schedule: pair id, sides, first dealer and (revealed) deal seed."""
    problems = []
    first, second = pub.entrants[slot.i], pub.entrants[slot.j]
    sides = [second, first] if slot.swapped else [first, second]
    if [row.get("a"), row.get("b")] != sides:
        problems.append(f"sides {row.get('a')!r} v {row.get('b')!r}, but the schedule seats {sides[0]!r} v "
                        f"{sides[1]!r} (entrants {slot.i} and {slot.j}, game {slot.n} of their pairing)")
    if row.get("pair") != f"{pub.name}-p{slot.i}-{slot.j}-d{slot.pair}":
        problems.append(f"pair {row.get('pair')!r}, but its game id puts it in pair {slot.pair}")
    if row.get("first_dealer") != slot.pair % pub.players:
        problems.append(f"first dealer {row.get('first_dealer')}, but pair {slot.pair} deals first from seat "
                        f"{slot.pair % pub.players}")
    if pub.master_seed is not None and row.get("seed") not in _seeds(pub, pub.master_seed, slot, sides):
        problems.append(f"deal seed {row.get('seed')}, not the one the committed master seed gives pair "
                        f"{slot.pair} of pairing {pairing_number(slot.i, slot.j)}"
                        f"{' (its second game)' if slot.swapped else ''}")
    return problems


def _seeds(pub: Published, master: bytes, slot: _Slot, sides: Sequence[str]) -> set[str]:
    """The deal seeds (hex) the schedule allows the game of ``slot``: the pair's, or for the second game of
    a pairing with a remote entrant the pair's second seed; either when the folder does not say whether a
    side is remote (it is no longer scheduled, or the folder predates the lists)."""
    p = pairing_number(slot.i, slot.j)
    paired, own = pair_seed(master, p, slot.pair).hex(), pair_seed(master, p, slot.pair, second=True).hex()
    if not slot.swapped:
        return {paired}
    if pub.remote is not None and pub.remote & set(sides):
        return {own}
    if pub.active is not None and set(sides) <= pub.active:
        return {paired}
    return {paired, own}


def _check_score(row: Mapping[str, object]) -> list[str]:
    """The ratings' input ``score`` (``a``'s) against the row's ``winner``: 1 for side 0, 0 for side 1, null
    without a winner (what ``python -m arena.ratings`` rates, so a changed score alone changes the ratings)."""
    winner = row.get("winner")
    want = None if winner not in (0, 1) else 1.0 - float(str(winner))
    if row.get("score") != want:
        return [f"score {row.get('score')!r} (the ratings' input), but its winner {winner!r} makes it {want!r}"]
    return []


def _record_facts(lines: Sequence[str]) -> dict[str, dict[str, object]]:
    """The header, last game_end, result and seed lines of a verified record, by type."""
    return {str(o["type"]): o for _, o in read_record(lines) if o["type"] in ("header", "game_end", "result", "seed")}


def _check_record(
    folder: Path, pub: Published, row: Mapping[str, object], clocks: dict[str, list[str]],
) -> list[str]:
    """The row's record: it verifies, deals from the row's seed, and holds the row's match and result;
    its time control (JSON) gets the game's id in ``clocks`` (:func:`_odd_clocks`)."""
    record = row.get("record")
    if record is None:
        terms = row.get("terminations")
        if (isinstance(terms, list) and any(t in UNPLAYED for t in terms)
                and all(t in UNPLAYED or t == Termination.OTHER_SEAT_FORFEITED.value for t in terms)):
            return []
        return [f"no record, yet not a game forfeited before it was played (terminations {terms})"]
    path = (folder / str(record)).resolve()
    if path.parent != (folder / "records").resolve():
        return [f"its record {record!r} is not in the folder's records/"]
    try:
        lines = read_lines(str(path))
        verify_lines(lines)
    except OSError as e:
        return [f"its record {record}: cannot read it: {e.strerror or e}"]
    except (VerifyError, RecordError) as e:
        return [f"its record {record} fails referee.verify: {e}"]
    facts = _record_facts(lines)
    clock = json.dumps(facts["header"].get("time_control"), sort_keys=True)
    clocks.setdefault(clock, []).append(str(row.get("game_id")))
    return [f"its record {record}: {p}" for p in _compare(pub, row, facts)]


def _compare(pub: Published, row: Mapping[str, object], facts: Mapping[str, Mapping[str, object]]) -> list[str]:
    """What a verified record says against the row (a :func:`_check_record` step)."""
    header, result, end = facts["header"], facts["result"], facts.get("game_end", {})
    seats = [row.get("a") if s % 2 == 0 else row.get("b") for s in range(pub.players)]
    wants = [("seed", facts["seed"].get("seed"), row.get("seed")),
             ("match id", header.get("match_id"), row.get("match_id")),
             ("seat names", header.get("seat_names"), seats),
             ("first dealer", header.get("first_dealer"), row.get("first_dealer")),
             ("games", header.get("games"), 1),
             ("winner", result.get("winner"), row.get("winner")),
             ("scores", end.get("scores", [0, 0]), row.get("scores"))]
    if pub.rules:
        wants.append(("rules", header.get("rules"), dict(pub.rules)))
    return [f"{what} {got!r}, but games.jsonl says {want!r}" if what not in ("games", "rules") else
            f"{what} {got!r}, but the tournament's are {want!r}" for what, got, want in wants if got != want]


def _rows(folder: Path) -> list[tuple[int, dict[str, object] | str]]:
    """games.jsonl's lines, each a JSON object or the one-line reason it is not.
    :raises AuditError: the file cannot be read."""
    try:
        text = (folder / "games.jsonl").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AuditError(f"{folder / 'games.jsonl'}: cannot read it: {e}") from None
    rows: list[tuple[int, dict[str, object] | str]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                obj = json.loads(line)
            except ValueError as e:
                obj = f"not JSON: {e}"
            rows.append((n, obj if isinstance(obj, dict | str) else "not a JSON object"))
    return rows


@dataclass(frozen=True, slots=True)
class AuditReport:
    """An audit's outcome: ``problems`` (one line each, empty when every check passed), the ``games``
    checked and ``records`` verified, and whether the master seed was ``revealed`` (without it the deal
    seeds cannot be tied to the commitment)."""

    problems: tuple[str, ...]
    games: int
    records: int
    revealed: bool
    league: str | None = None  # Published.league
    half_played: int = 0  # a closed league's pairs left half played, each its pairing's last (_half_pairs)


def audit(folder: Path, seed_hex: str | None = None) -> AuditReport:
    """Audit the published tournament in ``folder`` (module docstring).
    :raises AuditError: the folder does not publish a tournament (:func:`load_published`)."""
    pub = load_published(folder, seed_hex)
    problems: list[str] = []
    if pub.master_seed is not None and commitment(pub.master_seed) != pub.commitment:
        problems.append(f"commitment.json: the revealed master seed hashes to {commitment(pub.master_seed)}, "
                        f"not the committed {pub.commitment}")
    seen: dict[str, set[int]] = {}
    clocks: dict[str, list[str]] = {}
    records = 0
    for n, row in _rows(folder):
        where = f"games.jsonl line {n}"
        if isinstance(row, str):
            problems.append(f"{where}: {row}")
            continue
        where += f" ({row.get('game_id')})"
        try:
            slot = _slot(pub, str(row.get("game_id")))
        except ValueError as e:
            problems.append(f"{where}: {e}")
            continue
        if slot.n in seen.setdefault(f"{slot.i}-{slot.j}", set()):
            problems.append(f"{where}: published twice")
        seen[f"{slot.i}-{slot.j}"].add(slot.n)
        found = _check_schedule(pub, slot, row) + _check_score(row) + _check_record(folder, pub, row, clocks)
        records += row.get("record") is not None
        problems += [f"{where}: {p}" for p in found]
    problems += _odd_clocks(clocks)
    half: list[str] = []
    if pub.master_seed is not None:
        problems += _half_pairs(pub, seen, half)
    return AuditReport(tuple(problems), sum(len(v) for v in seen.values()), records, pub.master_seed is not None,
                       pub.league, len(half))


def _odd_clocks(clocks: Mapping[str, list[str]]) -> list[str]:
    """A line for each game whose record has another time control than most of the tournament's (a
    tournament has one: a game given a tighter clock could make one bot time out)."""
    if len(clocks) < 2:
        return []
    usual = max(clocks, key=lambda k: len(clocks[k]))
    return [f"games.jsonl: {game}'s record has the time control {clock}, but {len(clocks[usual])} of the "
            f"tournament's records have {usual}" for clock, games in sorted(clocks.items()) if clock != usual
            for game in games]


def _half_pairs(pub: Published, seen: Mapping[str, set[int]], half: list[str]) -> list[str]:
    """A line for each duplicate pair with one game published, and for each pair skipped (a later pair of
    the pairing published, not this one): once the tournament is over (its seed revealed), every pairing
    plays its pairs 0, 1, ... in full, in a round robin and a ladder alike (a blind round robin interleaves
    the pairings in an order keyed by the master seed, but plays each pairing's pairs in their order:
    :func:`arena.tournament.schedule.blind_order`). A closed league (``arena competition close``) may have
    left its pairing's **last** pair half played (served until then, it was stopped, or an entrant retired
    or left out, between the pair's two games): such a pair goes in ``half`` (its lone game's id), not a
    failure; a half-played pair before its pairing's last still is one."""
    out = []
    for key, games in sorted(seen.items()):
        for n in sorted(games):
            if n ^ 1 not in games:
                if pub.league == "closed" and n // 2 == max(games) // 2:
                    half.append(f"{pub.name}-p{key}-g{n}")
                    continue
                out.append(f"games.jsonl: {pub.name}-p{key}-g{n ^ 1} is not published, yet its twin "
                           f"{pub.name}-p{key}-g{n} is (a duplicate pair is two games)")
        last = max(games) // 2
        skipped = [k for k in range(last) if 2 * k not in games and 2 * k + 1 not in games]
        if skipped:
            out.append(f"games.jsonl: pairing {pub.name}-p{key} publishes pair {last} but not pair(s) "
                       f"{', '.join(map(str, skipped))} (a pairing's pairs are played in order)")
    return out


def _seeds_line(report: AuditReport) -> str:
    """What the OK line says of the deal seeds: tied to the commitment, or why not and what was checked."""
    if not report.revealed and report.league == "served":
        return ("the league's master seed is not revealed yet (`arena competition close` reveals it once the league "
                "is over): its games were checked against their records and the schedule (sides, pairs, first "
                "dealers), their deal seeds not against the commitment")
    if not report.revealed:
        return "master seed not revealed: deal seeds not tied to the commitment (pass --seed once it is)"
    line = "every deal seed from the committed master seed"
    if report.half_played:
        line += (f"; {report.half_played} pair(s) of the closed league left half played, each its pairing's last "
                 "(the league stopped, or an entrant left, between the pair's two games)")
    return line


def main(argv: list[str] | None = None) -> int:
    """``python -m arena.audit OUTPUT [--seed HEX]``: 0 all checks pass, 1 a problem, 2 not a tournament."""
    ap = argparse.ArgumentParser(prog="python -m arena.audit", description=__doc__.splitlines()[0])
    ap.add_argument("output", type=Path, help="a tournament's output folder (or a copy of its public files)")
    ap.add_argument("--seed", help="the revealed master seed (64 hex digits), when ratings.json does not hold it")
    args = ap.parse_args(argv)
    try:
        report = audit(args.output, args.seed)
    except AuditError as e:
        print(f"audit: {e}", file=sys.stderr)
        return 2
    for line in report.problems:
        print(f"FAIL {line}", file=sys.stderr)
    if report.problems:
        return 1
    print(f"OK {report.games} games, {report.records} records verified; {_seeds_line(report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
