// The replay viewer: steps through the frames built by the server (arena/web/frames.py).
// It never computes what a seat can see: a per-seat page only holds that seat's frames.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  // A page carries each frame as its changes from the one before (arena/web/frames.py, compact_frames):
  // "_gone" lists the keys it drops, "_more" the items its lists gained. The JSON API sends whole frames.
  function expand(compact) {
    const out = [];
    let before = {};
    compact.forEach(function (change) {
      const frame = Object.assign({}, before);
      (change._gone || []).forEach(function (k) { delete frame[k]; });
      const more = change._more || {};
      Object.keys(more).forEach(function (k) { frame[k] = before[k].concat(more[k]); });
      Object.keys(change).forEach(function (k) { if (k !== "_gone" && k !== "_more") frame[k] = change[k]; });
      out.push(frame);
      before = frame;
    });
    return out;
  }
  let frames = data.frames_compact ? expand(data.frames) : data.frames;
  let at = 0;
  // A frame with cards on the table: the page opens at the first one (not the empty table before
  // the first deal), unless its address names a step (#step=12, counted from 1 as shown); a spectator
  // page (a running game) opens at its newest step.
  function hasCards(f) {
    return (f.hands || []).some(function (h) { return h && h.length; }) ||
      (f.hand_sizes || []).some(function (n) { return n > 0; });
  }
  function stepInHash() {
    const m = /^#step=(\d+)$/.exec(window.location.hash);
    return m ? Number(m[1]) - 1 : null;
  }
  const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  const $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function card(c, extra) {
    const rank = c.slice(0, -1) === "T" ? "10" : c.slice(0, -1);
    const suit = c.slice(-1);
    const e = el("span", "card" + (suit === "H" || suit === "D" ? " red" : "") + (extra ? " " + extra : ""));
    e.dataset.card = c;
    e.title = c;
    e.appendChild(el("span", "rank", rank));
    e.appendChild(el("span", "suit", SUITS[suit] || suit));
    return e;
  }
  function back() { const e = el("span", "card back"); e.dataset.back = "1"; return e; }
  function positions(n, view) {
    // seat shown at the bottom: the viewed seat, else seat 0; the others clockwise (to the right)
    const me = typeof view === "number" ? view : 0;
    const spots = n === 2 ? ["s", "n"] : ["s", "w", "n", "e"];
    const out = {};
    for (let k = 0; k < n; k++) out[(me + k) % n] = spots[k];
    return out;
  }
  function renderSeat(f, s, pos) {
    const box = el("div", "seat pos-" + pos + (f.to_act === s ? " to-act" : ""));
    box.id = "seat-" + s;
    const who = "seat " + s + " · " + data.seat_names[s] + (f.dealer === s ? " · dealer" : "");
    box.appendChild(el("h3", "", who));
    const row = el("div", "cards hand");
    const hand = f.hands ? f.hands[s] : null;
    const exposed = (f.exposed || []).filter(function (x) { return x[0] === s; }).map(function (x) { return x[1]; });
    if (hand) {
      hand.forEach(function (c) { row.appendChild(card(c, exposed.indexOf(c) >= 0 ? "exposed" : "")); });
    } else {
      exposed.forEach(function (c) { row.appendChild(card(c, "exposed")); });
      for (let k = exposed.length; k < (f.hand_sizes ? f.hand_sizes[s] : 0); k++) row.appendChild(back());
    }
    box.appendChild(row);
    return box;
  }
  function renderCenter(f) {
    const c = el("div", "center");
    c.id = "trick";
    const shown = f.trick && f.trick.length ? { cards: f.trick, leader: f.trick_leader, winner: null }
      : (f.trick_done && f.won_trick ? { cards: f.won_trick.cards, leader: null, winner: f.won_trick.winner } : null);
    c.appendChild(el("div", "meta", shown ? (shown.winner !== null ? "trick won by seat " + shown.winner : "trick, led by seat " + shown.leader) : "phase: " + f.phase));
    const row = el("div", "cards");
    if (shown) shown.cards.forEach(function (x) { row.appendChild(card(x)); });
    c.appendChild(row);
    c.appendChild(el("div", "meta", "tricks this deal: " + (f.tricks ? f.tricks.length : 0)));
    return c;
  }
  function render() {
    const f = frames[at];
    if (!f) return;
    $("step-text").textContent = f.text;
    if (window.location.hash !== "#step=" + (at + 1)) history.replaceState(null, "", "#step=" + (at + 1));
    $("position").textContent = "step " + (at + 1) + " of " + frames.length + " · game " + f.game + " · deal " + f.deal;
    $("slider").max = String(frames.length - 1);
    $("slider").value = String(at);
    const felt = $("felt");
    felt.replaceChildren();
    const pos = positions(data.players, data.view);
    for (let s = 0; s < data.players; s++) felt.appendChild(renderSeat(f, s, pos[s]));
    felt.appendChild(renderCenter(f));
    const ev = $("events");
    ev.replaceChildren(el("li", "what", f.text));  // what happened, then the step's public events
    (f.events || []).forEach(function (t) { ev.appendChild(el("li", "", t)); });
    if (f.result_seats) f.result_seats.forEach(function (s) {
      ev.appendChild(el("li", "", "seat " + s.seat + " (" + s.name + "): " + s.termination + (s.detail ? " — " + s.detail : "")
        + (s.connected_at_end === true ? " · connected at the end" : s.connected_at_end === false ? " · gone before the end" : "")));
    });
    const sc = f.final_scores || f.scores || [0, 0];
    $("score").textContent = "side 0: " + sc[0] + " · side 1: " + sc[1] + "  (games won " + f.games_won.join("–") + ")";
    $("score").dataset.scores = sc.join("-");
    $("trump").textContent = "trump: " + (f.trump ? SUITS[f.trump] + " " + f.trump : "—") + (f.begged ? " · begged" : "");
    const kicks = $("kicks");
    kicks.replaceChildren(el("span", "meta", "kicks: "));
    (f.kicks || []).forEach(function (c) { kicks.appendChild(card(c, "small")); });
    const pts = $("points");
    pts.replaceChildren();
    (f.points || []).forEach(function (p) { pts.appendChild(el("li", "", "side " + p.side + ": " + p.kind.replace("_", " ") + " +" + p.value)); });
  }
  function go(k) { at = Math.max(0, Math.min(frames.length - 1, k)); render(); }
  function seek(dir, test) {
    for (let k = at + dir; k >= 0 && k < frames.length; k += dir) if (test(frames[k])) return go(k);
    go(dir > 0 ? frames.length - 1 : 0);
  }
  const isTrick = function (f) { return f.trick_done; };
  const isDeal = function (f) { return f.kind === "deal"; };
  const actions = {
    first: function () { go(0); }, last: function () { go(frames.length - 1); },
    prev: function () { go(at - 1); }, next: function () { go(at + 1); },
    "prev-trick": function () { seek(-1, isTrick); }, "next-trick": function () { seek(1, isTrick); },
    "prev-deal": function () { seek(-1, isDeal); }, "next-deal": function () { seek(1, isDeal); },
  };
  Object.keys(actions).forEach(function (id) { $(id).addEventListener("click", actions[id]); });
  $("slider").addEventListener("input", function (e) { go(Number(e.target.value)); });
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "INPUT" && e.target.type !== "range") return;
    const map = { ArrowLeft: e.shiftKey ? "prev-deal" : "prev", ArrowRight: e.shiftKey ? "next-deal" : "next",
      ArrowUp: "prev-trick", ArrowDown: "next-trick", Home: "first", End: "last" };
    if (map[e.key]) { e.preventDefault(); actions[map[e.key]](); }
  });
  // a spectator page: fetch the (delayed) frames again every few seconds; stay at the end if there
  if (data.running && data.game_id) {
    setInterval(async function () {
      const r = await fetch("/api/live/" + encodeURIComponent(data.game_id));
      if (!r.ok) { $("delay-note").textContent = "The game is over: its replay opens on the leaderboard once the other game of its pair is finished."; return; }
      const next = await r.json();
      const atEnd = at === frames.length - 1;
      frames = next.frames;
      if (atEnd) at = frames.length - 1;
      render();
    }, 3000);
  }
  window.addEventListener("hashchange", function () { const k = stepInHash(); if (k !== null && k !== at) go(k); });
  window.arenaViewer = { frames: function () { return frames; }, at: function () { return at; } };
  const named = stepInHash();
  const firstWithCards = frames.findIndex(hasCards);
  go(named !== null ? named : data.running ? frames.length - 1 : Math.max(0, firstWithCards));
})();
