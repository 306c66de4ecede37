// Review-queue keyboard: every key clicks (or focuses) a visible control on the page.
// j/k next/previous, a accept, p/f pass/fail, 1-9 flip verdict n, u undo,
// c comment box, ? help. Keys are ignored while typing in a form field.
(() => {
  const isTyping = (el) =>
    el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));

  const help = () => document.getElementById("keys-help");

  const toggleHelp = () => {
    const dialog = help();
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  };

  // While a request from the card is in flight, drop further keys: a second flip
  // would target the card that is about to be replaced.
  let busy = false;
  document.addEventListener("htmx:beforeRequest", (event) => {
    if (event.target.closest && event.target.closest("#queue-card")) busy = true;
  });
  document.addEventListener("htmx:afterRequest", () => { busy = false; });

  document.addEventListener("click", (event) => {
    if (event.target.closest("#keys-help-button")) { event.preventDefault(); toggleHelp(); }
    if (event.target.closest("#keys-help-close")) help()?.close();
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
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
