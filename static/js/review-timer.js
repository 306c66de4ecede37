// Time on item for overlap answers: from the moment a queue card is shown to the
// moment its answer form is submitted, sent as "seconds" (the server caps it).
(() => {
  let shownAt = performance.now();
  const restart = () => { shownAt = performance.now(); };
  document.addEventListener("DOMContentLoaded", restart);
  document.addEventListener("htmx:afterSwap", (event) => {
    if (event.target && event.target.id === "queue-card") restart();
  });
  const stamp = (form) => {
    const field = form && form.querySelector(".answer-seconds");
    if (field) field.value = ((performance.now() - shownAt) / 1000).toFixed(1);
  };
  // htmx serialises the form after its submit event; "htmx:configRequest" lets us set
  // the value on the parameters it is about to send.
  document.addEventListener("submit", (event) => stamp(event.target), true);
  document.addEventListener("htmx:configRequest", (event) => {
    const form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("form");
    if (form && form.querySelector(".answer-seconds")) {
      event.detail.parameters.seconds = ((performance.now() - shownAt) / 1000).toFixed(1);
    }
  });
})();
