// The live leaderboard: a Server-Sent Events stream says when a game finished; the page then
// reloads its two parts (board, games list with the same filters) from the server.
(function () {
  "use strict";
  const dot = document.getElementById("live-dot");
  const state = document.getElementById("live-state");
  let first = true;
  async function refresh() {
    const q = window.location.search;
    const [board, games] = await Promise.all([fetch("/_board" + q), fetch("/_games" + q)]);
    if (board.ok) document.getElementById("board").innerHTML = await board.text();
    if (games.ok) document.getElementById("games").innerHTML = await games.text();
  }
  const source = new EventSource("/events");
  source.addEventListener("error", function () { dot.classList.remove("on"); state.textContent = "reconnecting…"; });
  source.addEventListener("games", function (e) {
    // "live" while an arena runs on this folder; once the run has ended the page is final.
    const running = JSON.parse(e.data).running;
    dot.classList.toggle("on", running);
    state.textContent = running ? "live" : "run ended";
    if (first) { first = false; return; }  // the page was rendered with this state already
    refresh().catch(function () {});
  });
})();
