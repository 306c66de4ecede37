"""The registry of scorer kinds: what each one means, needs and lets reviewers change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scoring.kinds_rag import REGISTRY_ENTRIES as RAG_REGISTRY_ENTRIES
from scoring.options import OPTIONS_MODELS, default_options, options_schema

__all__ = ["KINDS", "LLM_KINDS", "TEXT_KINDS", "KindSpec"]


@dataclass(frozen=True)
class KindSpec:
    """Everything the web app needs to know about one scorer kind.

    ``overridable`` maps an analysis path pattern (``*`` stands for a list
    index) to the values a reviewer may set there; ``value_labels`` maps the
    same patterns to UI labels for those values (booleans keyed "true"/"false").
    Non-LLM kinds have no overridable fields: reviewers override score or pass.
    """

    name: str
    label: str
    description: str
    needs_judge: bool
    required_fields: tuple[str, ...]
    direction: Literal["higher", "lower"]
    options_schema: dict[str, Any]
    defaults: dict[str, Any]
    steps: tuple[str, ...]
    overridable: dict[str, list[Any]]
    value_labels: dict[str, dict[str, str]]
    # False for kinds a run never computes (imported grades): not offered for scorer
    # configs and not in TEXT_KINDS.
    runnable: bool = True


_YES_NO = ["yes", "no"]
_YES_NO_UNSURE = ["yes", "no", "unsure"]

_RAW: list[dict[str, Any]] = [
    {
        "name": "faithfulness",
        "label": "Faithfulness",
        "description": (
            "Share of the claims in the output that the context supports. Claims that "
            "contradict the context or cannot be verified from it count against the "
            "answer; an output without claims scores 0."
        ),
        "needs_judge": True,
        "required_fields": ("output", "context"),
        "direction": "higher",
        "steps": ("claims", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": _YES_NO_UNSURE},
        "value_labels": {
            "verdicts.*.verdict": {
                "yes": "supported",
                "no": "contradicted",
                "unsure": "unverifiable",
            }
        },
    },
    {
        "name": "hallucination",
        "label": "Hallucination",
        "description": (
            "Share of the output's claims that the context does not support "
            "(contradicted, or invented). Lower is better."
        ),
        "needs_judge": True,
        "required_fields": ("output", "context"),
        "direction": "lower",
        "steps": ("claims", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": _YES_NO},
        "value_labels": {
            "verdicts.*.verdict": {"yes": "hallucinated", "no": "supported"}
        },
    },
    {
        "name": "context_relevance",
        "label": "Context relevance",
        "description": (
            "How relevant the retrieved context chunks are to the question and how "
            "well the answer uses them: weighted relevance (high 1, medium 0.7, low "
            "0.3, none 0) minus penalties for unused highly relevant chunks and for "
            "information the judge found missing."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output"),
        "direction": "higher",
        "steps": ("evaluations", "reason"),
        "overridable": {
            "evaluations.*.relevance": ["high", "medium", "low", "none"],
            "evaluations.*.used": [True, False],
        },
        "value_labels": {
            "evaluations.*.relevance": {
                "high": "high",
                "medium": "medium",
                "low": "low",
                "none": "irrelevant",
            },
            "evaluations.*.used": {"true": "used", "false": "not used"},
        },
    },
    {
        "name": "context_precision",
        "label": "Context precision",
        "description": (
            "Whether the useful context chunks come first: mean average precision "
            "over the chunks in retrieval order, judged against the reference answer "
            "when the item has one, else against the output."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output", "context"),
        "direction": "higher",
        "steps": ("verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": _YES_NO},
        "value_labels": {"verdicts.*.verdict": {"yes": "useful", "no": "not useful"}},
    },
    {
        "name": "answer_relevancy",
        "label": "Answer relevancy",
        "description": (
            "Share of the output's statements that address the question; statements "
            "the judge is unsure about count with the uncertainty weight."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output"),
        "direction": "higher",
        "steps": ("statements", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": _YES_NO_UNSURE},
        "value_labels": {
            "verdicts.*.verdict": {
                "yes": "relevant",
                "unsure": "partly relevant",
                "no": "irrelevant",
            }
        },
    },
    {
        "name": "bias",
        "label": "Bias",
        "description": (
            "Share of the opinions in the output that are biased (gender, political, "
            "racial, geographical…). Lower is better."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "lower",
        "steps": ("opinions", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": _YES_NO},
        "value_labels": {"verdicts.*.verdict": {"yes": "biased", "no": "not biased"}},
    },
    {
        "name": "toxicity",
        "label": "Toxicity",
        "description": (
            "Share of the judge's findings about the output that are toxic (insults, "
            "threats, harassment, demeaning language). Lower is better."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "lower",
        "steps": ("verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": _YES_NO},
        "value_labels": {"verdicts.*.verdict": {"yes": "toxic", "no": "not toxic"}},
    },
    {
        "name": "factuality",
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
    {
        "name": "custom_rubric",
        "label": "Custom rubric",
        "description": (
            "Your own rubric: the judge reads the prompt you write and returns a "
            "score between 0 and 1 with a reason."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": ("score",),
        "overridable": {},
        "value_labels": {},
    },
    {
        "name": "content_similarity",
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
    {
        "name": "textual_difference",
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
    {
        "name": "keyword_coverage",
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
    {
        "name": "completeness",
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
    {
        "name": "tone_consistency",
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
    {
        "name": "tool_call_accuracy",
        "label": "Tool call accuracy",
        "description": (
            "Whether the agent called the expected tool, or the expected tools in "
            "order (1 or 0), from the item's tool calls. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
    {
        "name": "trajectory_accuracy",
        "label": "Trajectory accuracy",
        "description": (
            "Share of the expected tool calls the agent made, in order (relaxed or "
            "strict) or in any order, from the item's tool calls. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
    {
        "name": "rubric",
        "label": "Rubric checklist",
        "description": (
            "The judge checks the output against each criterion of your rubric; the "
            "score is the full scale when every required criterion is met (every "
            "criterion when none is required), else 0."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": ("criteria",),
        "overridable": {"criteria.*.satisfied": [True, False]},
        "value_labels": {"criteria.*.satisfied": {"true": "met", "false": "not met"}},
    },
    {
        "name": "multi_turn_judge",
        "label": "Multi-turn judge",
        "description": (
            "The judge reads the whole conversation and decides whether it satisfies "
            "one criterion you write: the full scale if it does, else 0."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": ("conversation_verdict",),
        "overridable": {"satisfied": [True, False]},
        "value_labels": {"satisfied": {"true": "satisfied", "false": "not satisfied"}},
    },
    {
        "name": "tool_call_accuracy_llm",
        "label": "Tool call accuracy (judge)",
        "description": (
            "The judge decides whether each tool call the agent made was appropriate "
            "for the request; the score is the share of appropriate calls (with no "
            "call: 1, or 0 when a tool was needed)."
        ),
        "needs_judge": True,
        "required_fields": ("input", "tool_calls"),
        "direction": "higher",
        "steps": ("tool_evaluations",),
        "overridable": {"evaluations.*.appropriate": [True, False]},
        "value_labels": {
            "evaluations.*.appropriate": {
                "true": "appropriate",
                "false": "inappropriate",
            }
        },
    },
    {
        "name": "trajectory_accuracy_llm",
        "label": "Trajectory accuracy (judge)",
        "description": (
            "The judge assesses the agent's sequence of tool calls, against the "
            "expected trajectory when there is one: 0.6 x share of necessary steps + "
            "0.3 x share in a logical order - 0.1 x share missing (at most 0.9)."
        ),
        "needs_judge": True,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": ("trajectory_steps",),
        "overridable": {
            "steps.*.necessary": [True, False],
            "steps.*.in_order": [True, False],
        },
        "value_labels": {
            "steps.*.necessary": {"true": "necessary", "false": "unnecessary"},
            "steps.*.in_order": {"true": "in order", "false": "out of order"},
        },
    },
    {
        "name": "trajectory",
        "label": "Trajectory",
        "description": (
            "The agent's tool calls scored on accuracy against the expected "
            "trajectory, efficiency (step budget, repeated calls), retries after "
            "failures and forbidden tools, weighted. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
]

# scoring.kinds_rag's five kinds describe themselves there.
_RAW += RAG_REGISTRY_ENTRIES
_RAW.append(
    {
        "name": "imported",
        "label": "Imported grade",
        "description": (
            "A grade another tool recorded (a promptfoo assertion, a LangSmith "
            "feedback score): its pass, score (0-1) and reason, as the tool gave them "
            "(LangSmith gives no pass: 0.5 or more passes). Never computed here; a "
            "reviewer flips its pass or overrides its score."
        ),
        "needs_judge": False,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": (),
        "overridable": {"passed": [True, False]},
        "value_labels": {"passed": {"true": "pass", "false": "fail"}},
        "runnable": False,
    }
)

KINDS: dict[str, KindSpec] = {
    raw["name"]: KindSpec(
        options_schema=options_schema(raw["name"]),
        defaults=default_options(raw["name"]),
        **raw,
    )
    for raw in _RAW
}

LLM_KINDS: tuple[str, ...] = tuple(
    name for name, spec in KINDS.items() if spec.needs_judge
)
TEXT_KINDS: tuple[str, ...] = tuple(
    name for name, spec in KINDS.items() if not spec.needs_judge and spec.runnable
)

if tuple(KINDS) != tuple(OPTIONS_MODELS):  # pragma: no cover - a programming error
    raise RuntimeError("scoring.registry and scoring.options list different kinds")
