// Keyboard navigation across the results matrix (a roving tabindex on its cells):
// arrow keys move focus between cells, Home/End go to a row's first/last cell,
// Ctrl+Home/End to the first/last cell of the table; Enter opens the focused cell's
// link (the browser does that itself). One cell is in the tab order at a time, so Tab
// leaves the table. Re-armed after every htmx swap of #matrix.
(function () {
  "use strict";

  function cellsOf(table) {
    return Array.from(table.tBodies[0] ? table.tBodies[0].rows : []).map(function (row) {
      return Array.from(row.querySelectorAll("[data-cell]"));
    }).filter(function (row) { return row.length; });
  }

  function positionOf(grid, cell) {
    for (var r = 0; r < grid.length; r++) {
      var c = grid[r].indexOf(cell);
      if (c !== -1) return [r, c];
    }
    return null;
  }

  function focusCell(grid, r, c) {
    r = Math.max(0, Math.min(grid.length - 1, r));
    c = Math.max(0, Math.min(grid[r].length - 1, c));
    grid.forEach(function (row) { row.forEach(function (cell) { cell.tabIndex = -1; }); });
    grid[r][c].tabIndex = 0;
    grid[r][c].focus();
  }

  function arm(table) {
    if (table.dataset.matrixArmed) return;
    table.dataset.matrixArmed = "1";
    var grid = cellsOf(table);
    if (!grid.length) return;
    grid[0][0].tabIndex = 0;
    table.addEventListener("keydown", function (event) {
      var grid = cellsOf(table);
      var at = positionOf(grid, document.activeElement);
      if (!at) return;
      var r = at[0], c = at[1];
      switch (event.key) {
        case "ArrowRight": c += 1; break;
        case "ArrowLeft": c -= 1; break;
        case "ArrowDown": r += 1; break;
        case "ArrowUp": r -= 1; break;
        case "Home": if (event.ctrlKey) { r = 0; } c = 0; break;
        case "End": if (event.ctrlKey) { r = grid.length - 1; } c = grid[r].length - 1; break;
        default: return;
      }
      event.preventDefault();
      focusCell(grid, r, c);
    });
    table.addEventListener("focusin", function (event) {
      var grid = cellsOf(table);
      var at = positionOf(grid, event.target);
      if (at) {
        grid.forEach(function (row) { row.forEach(function (cell) { cell.tabIndex = -1; }); });
        event.target.tabIndex = 0;
      }
    });
  }

  function armAll() {
    document.querySelectorAll("table[data-matrix]").forEach(arm);
  }

  document.addEventListener("DOMContentLoaded", armAll);
  document.addEventListener("htmx:afterSettle", armAll);
})();
