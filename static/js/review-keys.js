// Review-queue keyboard: every key clicks (or focuses) a visible control on the page,
// and each control shows its key. j/k next/previous, a accept, p/f pass/fail, 1-9 flip
// verdict n, u undo, s skip, x flag (focuses the reason), c comment box, ? guidelines
// and keys. Keys are ignored while typing in a form field.
//
// Keys are never lost: one pressed while the card is loading (or while it moves on
// after an answer) waits in line and runs, in order, once the new card is in; the
// line is shown under the card's navigation. A key that cannot run (no such control
// on this card, or the line is full) is refused with a visible message.
//
// The reviewer's preferences (#queue-page's data attributes, set on /preferences/):
// - data-shortcuts="off": no single-character key does anything (WCAG 2.1.4); every
//   action keeps its button, and Ctrl+Enter still sends a comment (evalsite.js).
// - data-advance="on": accept, pass and fail move on to the next item once the
//   answer is in (not when the card comes back with an error). `u` on the next item
//   then goes back and undoes the answer just given.
(() => {
  const isTyping = (el) =>
    el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));

  const help = () => document.getElementById("keys-help");
  const page = () => document.getElementById("queue-page");
  const card = () => document.getElementById("queue-card");
  const shortcutsOn = () => page()?.dataset.shortcuts !== "off";
  const advanceOn = () => page()?.dataset.advance === "on";

  const toggleHelp = () => {
    const dialog = help();
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  };

  // Keys waiting for the card; more than this and the reviewer has lost track.
  const PENDING_MAX = 20;
  const pending = [];
  // A request from the card is in flight: the card is about to be replaced.
  let busy = false;
  // The new card is in the page but htmx has not yet set up its controls (that
  // happens when it settles): a click on its links now would load a whole page,
  // and the keys pressed meanwhile would be lost with the old one.
  let settling = false;
  // An answer (accept, pass, fail) was sent and the next item should follow it.
  let advancePending = false;
  // The move to the next item after an answer is under way (its request is not an
  // ordinary navigation, which forgets the answer `u` would undo).
  let advancing = false;
  // The answer `u` undoes once the card has moved on: {position, undoUrl, url}.
  let lastAnswer = null;
  let sentAnswer = null;

  const isAnswer = (elt) =>
    elt && elt.closest && elt.closest("#queue-card") && elt.closest("form[data-answer], #answer-form");

  const status = () => document.getElementById("key-status");
  let statusTimer = null;
  const say = (text, refused) => {
    const box = status();
    if (!box) return;
    box.textContent = text;
    box.classList.toggle("refused", Boolean(refused));
    clearTimeout(statusTimer);
    if (text && refused) statusTimer = setTimeout(() => say(pending.length ? waitingText() : ""), 4000);
  };
  const waitingText = () => `Loading… keys waiting: ${pending.join(" ")}`;
  const showPending = () => say(pending.length ? waitingText() : "");

  const REFUSALS = {
    j: "no next item", k: "no previous item", a: "nothing to accept here",
    p: "cannot answer here", f: "cannot answer here", u: "nothing of yours to undo here",
    s: "nothing else waits for you", x: "this item cannot be flagged here",
  };
  const refuse = (key) => say(`Key ${key}: ${REFUSALS[key] || "no such control on this card"}.`, true);

  // Key u on the card after an answer moved it on: back to that item, undoing it.
  const undoPrevious = () => {
    const answer = lastAnswer;
    lastAnswer = null;
    const here = card();
    if (!answer || !here || !window.htmx) return false;
    if (String(answer.position) === here.dataset.position) return false;
    if (!answer.undoUrl) {
      say("Key u: answers in this queue are changed by answering again; going back to it.", true);
      window.htmx.ajax("GET", answer.url, { source: here, target: "#queue-card", swap: "outerHTML" })
        .then(() => window.history.pushState({}, "", answer.url));
      return true;
    }
    window.htmx.ajax("POST", answer.undoUrl, {
      source: here, target: "#queue-card", swap: "outerHTML", values: { back: "1" },
    });
    return true;
  };

  const runKey = (key) => {
    const here = card();
    if (!here) return;
    if (key === "c" || key === "x") {
      const box = here.querySelector(`[data-key-focus="${key}"]`) || (key === "x" && here.querySelector("#flag-reason"));
      if (!box) { refuse(key); return; }
      const panel = box.closest("details");
      if (panel) panel.open = true;
      box.focus();
      return;
    }
    if (key === "u" && lastAnswer && String(lastAnswer.position) !== here.dataset.position) {
      if (undoPrevious()) return;
    }
    const control = here.querySelector(`[data-key="${key}"]`);
    if (!control || control.disabled) { refuse(key); return; }
    control.click();
  };

  // Run waiting keys until one starts a request (its card will drain the rest).
  const drain = () => {
    while (pending.length && !busy && !settling && !advancePending) {
      runKey(pending.shift());
    }
    showPending();
  };

  document.addEventListener("htmx:beforeRequest", (event) => {
    const elt = event.target;
    if (!(elt.closest && (elt.closest("#queue-card") || elt.id === "queue-card"))) return;
    busy = true;
    const verb = (event.detail.requestConfig?.verb || "post").toLowerCase();
    if (isAnswer(elt) && verb === "post") {
      const here = card();
      sentAnswer = here ? {
        position: here.dataset.position, undoUrl: here.dataset.undoUrl || "",
        url: here.dataset.url || window.location.href,
      } : null;
      if (advanceOn()) advancePending = true;
    } else if (!advancing) {
      // Moving by hand: `u` is for the card in front of the reviewer again.
      lastAnswer = null;
    }
    advancing = false;
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const target = event.detail.target;
    if (event.detail.shouldSwap && target && target.id === "queue-card") settling = true;
  });
  document.addEventListener("htmx:swapError", () => {
    settling = false;
    drain();
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    busy = false;
    if (!event.detail.successful) {
      advancePending = false;
      sentAnswer = null;
      // Nothing was swapped: the card in front of the reviewer takes the keys.
      drain();
    }
  });
  document.addEventListener("htmx:afterSettle", (event) => {
    const here = card();
    if (!here || !(event.target === here || event.target.id === "queue-card")) {
      // A swap elsewhere (a comment added, a message): the card is unchanged.
      if (!busy && !settling && !advancePending) drain();
      return;
    }
    settling = false;
    if (sentAnswer) {
      if (!here.querySelector("#queue-error")) lastAnswer = sentAnswer;
      sentAnswer = null;
    }
    if (advancePending) {
      advancePending = false;
      const next = here.querySelector("#queue-error") ? null : here.querySelector("#queue-next");
      if (next) {
        advancing = true;
        next.click();
        if (busy) { showPending(); return; }
        advancing = false;
      }
    }
    drain();
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
    if (!card()) return;
    const key = event.key;
    if (!/^[jkapfusxc1-9]$/.test(key)) return;
    event.preventDefault();
    if (busy || settling || advancePending || pending.length) {
      if (pending.length >= PENDING_MAX) {
        say(`Busy: key ${key} not taken (${PENDING_MAX} keys already waiting).`, true);
        return;
      }
      pending.push(key);
      showPending();
      return;
    }
    runKey(key);
  });
})();
