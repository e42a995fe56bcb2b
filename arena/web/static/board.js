// The live leaderboard: a Server-Sent Events stream says when a game finished; the page then
// reloads its two parts (board, games list with the same filters) from the server.
(function () {
  "use strict";
  const dot = document.getElementById("live-dot");
  const state = document.getElementById("live-state");
  let first = true;
  async function refresh() {
    const q = window.location.search;
    const [board, games] = await Promise.all([fetch("/_board"), fetch("/_games" + q)]);
    if (board.ok) document.getElementById("board").innerHTML = await board.text();
    if (games.ok) document.getElementById("games").innerHTML = await games.text();
  }
  const source = new EventSource("/events");
  source.addEventListener("open", function () { dot.classList.add("on"); state.textContent = "live"; });
  source.addEventListener("error", function () { dot.classList.remove("on"); state.textContent = "reconnecting…"; });
  source.addEventListener("games", function () {
    if (first) { first = false; return; }  // the page was rendered with this state already
    refresh().catch(function () {});
  });
})();
