"""A run's corrected figures as CSV: one row per scorer and figure (pass rate, mean),
every text cell spreadsheet-safe (a scorer's name is the user's text)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence

from evalsite.lib.csvsafe import safe_cell
from evalsite.review.estimates.selectors import ScorerEstimates

ESTIMATES_COLUMNS = (
    "scorer",
    "metric",
    "judge_only",
    "human_adjusted",
    "corrected",
    "ci_low",
    "ci_high",
    "half_width",
    "labels_used",
    "labels_not_used",
    "results",
    "human_only",
    "human_only_half_width",
    "effective_labels",
    "sample_queue_id",
    "sample_design",
    "sentence",
)


def estimates_csv_stream(estimates: Sequence[ScorerEstimates]) -> Iterator[bytes]:
    """The run's estimates (a few rows a scorer) as CSV bytes."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(ESTIMATES_COLUMNS)
    for est in estimates:
        for fig in est.figures:
            row = (
                est.name,
                fig.metric,
                fig.judge,
                fig.adjusted,
                fig.estimate,
                fig.ci_low,
                fig.ci_high,
                fig.half_width,
                fig.labels,
                est.labels_unused,
                fig.population,
                fig.human_only,
                fig.human_only_half_width,
                fig.effective_labels,
                est.sample.queue_id if est.sample else "",
                est.sample.design if est.sample else "",
                fig.sentence,
            )
            writer.writerow([safe_cell(value) for value in row])
    yield buffer.getvalue().encode()
