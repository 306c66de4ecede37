"""Formatting for review numbers: rates as percentages, scores, kappa, histogram bars."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from evalsite.evals.models import Override
from evalsite.evals.results import labels

register = template.Library()


@register.filter
def pct(rate: float | None) -> str:
    """0.724 → "72 %"; None → "–"."""
    return "–" if rate is None else f"{rate * 100:.0f} %"


@register.filter
def score(value: float | None) -> str:
    """A score with up to 3 significant decimals; None → "–"."""
    if value is None:
        return "–"
    return (
        f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:g}"
    )


@register.filter
def duration_ms(value: float | None) -> str:
    """Milliseconds as a reader takes them in: "840 ms", "4.2 s", "4 min 54 s"."""
    if value is None:
        return "–"
    ms = float(value)
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


@register.filter
def kappa(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


@register.filter
def value_label(value: Any, labels: dict[str, str] | None) -> str:
    """A KINDS value_labels lookup (booleans keyed "true"/"false")."""
    key = str(value).lower() if isinstance(value, bool) else str(value)
    return (labels or {}).get(key, key)


@register.filter
def path_label(path: str) -> str:
    """ "verdicts.2.verdict" → "verdict 3" (selectors.labels)."""
    return labels.path_label(path or "")


@register.simple_tag
def override_labels(override: Override, kind: str) -> dict[str, str]:
    """An override's what / before / after in the scorer kind's words:
    {"what": "verdict 3", "old": "supported", "new": "contradicted"}."""
    common = {"kind": kind, "override_kind": override.kind, "path": override.path}
    return {
        "what": labels.override_what(override_kind=override.kind, path=override.path),
        "old": labels.override_value(**common, value=override.old_value),
        "new": labels.override_value(**common, value=override.new_value),
    }


@register.simple_tag
def histogram_bars(
    histogram: Any, width: int = 320, height: int = 110
) -> dict[str, Any]:
    """Bar geometry for an inline SVG: judge and final side by side in each bin."""
    if histogram is None:
        return {"bars": [], "width": width, "height": height}
    bins = len(histogram.judge)
    slot = width / max(bins, 1)
    bar_w = slot * 0.4
    top = histogram.max_count
    usable = height - 18  # room for the axis labels below
    bars = []
    for i in range(bins):
        for offset, series, count in (
            (0.1, "judge", histogram.judge[i]),
            (0.5, "final", histogram.final[i]),
        ):
            h = usable * count / top if top else 0
            bars.append(
                {
                    "series": series,
                    "x": round(i * slot + slot * offset, 1),
                    "y": round(usable - h, 1),
                    "w": round(bar_w, 1),
                    "h": round(h, 1),
                    "count": count,
                    "lo": histogram.edges[i],
                    "hi": histogram.edges[i + 1],
                }
            )
    return {
        "bars": bars,
        "width": width,
        "height": height,
        "axis_y": usable,
        "labels": [
            {"x": 0, "text": f"{histogram.edges[0]:g}"},
            {"x": width, "text": f"{histogram.edges[-1]:g}"},
        ],
    }


_BAR_FILL = {"judge": "#90a4ae", "final": "#1e88e5"}


@register.simple_tag
def histogram_svg(histogram: Any, name: str) -> SafeString:
    """The judge vs final histogram as inline SVG markup.

    Built here rather than in a template loop: 20 bars of a dozen attributes each
    were most of the aggregates card's render time, and the card comes back with
    every override.
    """
    h = histogram_bars(histogram)
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" class="bar-{}" fill="{}">'
        "<title>{} {}–{}: {}</title></rect>",
        (
            (
                b["x"],
                b["y"],
                b["w"],
                b["h"],
                b["series"],
                _BAR_FILL[b["series"]],
                b["series"],
                f"{b['lo']:g}",
                f"{b['hi']:g}",
                b["count"],
            )
            for b in h["bars"]
        ),
    )
    labels = format_html_join(
        "",
        '<text x="{}" y="{}" font-size="10" text-anchor="{}" fill="#666">{}</text>',
        (
            (label["x"], h["height"], "start" if i == 0 else "end", label["text"])
            for i, label in enumerate(h.get("labels", []))
        ),
    )
    axis = (
        format_html(
            '<line x1="0" y1="{}" x2="{}" y2="{}" stroke="#888" stroke-width="0.5"/>',
            h["axis_y"],
            h["width"],
            h["axis_y"],
        )
        if "axis_y" in h
        else ""
    )
    return format_html(
        '<svg viewBox="0 -2 {} {}" role="img" '
        'aria-label="Histogram of judge vs final scores for {}">{}{}{}</svg>',
        h["width"],
        h["height"],
        name,
        bars,
        axis,
        labels,
    )
