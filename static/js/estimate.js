// The live stage's estimate of the time left (debates/time_left.py): the seconds the server
// estimated when it drew the stage, counted down from when that stage arrived, as the elapsed
// timer counts up. Each status frame (a turn starts or ends) brings a new stage and a new
// estimate; between them only this one-second tick runs, and it writes only when the words change.
(function () {
  "use strict";

  function timeLeft() {
    var out = document.querySelector("#debate-status [data-time-left]");
    if (!out) return;
    if (!out.agoraArrived) out.agoraArrived = Date.now();  // a new stage (each frame replaces it)
    var left = out.getAttribute("data-time-left");
    if (left === "") return;  // no rate yet: the server's "estimating…" stays
    var seconds = parseInt(left, 10) - Math.floor((Date.now() - out.agoraArrived) / 1000);
    var words = seconds < 60 ? out.getAttribute("data-soon")
      : out.getAttribute("data-minutes").replace("#", String(Math.round(seconds / 60)));
    if (out.textContent !== words) out.textContent = words;
  }

  // A stage that arrives is stamped at once (not at the next tick), so its countdown starts on time.
  document.addEventListener("htmx:wsAfterMessage", function () {
    var out = document.querySelector("#debate-status [data-time-left]");
    if (out && !out.agoraArrived) out.agoraArrived = Date.now();
  });
  timeLeft();
  setInterval(timeLeft, 1000);
})();
