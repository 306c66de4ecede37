// The explorer's selection: "select page" and the count of selected rows. The bulk bar
// works without this file (tick rows, or choose "all matching"); htmx swaps replace the
// table, so everything here is delegated from document and re-run on htmx:load.
(() => {
  const rows = () => document.querySelectorAll("input.row-select[form='explorer-bulk']");

  function refresh() {
    const all = Array.from(rows());
    const checked = all.filter((box) => box.checked).length;
    const count = document.getElementById("bulk-selected-count");
    if (count) count.textContent = String(checked);
    const page = document.getElementById("select-page");
    if (page) {
      page.hidden = all.length === 0;
      page.checked = all.length > 0 && checked === all.length;
      page.indeterminate = checked > 0 && checked < all.length;
    }
  }

  document.addEventListener("change", (event) => {
    const target = event.target;
    if (!(target instanceof HTMLInputElement)) return;
    if (target.id === "select-page") {
      for (const box of rows()) box.checked = target.checked;
    } else if (!target.classList.contains("row-select")) {
      return;
    }
    // Ticking rows means "these rows", not "everything matching".
    const selected = document.getElementById("bulk-scope-selected");
    if (selected) selected.checked = true;
    refresh();
  });

  // Nothing ticked and "the selected results" chosen: say so instead of posting.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches("[data-bulk-form]")) return;
    const scope = form.querySelector("input[name=scope]:checked");
    const checked = Array.from(rows()).some((box) => box.checked);
    if (scope && scope.value === "selected" && !checked) {
      event.preventDefault();
      const count = document.getElementById("bulk-selected-count");
      count?.closest("label")?.classList.add("error", "inline");
    }
  });

  document.addEventListener("DOMContentLoaded", refresh);
  document.addEventListener("htmx:load", refresh);
})();
