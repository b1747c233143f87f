// The replay of a finished debate (templates/debates/replay.html, debates/replay.py). The server
// decides the timing: for every turn, when it appears, when it ends, and segments [from ms, to ms,
// from character, to character] on the replay's clock; this script plays them. A turn's text is
// added as text nodes (never parsed as HTML), each character once and in order while it plays; when
// the turn ends, its finished form (rendered and sanitised by the server, as on the live page)
// replaces the plain text. Served as a file: the Content-Security-Policy allows no inline script.
// Every text it shows comes from the page (translated by the server).
(function () {
  "use strict";

  var root = document.getElementById("replay");
  var dataNode = document.getElementById("replay-data");
  if (!root || !dataNode) return;
  var data = JSON.parse(dataNode.textContent);
  var duration = data.duration;
  var playButton = document.getElementById("replay-play");
  var speedSelect = document.getElementById("replay-speed");
  var seekInput = document.getElementById("replay-seek");
  var timeLabel = document.getElementById("replay-time");
  var linkField = document.getElementById("replay-url");
  var endNote = document.getElementById("replay-end");

  var turns = data.turns.map(function (t) {
    var article = document.getElementById("replay-turn-" + t.id);
    return {
      at: t.at,
      end: t.end,
      segments: t.segments,
      chars: Array.from(t.text), // code points: a character never splits in two
      article: article,
      live: article.querySelector("[data-live]"),
      template: article.querySelector("template[data-final]"),
      speaking: article.querySelector(".speaking"),
      finished: null, // the finished form, once shown
      state: "hidden",
      shown: 0
    };
  });
  var sections = [];
  turns.forEach(function (turn) {
    var section = turn.article.closest("section.phase");
    var known = sections.filter(function (s) { return s.element === section; })[0];
    if (known) known.at = Math.min(known.at, turn.at);
    else sections.push({ element: section, at: turn.at, hidden: null });
  });

  var position = Math.min(Number(root.getAttribute("data-start")) || 0, duration);
  var speed = 1;
  var playing = false;
  var last = 0;
  var shownSecond = -1;

  function charsAt(turn, t) {
    var n = 0;
    for (var i = 0; i < turn.segments.length; i++) {
      var s = turn.segments[i];
      if (t >= s[1]) { n = s[3]; continue; }
      if (t > s[0]) n = s[2] + Math.floor((s[3] - s[2]) * (t - s[0]) / (s[1] - s[0]));
      else n = s[2];
      break;
    }
    return n;
  }

  function showFinished(turn, on) {
    if (!turn.live) return;
    if (on && !turn.finished && turn.template) {
      turn.finished = document.createElement("div");
      turn.finished.className = "replay-final";
      turn.finished.appendChild(turn.template.content.cloneNode(true));
      turn.live.after(turn.finished);
    } else if (!on && turn.finished) {
      turn.finished.remove();
      turn.finished = null;
    }
    turn.live.hidden = on && !!turn.finished;
  }

  // `continuous`: the clock moved on while playing, so the new characters are appended; a seek
  // draws each turn's text again as it stands at the new position.
  function drawTurn(turn, t, continuous) {
    var state = t < turn.at ? "hidden" : t >= turn.end ? "done" : "live";
    var n = state === "hidden" ? 0 : state === "done" ? turn.chars.length : charsAt(turn, t);
    // Playing, most turns neither move nor change state in a frame: they cost no DOM write (a
    // write, even of the same value, invalidates style for the whole page's next frame).
    if (continuous && state === turn.state && n === turn.shown) return;
    turn.article.hidden = state === "hidden";
    if (turn.live) {
      if (continuous && n >= turn.shown) {
        if (n > turn.shown) {
          turn.live.appendChild(document.createTextNode(turn.chars.slice(turn.shown, n).join("")));
          turn.live.normalize();  // one text node: a node per frame made each frame's layout longer
        }
      } else if (n !== turn.shown || !continuous) {
        turn.live.textContent = turn.chars.slice(0, n).join("");
      }
    }
    turn.shown = n;
    if (state !== turn.state) {
      showFinished(turn, state === "done");
      turn.article.classList.toggle("turn-running", state === "live");
      turn.article.classList.toggle("turn-done", state !== "live");
      if (state === "live") turn.article.setAttribute("aria-busy", "true");
      else turn.article.removeAttribute("aria-busy");
      if (turn.speaking) turn.speaking.hidden = state !== "live";
      turn.state = state;
    }
  }

  function clock(ms) {
    var s = Math.floor(ms / 1000);
    var m = Math.floor(s / 60);
    s = s % 60;
    return m + ":" + (s < 10 ? "0" : "") + s;
  }

  function seconds(ms) {
    return String(Math.round(ms / 100) / 10);
  }

  function drawControls(force) {
    root.setAttribute("data-position", String(Math.round(position)));
    seekInput.value = String(Math.round(position));
    var second = Math.floor(position / 1000);
    if (second === shownSecond && !force) return;
    shownSecond = second;
    timeLabel.textContent = clock(position) + " / " + clock(duration);
    seekInput.setAttribute("aria-valuetext",
      root.getAttribute("data-of").replace("{at}", clock(position)).replace("{total}", clock(duration)));
    // The address carries the position: a reload, or the link copied, starts here.
    var url = new URL(window.location.href);
    url.searchParams.set("t", seconds(position));
    window.history.replaceState(window.history.state, "", url);
    if (linkField) linkField.value = url.href;
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  }

  function draw(continuous) {
    var follow = continuous && nearBottom();
    var before = document.documentElement.scrollHeight;
    turns.forEach(function (turn) { drawTurn(turn, position, continuous); });
    sections.forEach(function (s) {
      var hidden = position < s.at;
      if (s.hidden !== hidden) s.element.hidden = s.hidden = hidden;
    });
    if (endNote.hidden !== position < duration) endNote.hidden = position < duration;
    drawControls(!continuous);
    // The reader at the bottom follows the text as it grows; one who scrolled up stays there.
    if (follow && document.documentElement.scrollHeight > before) {
      window.scrollTo(0, document.documentElement.scrollHeight);
    }
  }

  function label() {
    var name = playing ? "data-pause" : position >= duration ? "data-again" : "data-play";
    playButton.textContent = root.getAttribute(name);
    playButton.setAttribute("aria-pressed", playing ? "true" : "false");
  }

  function tick(now) {
    if (!playing) return;
    position = Math.min(duration, position + Math.max(0, now - last) * speed);
    last = now;
    draw(true);
    if (position >= duration) {
      pause();
      return;
    }
    window.requestAnimationFrame(tick);
  }

  function play() {
    if (playing) return;
    if (position >= duration) seek(0);
    playing = true;
    last = performance.now();
    label();
    window.requestAnimationFrame(tick);
  }

  function pause() {
    playing = false;
    label();
    drawControls(true);
  }

  function seek(ms) {
    position = Math.max(0, Math.min(duration, ms));
    last = performance.now();
    draw(false);
    label();
  }

  playButton.addEventListener("click", function () {
    if (playing) pause();
    else play();
  });
  speedSelect.addEventListener("change", function () {
    speed = Number(speedSelect.value) || 1;
  });
  seekInput.addEventListener("input", function () {
    seek(Number(seekInput.value));
  });
  root.addEventListener("click", function (event) {
    var mark = event.target.closest && event.target.closest("a[data-at]");
    if (!mark) return;
    event.preventDefault();
    seek(Number(mark.getAttribute("data-at")));
    var first = turns.filter(function (t) { return t.at >= Number(mark.getAttribute("data-at")); })[0];
    if (first) first.article.scrollIntoView({ block: "start" });
  });

  speed = Number(speedSelect.value) || 1;
  draw(false);
  play();
})();
