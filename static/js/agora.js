// Agora's only script of its own: small behaviours htmx does not cover. Served as a file because
// the Content-Security-Policy allows no inline script.
(function () {
  "use strict";

  // The language switcher submits itself (a <noscript> button covers pages without script).
  document.addEventListener("change", function (event) {
    var select = event.target.closest && event.target.closest("select[data-autosubmit]");
    if (select) select.form.submit();
  });

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

  // A live page's socket closed by the server for a reason the viewer should know: say why,
  // in the words the page carries (translated by the server), and do not reconnect.
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
})();
