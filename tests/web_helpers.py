"""Shared by the arena web tests: a real tournament's output folder, live files made from real
records, what a seat may see at each step of a record (worked out here from the engine state,
independently of the viewer's frames), and a file whose reads stall (:func:`stalling`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
from conftest import require

from arena.report.live import LiveLog
from referee.dealing import deck_for
from referee.events import Event, step_events
from referee.rules import Phase, RuleSet, apply, deal, legal_actions, new_game, parse_action, parse_deck

ROOT = Path(__file__).resolve().parent.parent
#: Debian's chromium (scripts/setup.d/20-chromium.sh), driven by playwright through executable_path.
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
#: A bot name that would run as script if a page did not escape it.
EVIL = "<script>alert(1)</script>"
CARD = re.compile(r'"([2-9TJQKA][SHDC])"')

CONFIG = """
[tournament]
name = "web"
players = 4
games_per_pairing = 2
concurrency = 2
output = "out"
master_seed = "{seed}"

[tournament.rules]
target = 14  # at most 9 points a deal: every game has two deals or more

[tournament.time_control]
decision_ms = 2000
bank_ms = 30000
join_ms = 10000

[[bots]]
name = "{evil}"
version = "<b>v1</b>"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.heuristic:HeuristicBot", "--log-level", "warning"]
cwd = "{root}"

