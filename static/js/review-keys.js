// Review-queue keyboard: every key clicks (or focuses) a visible control on the page.
// j/k next/previous, a accept, p/f pass/fail, 1-9 flip verdict n, u undo,
// c comment box, ? guidelines and keys. Keys are ignored while typing in a form field.
//
// The reviewer's preferences (#queue-page's data attributes, set on /preferences/):
// - data-shortcuts="off": no single-character key does anything (WCAG 2.1.4); every
//   action keeps its button, and Ctrl+Enter still sends a comment (evalsite.js).
// - data-advance="on": accept, pass and fail move on to the next item once the
//   answer is in (not when the card comes back with an error).
(() => {
  const isTyping = (el) =>
    el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));

  const help = () => document.getElementById("keys-help");
  const page = () => document.getElementById("queue-page");
  const shortcutsOn = () => page()?.dataset.shortcuts !== "off";
  const advanceOn = () => page()?.dataset.advance === "on";

  const toggleHelp = () => {
    const dialog = help();
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  };

  // While a request from the card is in flight, drop further keys: a second flip
  // would target the card that is about to be replaced.
  let busy = false;
  // An answer (accept, pass, fail) was sent and the next item should follow it.
  let advancePending = false;
  const isAnswer = (elt) =>
    elt && elt.closest && elt.closest("#queue-card") && elt.closest("form[data-answer], #answer-form");

  document.addEventListener("htmx:beforeRequest", (event) => {
    const elt = event.target;
    if (elt.closest && elt.closest("#queue-card")) busy = true;
    if (advanceOn() && isAnswer(elt) && (event.detail.requestConfig?.verb || "post") === "post") {
      advancePending = true;
    }
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    busy = false;
    if (!event.detail.successful) advancePending = false;
  });
  document.addEventListener("htmx:afterSettle", (event) => {
    if (!advancePending) return;
    const card = document.getElementById("queue-card");
    if (!card || !(event.target === card || event.target.id === "queue-card")) return;
    advancePending = false;
    if (card.querySelector("#queue-error")) return; // stay and show why
    card.querySelector("#queue-next")?.click();
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest("#keys-help-button")) { event.preventDefault(); toggleHelp(); }
    if (event.target.closest("#keys-help-close")) help()?.close();
  });

  // The guidelines panel stays open or closed as the reviewer left it.
  const PANEL_KEY = "evalsite.queueGuidelinesOpen";
  document.addEventListener("DOMContentLoaded", () => {
    const panel = document.getElementById("queue-guidelines-panel");
    if (!panel) return;
    try {
      if (localStorage.getItem(PANEL_KEY) === "false") panel.open = false;
    } catch (_) { /* storage off: keep the page's default */ }
    panel.addEventListener("toggle", () => {
      try { localStorage.setItem(PANEL_KEY, String(panel.open)); } catch (_) { /* ignore */ }
    });
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (!shortcutsOn()) return;
    if (event.key === "?") { event.preventDefault(); toggleHelp(); return; }
    if (help()?.open) return;
    const card = document.getElementById("queue-card");
    if (!card || busy) return;
    const key = event.key;
    if (key === "c") {
      const box = card.querySelector('[data-key-focus="c"]');
      if (box) { event.preventDefault(); box.focus(); }
      return;
    }
    if (!/^[jkapfu1-9]$/.test(key)) return;
    const control = card.querySelector(`[data-key="${key}"]`);
    if (!control || control.disabled) return;
    event.preventDefault();
    control.click();
  });
})();
