// Small progressive enhancements; every page works without this file.
document.addEventListener("htmx:responseError", (event) => {
  const box = document.getElementById("messages");
  if (!box) return;
  const article = document.createElement("article");
  article.className = "flash flash-error";
  article.setAttribute("role", "alert");
  const status = event.detail.xhr.status;
  article.textContent = status === 403 ? "Your role does not allow this." : `Request failed (${status}).`;
  box.prepend(article);
});

// A <select data-autosubmit> submits its form when it changes (the <noscript> button
// does it without JS). Here rather than in onchange="…": the CSP allows no inline script.
document.addEventListener("change", (event) => {
  const select = event.target.closest && event.target.closest("select[data-autosubmit]");
  if (select && select.form) select.form.requestSubmit();
});

// A comment posted through htmx: empty the form and its errors, and drop the
// "No comments yet" line of its list.
document.addEventListener("htmx:afterRequest", (event) => {
  const form = event.target.closest && event.target.closest("form[data-comment-form]");
  if (!form || !event.detail.successful) return;
  form.reset();
  form.querySelector(".comment-errors")?.replaceChildren();
  document.querySelector(`${form.dataset.commentList} .no-comments`)?.remove();
});

// Ctrl+Enter (Cmd+Enter on a Mac) in a comment box sends the comment, on every page
// and whatever the single-key shortcut preference: it is not a single-key shortcut.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
  const box = event.target.closest && event.target.closest("form[data-comment-form] textarea");
  if (!box || !box.form) return;
  event.preventDefault();
  if (box.value.trim()) box.form.requestSubmit();
});

// The new-scorer form's name follows its kind (the kind's label) until it is edited by
// hand: a name still equal to the last default, or empty, becomes the new kind's label.
document.addEventListener("change", (event) => {
  const kind = event.target.closest && event.target.closest("select[data-name-follows]");
  if (!kind) return;
  const name = document.getElementById(kind.dataset.nameFollows);
  const label = kind.selectedOptions[0] && kind.selectedOptions[0].dataset.label;
  if (!name || !label) return;
  if (name.value.trim() === "" || name.value === name.dataset.defaultName) name.value = label;
  name.dataset.defaultName = label;
});