[[bots]]
name = "random"
version = "1"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"]
cwd = "{root}"
"""


def run_tournament(folder: Path, seed: str = "11" * 32) -> Path:
    """A real 4-player tournament (2 games, embedded referee) into ``folder/out``; returns that folder."""
    cfg = folder / "web.toml"
    cfg.write_text(CONFIG.format(evil=EVIL.replace('"', '\\"'), root=ROOT, seed=seed))
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap", "100"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "out"


def set_blind(folder: Path, blind: bool) -> None:
    """The public facts stored in ``folder`` say ``blind_seats`` (as the arena stores a blind tournament's)."""
    with sqlite3.connect(folder / "arena.sqlite") as db:
        (raw,) = db.execute("SELECT value FROM meta WHERE key = 'public_facts'").fetchone()
        db.execute("UPDATE meta SET value = ? WHERE key = 'public_facts'",
                   (json.dumps({**json.loads(raw), "blind_seats": blind}),))


def record_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def seat_knowledge(lines: list[dict[str, Any]], seat: int) -> Iterator[tuple[str, set[str], set[str]]]:
    """For each record line after the header (that makes a frame): (line type, the cards ``seat``
    may know then — its hand, kicks, cards played or exposed so far —, the other seats' hidden
    cards then — held, not exposed, not played)."""
    rules_players = len(lines[0]["seat_names"])
    rules = RuleSet.from_dict(lines[0]["rules"])
    state = None
    public: set[str] = set()
    for o in lines[1:]:
        t = o["type"]
        if t == "game":
            state = new_game(rules, o["dealer"])
        elif t == "deal":
            assert state is not None
            state = deal(state, parse_deck(o["deck"]))
        elif t == "action":
            assert state is not None
            action = parse_action(o["action"])
            state = apply(state, action, o["seat"])
            public.add(o["action"].split()[-1].upper())
        if state is not None and state.deals:
            public |= {str(c) for c in state.deals[-1].kicks}
        if state is not None:
            exposed = {str(c) for e in state.exposed for c in e}
            public |= exposed
        hands = state.hands if state is not None and state.hands else ((),) * rules_players
        own = {str(c) for c in hands[seat]}
        hidden = {str(c) for s, h in enumerate(hands) if s != seat for c in h} - public
        if state is not None:
            hidden |= {str(c) for c in state.deck[state.pos:]} - public  # the undealt pack
        if t == "rejected" and o["seat"] != seat:
            continue  # only the seat that sent it was told (no frame in other seats' views)
        if t in ("game", "deal", "action", "rejected", "game_end", "result"):
            yield t, own | public, hidden


def cards_in(value: Any) -> set[str]:
    """Every card token (``"TH"``) in a JSON value."""
    return set(CARD.findall(json.dumps(value)))


def live_from_record(output: Path, lines: list[dict[str, Any]], game_id: str, pair_id: str,
                     upto: int | None = None) -> LiveLog:
    """A live file for ``game_id`` written by :class:`arena.report.live.LiveLog` from the public events a
    referee would send for the record ``lines`` (the first ``upto`` lines); returned open (the caller
    closes it, which removes the file)."""
    head = lines[0]
    seed_line = lines[-1]
    log = LiveLog(output, game_id, pair_id, head["seat_names"], head["rules"], bytes.fromhex(seed_line["seed"]))
    rules = RuleSet.from_dict(head["rules"])
    state = None
    game = 0
    for o in lines[1:upto]:
        t = o["type"]
        if t == "game":
            game = o["game"]
            state = new_game(rules, o["dealer"])
            log.event(Event("game_started", game, dealer=o["dealer"]))
        elif t == "deal":
            before = state
            assert before is not None
            state = deal(before, parse_deck(o["deck"]))
            for ev in step_events(game, before, state, None, None):
                log.event(ev)
        elif t == "action":
            before = state
            assert before is not None
            action = parse_action(o["action"])
            state = apply(before, action, o["seat"])
            for ev in step_events(game, before, state, action, o["seat"]):
                log.event(ev)
        elif t == "game_end":
            log.event(Event("game_ended", game, scores=tuple(o["scores"]), winner=o["winner"]))
    return log


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium browser (playwright), closed on exit; ``require``s the browser and the package."""
    require(Path(CHROMIUM).exists(), f"{CHROMIUM} is missing (run scripts/setup.sh: Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the test extra installs it
        require(False, "the playwright package is missing (pip install -e '.[test]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield b
        finally:
            b.close()


def free_port() -> int:
    """A TCP port of 127.0.0.1 free now (the caller binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def arena_web(output: Path, timeout: float = 120) -> Iterator[str]:
    """``arena web OUTPUT`` in a process of its own on a free loopback port; yields its base URL once
    ``/api/games`` answers (polled, at most ``timeout`` seconds); stopped with SIGTERM on exit."""
    base = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", str(output), "--port", base.rsplit(":", 1)[1]],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                if httpx.get(f"{base}/api/games", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "arena web did not answer"
            time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=10)


def random_record(seed: int, players: int, target: int) -> list[dict[str, Any]]:
    """Record lines (docs/record.md) of one random game: header, game, deals, actions, game_end."""
    rng = random.Random(seed)
    rules = RuleSet(players=players, target=target)
    key = seed.to_bytes(32, "big")
    dealer = rng.randrange(players)
    lines: list[dict[str, Any]] = [
        {"type": "header", "rules": rules.to_dict(), "seat_names": [f"bot{s}" for s in range(players)], "games": 1},
        {"type": "game", "game": 1, "dealer": dealer},
    ]
    state = new_game(rules, dealer)
    for _ in range(2000):  # far more steps than a game to 14 takes
        if state.phase is Phase.OVER:
            break
        if state.phase is Phase.DEAL:
            deck = deck_for(key, 1, state.deal_number + 1)
            lines.append({"type": "deal", "game": 1, "deal": state.deal_number + 1, "dealer": state.dealer,
                          "deck": [str(c) for c in deck]})
            state = deal(state, deck)
            continue
        seat = state.to_act
        action = rng.choice(legal_actions(state))
        lines.append({"type": "action", "game": 1, "deal": state.deal_number, "seat": seat, "action": str(action),
                      "by": "bot", "out_of_turn": False})
        state = apply(state, action, seat)
    assert state.phase is Phase.OVER
    lines.append({"type": "game_end", "game": 1, "scores": list(state.scores), "winner": state.winner})
    return lines


@contextlib.contextmanager
def stalling(path: Path) -> Iterator[None]:
    """``path`` under a write lease of this process (``F_SETLEASE``): any other open of it, to read too, waits
    until the lease is let go on exit (or the kernel breaks it, after /proc/sys/fs/lease-break-time seconds),
    as a read of a slow disk would. The kernel tells the lease's holder with SIGURG, which is ignored. (Not a
    named pipe: the web takes only regular files for live files, so it would never open one.)"""
    fd = os.open(path, os.O_WRONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        yield
    finally:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)  # the stalled readers go on
        os.close(fd)


def held_yet_others_answer(client: httpx.Client, held: Sequence[str], other: str = "/api/games") -> httpx.Response:
    """GET each of ``held`` (which a stalled read holds: each must time out within 1 s, else the test proves
    nothing), then GET ``other``, a page that reads none of it: its answer, or the test fails when it times out
    too (the server waited on the stalled read on its event loop)."""
    import pytest

    for url in held:
        with pytest.raises(httpx.TimeoutException):
            client.get(url, timeout=1)
    try:
        return client.get(other)
    except httpx.TimeoutException:
        pytest.fail(f"a stalled read of {', '.join(held)} stalled every other request ({other})")
