"""The textual kinds, computed without a judge from the output and the reference (the
input when there is no reference): content similarity (character bigrams), textual
difference (longest common subsequence), keyword coverage, completeness and tone
consistency. Their algorithms are in ``scoring.textkinds``; each analysis is the ratio
it computed, which the score scales (not rounded)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from scoring.kinds.base import CommonOptions, KindDef, TextAnalysis, score_text_ratio


class ContentSimilarityOptions(CommonOptions):
    ignore_case: bool = Field(
        default=True,
        title="Ignore case",
        description="Lower-case both texts before comparing.",
        strict=True,
    )


class ToneConsistencyOptions(CommonOptions):
    reference_tone: str | None = Field(
        default=None,
        title="Reference tone",
        description=(
            "A text with the wanted tone. Empty: score how steady the sentiment "
            "is across the output's sentences instead."
        ),
    )


def _text_kind(
    name: str, options: type[CommonOptions], entry: dict[str, Any]
) -> KindDef:
    return KindDef(
        name=name,
        entry=entry,
        options=options,
        analysis=TextAnalysis,
        score=score_text_ratio,
    )


CONTENT_SIMILARITY = _text_kind(
    "content_similarity",
    ContentSimilarityOptions,
    {
        "label": "Content similarity",
        "description": (
            "Character-bigram overlap (Sørensen-Dice) between the output and the "
            "reference (the input when there is no reference), ignoring whitespace "
            "and, by default, case. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
)
TEXTUAL_DIFFERENCE = _text_kind(
    "textual_difference",
    CommonOptions,
    {
        "label": "Textual similarity (LCS)",
        "description": (
            "2 x longest common character subsequence / total length, between the "
            "output and the reference (the input when there is no reference). "
            "1 means identical. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
)
KEYWORD_COVERAGE = _text_kind(
    "keyword_coverage",
    CommonOptions,
    {
        "label": "Keyword coverage",
        "description": (
            "Share of the reference's keywords (the input's when there is no "
            "reference; stopwords and numbers removed) that the output contains. "
            "No judge."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
)
COMPLETENESS = _text_kind(
    "completeness",
    CommonOptions,
    {
        "label": "Completeness",
        "description": (
            "Share of the reference's words and verb base forms (the input's when "
            "there is no reference) found in the output, with near matches for "
            "longer words. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
)
TONE_CONSISTENCY = _text_kind(
    "tone_consistency",
    ToneConsistencyOptions,
    {
        "label": "Tone consistency",
        "description": (
            "Sentiment (AFINN-165) of the output compared with a reference tone, or, "
            "without one, how steady the sentiment stays from sentence to sentence. "
            "No judge."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
)
