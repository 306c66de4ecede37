"""Statistics on a run's scores that combine the judge with human labels:
prediction-powered estimates (ppi), the review sample designs they accept (designs),
the alternative annotator test (annotators) and label planning (planning).

Plain functions over arrays and mappings with frozen dataclass results; numpy only.
"""

from __future__ import annotations

from scoring.inference.annotators import (
    AlternativeAnnotatorTest,
    NotEnoughAnnotations,
    ReviewerOutcome,
    alternative_annotator_test,
    benjamini_yekutieli,
)
from scoring.inference.designs import (
    active_design,
    draw_sample,
    split_uncertainty,
    spread_uncertainty,
    stratified_design,
    threshold_uncertainty,
    uniform_design,
)
from scoring.inference.errors import NotEnoughData
from scoring.inference.planning import (
    DetectableDifference,
    LabelsNeeded,
    labels_needed,
    minimum_detectable_difference,
)
from scoring.inference.ppi import (
    PpiEstimate,
    ppi_mean,
    ppi_mean_ipw,
    ppi_paired_difference,
    ppi_pass_rate,
    z_quantile,
)

__all__ = [
    "AlternativeAnnotatorTest",
    "DetectableDifference",
    "LabelsNeeded",
    "NotEnoughAnnotations",
    "NotEnoughData",
    "PpiEstimate",
    "ReviewerOutcome",
    "active_design",
    "alternative_annotator_test",
    "benjamini_yekutieli",
    "draw_sample",
    "labels_needed",
    "minimum_detectable_difference",
    "ppi_mean",
    "ppi_mean_ipw",
    "ppi_paired_difference",
    "ppi_pass_rate",
    "split_uncertainty",
    "spread_uncertainty",
    "stratified_design",
    "threshold_uncertainty",
    "uniform_design",
    "z_quantile",
]
