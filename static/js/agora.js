// Agora's only script of its own: small behaviours htmx does not cover. Served as a file because
// the Content-Security-Policy allows no inline script. Every text it shows comes from the page
// (translated by the server).
(function () {
  "use strict";

  // The language switcher submits itself (a <noscript> button covers pages without script).
  document.addEventListener("change", function (event) {
    var select = event.target.closest && event.target.closest("select[data-autosubmit]");
    if (select) select.form.submit();
  });

  // "Copy" beside a link: copy it, say so on the button for a moment.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var field = document.querySelector(button.getAttribute("data-copy"));
    if (!field) return;
    field.select();
    var done = function () {
      var label = button.textContent;
      button.textContent = button.getAttribute("data-copied") || label;
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
    } else {
      document.execCommand("copy");
      done();
    }
  });

  // The start form offers a reasoning effort only where the chosen model thinks before it answers
  // (o3, gpt-5, deepseek-reasoner...): the typed model, else the chosen provider's default, else
  // the server's. A chosen effort is never hidden. The names come from the page (debates/forms.py).
  function offerEffort() {
    var effort = document.getElementById("id_reasoning_effort");
    var field = document.getElementById("field-reasoning_effort");
    if (!effort || !field) return;
    var model = document.getElementById("id_model");
    var provider = document.getElementById("id_provider");
    var defaults = JSON.parse(effort.getAttribute("data-provider-defaults") || "{}");
    var name = (model && model.value.trim()) || (provider && defaults[provider.value]) ||
      effort.getAttribute("data-default-model") || "";
    var known = JSON.parse(effort.getAttribute("data-reasoning-models") || "[]");
    var rule = new RegExp("^(?:" + effort.getAttribute("data-reasoning-pattern") + ")$");
    var reasons = rule.test(name.toLowerCase().split("/").pop()) || known.indexOf(name) >= 0;
    field.hidden = !reasons && !effort.value;
  }
  document.addEventListener("input", function (event) {
    if (event.target.id === "id_model") offerEffort();
  });
  document.addEventListener("change", function (event) {
    if (event.target.id === "id_provider" || event.target.id === "id_model") offerEffort();
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", offerEffort);
  else offerEffort();

  // The setup link carries its code after "#", which no request (so no access log) contains:
  // copy it into the form, which posts it, and take it off the address bar and the history.
  var setupCode = document.getElementById("id_code");
  if (setupCode && setupCode.form && setupCode.form.hasAttribute("data-setup") && location.hash.length > 1) {
    if (!setupCode.value) setupCode.value = decodeURIComponent(location.hash.slice(1));
    history.replaceState(null, "", location.pathname + location.search);
  }

  // A character counter for a field that names one (data-counter: the counter's id; data-max).
  // Counts code points, as the server does, so an emoji is one; going over turns it red, and the
  // server refuses the question with its error beside the field (nothing is cut silently).
  function count(field) {
    var counter = document.getElementById(field.getAttribute("data-counter"));
    if (!counter) return;
    var max = parseInt(field.getAttribute("data-max"), 10);
    var length = Array.from(field.value).length;
    counter.textContent = length + " / " + max;
    counter.classList.toggle("over", length > max);
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("[data-counter]")) count(event.target);
  });
  // A restored draft (back button, reload) is counted too.
  function countAll() {
    document.querySelectorAll("[data-counter]").forEach(count);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", countAll);
  else countAll();
  window.addEventListener("pageshow", countAll);

  // A form sent back with errors (data-first-error on its summary): open what hides the first field
  // in error, scroll it into view and focus it, so an error below the fold is not missed; with no
  // field in error (only the form's own errors), the summary itself. Once per page load.
  function focusFirstError() {
    var summary = document.querySelector("[data-first-error]");
    var form = summary && summary.closest("form");
    if (!form) return;
    var list = form.querySelector(".errorlist:not(.nonfield)");
    var box = list && (list.closest(".field, fieldset") || list.parentElement);
    var target = box && box.querySelector(
      "input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled])");
    target = target || summary;
    for (var d = target.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    target.focus({ preventScroll: true });
    var shown = box || target;  // a tall box (the persona cards) from its top: legend and error first
    var show = function () {
      shown.scrollIntoView({ block: shown.offsetHeight > window.innerHeight * 0.8 ? "start" : "center" });
    };
    show();
    // Fonts and late content above it can move it after this: once loaded, show it again unless
    // the reader has moved on meanwhile.
    window.addEventListener("load", function () { if (document.activeElement === target) show(); }, { once: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusFirstError);
  else focusFirstError();

  // A live page's socket closed by the server for a reason the viewer should know: say why,
  // in the words the page carries, and do not reconnect.
  document.addEventListener("htmx:wsClose", function (event) {
    var live = event.target.closest ? event.target.closest("#live") : null;
    var code = event.detail && event.detail.event ? event.detail.event.code : 0;
    if (!live || code < 4000) return;
    var notice = document.getElementById("live-notice");
    var message = live.getAttribute("data-close-" + code) || live.getAttribute("data-close-other");
    if (notice && message) {
      notice.textContent = message;
      notice.hidden = false;
    }
    live.removeAttribute("ws-connect");
  });

  // A table (or picture) wider than a phone scrolls sideways: a keyboard reaches it too (axe's
  // scrollable-region-focusable); one that fits is left out of the tab order again.
  function scrollersFocusable() {
    document.querySelectorAll(".md table, table.ledger, table.history, .charts figure").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("data-scrolls", "");
      } else if (!scrolls && box.hasAttribute("data-scrolls")) {
        box.removeAttribute("tabindex");
        box.removeAttribute("data-scrolls");
      }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scrollersFocusable);
  else scrollersFocusable();
  window.addEventListener("resize", scrollersFocusable);
  document.addEventListener("htmx:afterSettle", scrollersFocusable);
  // (A live page's frames check them in its frame pass below, when a frame brings new content.)

  // -- the live stage ------------------------------------------------------------------------
  var live = document.getElementById("live");
  if (!live) return;
  var SYMBOLS = { queued: "…", loading_model: "…", running: "●", waiting: "⏸", done: "✓", failed: "✗",
                  stopped: "■", refused: "✗" };

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // The page title carries the state, so a background tab says what the debate is doing.
  function updateTitle() {
    var stage = document.getElementById("debate-status");
    var badge = stage && stage.querySelector(".badge");
    if (!stage || !badge) return;
    var symbol = SYMBOLS[stage.getAttribute("data-status")] || "";
    var title = (symbol ? symbol + " " : "") + badge.textContent.trim() + " · " + live.getAttribute("data-title");
    if (document.title !== title) document.title = title;  // unchanged most frames: no DOM write, no IPC
  }

  // The debate's running time: the seconds the server counted when it drew the stage (every
  // running span, across resumes and checkpoints), plus, while it runs, the time since this stage
  // arrived (measured here, so the two clocks need not agree). Paused while it waits or stopped.
  function updateElapsed() {
    var stage = document.getElementById("debate-status");
    var out = stage && stage.querySelector("[data-elapsed]");
    if (!out || !stage.hasAttribute("data-running")) return;
    if (!stage.agoraArrived) stage.agoraArrived = Date.now();  // a new stage (each frame replaces it)
    var seconds = parseFloat(stage.getAttribute("data-running")) || 0;
    if (stage.hasAttribute("data-ticking")) seconds += (Date.now() - stage.agoraArrived) / 1000;
    seconds = Math.floor(seconds);
    var hours = Math.floor(seconds / 3600);
    var text = (hours ? hours + ":" + pad(Math.floor(seconds / 60) % 60) : Math.floor(seconds / 60)) +
      ":" + pad(seconds % 60);
    if (out.textContent !== text) out.textContent = text;  // once a second, not once a frame
  }

  // Follow the speaking turn while the reader is at the bottom or watching it; once they scroll
  // away, leave the page where it is and offer a way back to the live turn.
  var jump = document.getElementById("jump-to-live");
  var wasFollowing = false;  // set from where the page opens, at the end
  function atBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  }
  function streaming() {
    var stage = document.getElementById("debate-status");
    var status = stage ? stage.getAttribute("data-status") : "";
    return ["queued", "loading_model", "running"].indexOf(status) >= 0;
  }
  function follow() {
    var running = live.querySelectorAll("article.turn-running");
    var target = running.length ? running[running.length - 1] : null;
    if (target) {
      var rect = target.getBoundingClientRect();
      if (rect.bottom > window.innerHeight) window.scrollBy(0, rect.bottom - window.innerHeight + 24);
    } else {
      window.scrollTo(0, document.documentElement.scrollHeight);
    }
  }
  function liveInView() {
    var running = live.querySelectorAll("article.turn-running");
    for (var i = 0; i < running.length; i++) {
      var rect = running[i].getBoundingClientRect();
      if (rect.top < window.innerHeight && rect.bottom > 0) return true;
    }
    return false;
  }
  // Once there is a result (the report, above the transcript), a way up to it from anywhere below.
  var toResult = document.getElementById("jump-to-result");
  // Written only when they change: a write, even of the same value, makes the frame work out its
  // styles a second time.
  function setHidden(el, hidden) {
    if (el.hidden !== hidden) el.hidden = hidden;
  }
  function showJump() {
    if (jump) setHidden(jump, atBottom() || liveInView() || !streaming());
    var title = document.getElementById("report-title");
    if (toResult) {
      var below = title && title.getBoundingClientRect().bottom < 0;
      setHidden(toResult, !below || (jump && !jump.hidden));
    }
  }
  if (toResult) {
    toResult.addEventListener("click", function (event) {
      var title = document.getElementById("report-title");
      if (!title) return;
      event.preventDefault();
      title.scrollIntoView({ block: "start" });
      title.focus({ preventScroll: true });
      toResult.hidden = true;
    });
  }
  // A scroll that is not the page's own following is the reader's: following or not is decided
  // again from where they are now (the frame pass below follows only if they still are).
  var ownScrollY = -1;
  window.addEventListener("scroll", function () {
    if (window.scrollY === ownScrollY) return;  // the frame pass's own scroll: it showed the buttons
    ownScrollY = -1;
    wasFollowing = atBottom() || liveInView();
    showJump();
  }, { passive: true });
  if (jump) {
    jump.addEventListener("click", function () {
      follow();
      jump.hidden = true;
    });
  }
  // Following: at the bottom, or with the speaking turn in view (where "Jump to live" leaves the
  // reader when the page's foot is taller than the bottom margin: it went on following then only
  // until the next turn started below the screen). Decided at the end of each frame pass, from the
  // layout that frame draws, and again by the reader's own scrolls; never when a message arrives:
  // by then a timer (the meter, htmx's settling) has often changed the page, and the read forced
  // another pass over the styles (with the same-value writes below, 2.7 passes per frame, not 1).
  var framePending = false;
  // A streaming speech begins with its form's label ("正文：", "Speech: "): it goes as soon as it
  // has arrived whole (the finished turn is drawn without it too). Checked only until the text
  // has outgrown the longest label, so a turn costs a handful of checks, not one per token. The
  // labels are the server's (`debates.engine.reading.BODY_LABELS`, in `data-body-labels`).
  var BODY_LABELS = (live.getAttribute("data-body-labels") || "").split("|").filter(Boolean);
  var LABEL = BODY_LABELS.length ? new RegExp("^\\s*(" + BODY_LABELS.map(function (label) {
    return label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("|") + ")\\s*[:：]\\s*", "i") : null;
  var LABEL_PREFIXES = [];
  BODY_LABELS.forEach(function (label) {
    LABEL_PREFIXES.push(label.toLowerCase() + "：", label.toLowerCase() + ":");
  });
  function dropLabels() {
    if (!LABEL) return;
    document.querySelectorAll(".text.live:not([data-unlabelled])").forEach(function (el) {
      var text = el.textContent;
      if (!text.trim()) return;
      var found = LABEL.exec(text);
      if (found) {
        el.textContent = text.slice(found[0].length);
        el.setAttribute("data-unlabelled", "");
        return;
      }
      var start = text.replace(/^\s+/, "").toLowerCase();
      var partial = LABEL_PREFIXES.some(function (label) { return label.indexOf(start) === 0; });
      if (!partial) el.setAttribute("data-unlabelled", "");
    });
  }
  // The token meter: the server sends it with a text frame at most four times a second
  // (debates/sink.py, METER_INTERVAL), and htmx swaps it in as it comes; each stage brings its own.

  // After a message: the writes at once (the title too, which a background tab shows and where no
  // animation frame runs), then every layout read and the follow-scroll in ONE animation frame
  // however many messages arrive before it, so a frame lays the page out once (reading a position
  // right after a swap forced a layout per message, and again for the next message's reads).
  var newContent = false;
  function framePass() {
    framePending = false;
    if (newContent) scrollersFocusable();
    newContent = false;
    if (wasFollowing && streaming()) {
      follow();
      ownScrollY = window.scrollY;
    }
    wasFollowing = atBottom() || liveInView();  // the layout follow() read: no second one
    showJump();
  }
  document.addEventListener("htmx:wsAfterMessage", function (event) {
    live.querySelectorAll("article.turn-running").forEach(function (turn) { turn.normalize(); });
    dropLabels();
    updateTitle();
    updateElapsed();
    var message = (event.detail && event.detail.message) || "";
    // A frame of text deltas and the meter adds no table: the sideways scrollers are checked only
    // for frames that bring new turns, a report or anything else.
    if (typeof message !== "string" || /<(article|section|table|figure)\b/.test(message)) newContent = true;
    if (!framePending) {
      framePending = true;
      requestAnimationFrame(framePass);
    }
  });
  // A person's deadline: minutes and seconds left, ticking (the server decides when it is over).
  function updateDeadline() {
    var out = document.querySelector("[data-deadline]");
    if (!out) return;
    var seconds = Math.max(0, Math.round((Date.parse(out.getAttribute("datetime")) - Date.now()) / 1000));
    out.textContent = Math.floor(seconds / 60) + ":" + pad(seconds % 60);
  }

  // A person's composer is for the person in the seat; the others read who is awaited.
  function showComposer() {
    document.querySelectorAll("#composer").forEach(function (form) {
      setHidden(form, form.getAttribute("data-seat") !== live.getAttribute("data-user"));
    });
  }
  document.addEventListener("htmx:wsAfterMessage", showComposer);

  showComposer();
  // A page opened before any speech ended follows from the first word; one with speeches to read
  // stays at the top unless the speaker is already in view ("Jump to live" takes the reader there).
  wasFollowing = atBottom() || liveInView() || !live.querySelector("article.turn:not(.turn-running)");
  showJump();
  updateTitle();
  updateElapsed();
  updateDeadline();
  setInterval(function () { updateElapsed(); updateDeadline(); }, 1000);
})();
