"""The results matrix's cells, built in Python (templates/review/matrix/matrix.html).

A page holds up to 200 rows × every scorer; as a template loop the first page's 250
cells (50 rows × 5 scorers) were 85 % of the #matrix region's render time, and that
region comes back with every filter change. See `matrix_cells` for the figures.
"""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from evalsite.evals.models import Result
from evalsite.review.matrix.selectors import MatrixCell, MatrixRow
from evalsite.review.templatetags.review_format import score

register = template.Library()

_CELL_SEPARATOR = "\n        "
_REVIEWED = ' <span class="mark" title="reviewed">R</span>'
_OVERRIDDEN = ' <span class="mark" title="overridden">O</span>'


# The final verdict as the cell's class and its visible text.
_FINAL = {None: ("unknown", "–"), True: ("pass", "✓ pass"), False: ("fail", "✗ fail")}


def _verdict(passed: bool | None) -> str:
    return "no verdict" if passed is None else "pass" if passed else "fail"


def _cell(cell: MatrixCell, *, index: int, href_prefix: str) -> str:
    """One <td>, as HTML: no result, masked (blind), not judged (error, pending,
    cancelled), or the verdict with judge → final score and the reviewed/overridden
    marks. `href_prefix` is escaped already; every other text is escaped here (ids
    and the item index are ints, `score` gives digits, a point or "–")."""
    r = cell.result
    name = escape(cell.run_scorer.name)
    if r is None:
        return (
            '<td class="matrix-cell missing"><span class="muted" data-cell '
            f'tabindex="-1" aria-label="{name}: no result">–</span></td>'
        )
    link = f'<a href="{href_prefix}{r.pk}/" data-cell tabindex="-1" aria-label="Item #{index}, {name}: '
    if cell.blind:
        return (
            f'<td class="matrix-cell blind">{link}hidden until you answer it in a '
            'blind queue">🔒 hidden</a></td>'
        )
    if r.status != Result.Status.OK:
        label = escape(r.get_status_display())
        text = "⚠ error" if r.status == Result.Status.ERROR else label
        return (
            f'<td class="matrix-cell {escape(r.status)}">{link}{label}">{text}</a></td>'
        )
    final = r.final_passed
    judge_score, final_score = score(r.judge_score), score(r.final_score)
    css, shown = _FINAL[final]
    reviewed, overridden = r.reviewed, r.overridden
    return (
        f'<td class="matrix-cell {css}">{link}final {_verdict(final)}, score '
        f"{final_score}; judge {_verdict(r.judge_passed)}, score {judge_score}"
        f'{"; reviewed" if reviewed else ""}{"; overridden" if overridden else ""}">'
        f'<span class="verdict">{shown}</span> <span class="scores">{judge_score} → '
        f"{final_score}</span>{_REVIEWED if reviewed else ''}"
        f"{_OVERRIDDEN if overridden else ''}</a></td>"
    )


@register.simple_tag
def matrix_cells(row: MatrixRow, item_prefix: str) -> SafeString:
    """The row's cells, one per column, each a link to the item at that scorer
    (`item_prefix` + result id) with its state in words in aria-label.

    Plain strings with each text escaped once (format_html per cell escapes every
    argument again): the #matrix region of the first page rendered in 22.7 ms with
    the cells as a template loop, 5.5 ms so (min of 80 renders of 50 rows × 5
    scorers on bench_results_matrix's data, machine load ~8).
    """
    index = row.item.index
    href_prefix = escape(item_prefix)
    return mark_safe(
        _CELL_SEPARATOR.join(
            _cell(cell, index=index, href_prefix=href_prefix) for cell in row.cells
        )
    )
