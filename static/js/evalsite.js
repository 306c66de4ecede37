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
