"""Factuality: the output compared with the reference answer, put in one of five
categories (promptfoo's); the score is that category's score.

One step: choose the category (the reply may be JSON or a leading letter A-E). A
reviewer's own rubric prompt, with {{input}}, {{ideal}} and {{completion}}, may
replace the built-in one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from scoring.client import Plan
from scoring.kinds.base import (
    AnalysisModel,
    Category,
    CommonOptions,
    KindDef,
    OptionsModel,
    StepRun,
    check_number,
    rubric_with,
)
from scoring.prompts import Category as ReplyCategory
from scoring.prompts import (
    Messages,
    Reply,
    Step,
    block,
    input_block,
    kind_messages,
    render_template,
    template_values,
    text_field,
)

NAME = "factuality"

ROLE = "You are a judge comparing the factual content of a submitted answer with an expert answer."
MEANING = "the factual agreement of the output with the reference answer."
REASON_ITEMS = "details"
CATEGORY_ANSWER = (
    '{"category": "A" | "B" | "C" | "D" | "E", "reason": "<one or two sentences>"}'
)
# Placeholder of a reviewer's rubric prompt -> the item's field it stands for.
TEMPLATE_FIELDS = {"input": "input", "ideal": "reference", "completion": "output"}

FACTUALITY_TASK = """\
Compare the factual content of the submitted answer in <output> with the expert answer \
in <reference>, for the question in <input>. Ignore differences of style, grammar, \
punctuation and length. Choose exactly one category:
- "A": the submitted answer is a subset of the expert answer and fully consistent with it.
- "B": the submitted answer is a superset of the expert answer and fully consistent with it.
- "C": the submitted answer contains all the same details as the expert answer.
- "D": there is a disagreement between the submitted answer and the expert answer.
- "E": the answers differ, but these differences do not matter from the perspective of \
factuality.
The reason is one or two sentences naming the details that decided the category."""


class FactualityReply(Reply):
    category: ReplyCategory
    reason: str


def parse_factuality(raw: str) -> FactualityReply:
    """SCORERS.md factuality parsing (``scoring.analysis.parse_factuality_reply``): a JSON
    object with ``category``, else a reply whose first non-blank token is a lone letter
    A-E, optionally in parentheses. ValueError (AnalysisError) otherwise."""
    # scoring.analysis reads the kinds' tables, which are built from this module.
    from scoring.analysis import parse_factuality_reply

    data = parse_factuality_reply(raw)
    return FactualityReply(
        category=data["category"], reason=str(data.get("reason") or "")
    )


def first_messages(case: Mapping[str, Any], options: Mapping[str, Any]) -> Messages:
    output = block("output", text_field(case, "output"))
    rubric = options.get("rubric_prompt")
    if rubric:
        user = render_template(str(rubric), template_values(TEMPLATE_FIELDS, case))
        task = (
            "Follow the grading instructions in the user message. Answer with the "
            "category letter, as a JSON object. " + FACTUALITY_TASK
        )
        return kind_messages(NAME, "category", ROLE, task, CATEGORY_ANSWER, user)
    user = (
        f"{input_block(case)}\n\nExpert answer:\n{block('reference', text_field(case, 'reference'))}\n\n"
        f"Submitted answer:\n{output}\n\nChoose the category."
    )
    return kind_messages(NAME, "category", ROLE, FACTUALITY_TASK, CATEGORY_ANSWER, user)


def analyse(
    run: StepRun, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """One call: the category and its reason."""
    reply = yield from run.step("category", first_messages(case, options))
    assert isinstance(reply, FactualityReply)
    return {"category": reply.category, "reason": reply.reason}


class FactualityAnalysis(AnalysisModel):
    category: Category
    reason: str = ""


# Factuality's category scores are fractions of the scale, 0 to 1, so that the score
# stays within 0-scale like every other score a result holds (scoring/ranges.py):
# overrides, the aggregates and the histogram assume it. promptfoo takes any number
# (README, row factuality-category-score-range).
CategoryScore = Annotated[
    float,
    Field(allow_inf_nan=False, ge=0, le=1),
    BeforeValidator(check_number),
]


class CategoryScores(OptionsModel):
    subset: CategoryScore = Field(default=1.0, title="A: subset, consistent")
    superset: CategoryScore = Field(default=1.0, title="B: superset, consistent")
    agree: CategoryScore = Field(default=1.0, title="C: same details")
    disagree: CategoryScore = Field(default=0.0, title="D: disagrees")
    differ_but_factual: CategoryScore = Field(
        default=1.0, title="E: differs, factually equivalent"
    )


class FactualityOptions(CommonOptions):
    threshold: (
        Annotated[
            float, Field(allow_inf_nan=False, ge=0, le=1), BeforeValidator(check_number)
        ]
        | None
    ) = Field(  # type: ignore[assignment]
        default=None,
        title="Pass threshold",
        description=(
            "Empty: pass iff the category's score is > 0 (promptfoo's rule). "
            "A number replaces that with score >= threshold x scale."
        ),
    )
    category_scores: CategoryScores = Field(
        default_factory=CategoryScores,
        title="Category scores",
        description=(
            "Score of each answer category A-E, as a fraction of the scale, from 0 "
            "to 1 (promptfoo takes any number; a score must stay within 0-scale)."
        ),
    )
    rubric_prompt: Annotated[str | None, rubric_with("{{completion}}")] = Field(
        default=None,
        title="Custom rubric prompt",
        description=(
            "Replaces the built-in prompt. Placeholders: {{input}}, {{ideal}} (the "
            "reference) and {{completion}} (the output). The judge may answer with "
            'JSON {"category", "reason"} or a leading letter A-E.'
        ),
    )


_CATEGORY_KEYS: dict[str, str] = {
    "A": "subset",
    "B": "superset",
    "C": "agree",
    "D": "disagree",
    "E": "differ_but_factual",
}


def score(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """category_scores[category] x scale, not rounded."""
    key = _CATEGORY_KEYS[analysis["category"]]
    return float(options["category_scores"][key] * options["scale"])


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Factuality",
        "description": (
            "Compares the output with the reference answer and puts it in one of five "
            "categories (A subset, B superset, C same, D disagrees, E differs "
            "harmlessly); the score is that category's score. Passes when the score "
            "is above 0, or at least the threshold when one is set."
        ),
        "needs_judge": True,
        "required_fields": ("output", "reference"),
        "direction": "higher",
        "steps": ("category",),
        "overridable": {"category": ["A", "B", "C", "D", "E"]},
        "value_labels": {
            "category": {
                "A": "subset, consistent",
                "B": "superset, consistent",
                "C": "same details",
                "D": "disagrees",
                "E": "differs, factually equivalent",
            }
        },
    },
    options=FactualityOptions,
    analysis=FactualityAnalysis,
    score=score,
    steps=(Step(NAME, "category", FactualityReply, parse_factuality),),
    role=ROLE,
    meaning=MEANING,
    reason_items=REASON_ITEMS,
    first_messages=first_messages,
    analyse=analyse,
)
