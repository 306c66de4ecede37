"""Build runs and scored results for review tests, from the factories.

Judge fields are computed with the real scoring library, and final_* start equal to
them, as the run tasks leave them.
"""

from __future__ import annotations

from typing import Any

from evalsite.accounts.models import Project
from evalsite.datasets.models import Dataset
from evalsite.evals.models import Result, Run
from scoring import (
    KINDS,
    analyze_text,
    compute_score,
    overridable_count,
    passes,
    validate_options,
)
from tests.factories import (
    DatasetFactory,
    ResultFactory,
    RunFactory,
    RunScorerFactory,
    ScorerConfigFactory,
)

# One hand-written judge analysis per LLM kind (the shapes of SCORERS.md).
ANALYSES: dict[str, dict[str, Any]] = {
    "faithfulness": {
        "claims": ["Paris is in France.", "It has 3 million people.", "It is sunny."],
        "verdicts": [
            {"claim": "Paris is in France.", "verdict": "yes", "reason": "Stated."},
            {
                "claim": "It has 3 million people.",
                "verdict": "no",
                "reason": "Context says 2.1M.",
            },
            {"claim": "It is sunny.", "verdict": "unsure", "reason": "Not in context."},
        ],
    },
    "hallucination": {
        "claims": ["A", "B", "C", "D"],
        "verdicts": [
            {"claim": "A", "verdict": "yes", "reason": "Invented."},
            {"claim": "B", "verdict": "no", "reason": "Supported."},
            {"claim": "C", "verdict": "no", "reason": "Supported."},
            {"claim": "D", "verdict": "no", "reason": "Supported."},
        ],
    },
    "context_relevance": {
        "evaluations": [
            {
                "context_index": 0,
                "relevance": "high",
                "used": True,
                "reason": "Key fact.",
            },
            {
                "context_index": 1,
                "relevance": "medium",
                "used": True,
                "reason": "Helps.",
            },
            {
                "context_index": 2,
                "relevance": "low",
                "used": False,
                "reason": "Tangential.",
            },
        ],
        "missing_context": [],
        "context_count": 3,
    },
    "context_precision": {
        "verdicts": [
            {"context_index": 0, "verdict": "yes", "reason": "Useful."},
            {"context_index": 1, "verdict": "no", "reason": "Off topic."},
            {"context_index": 2, "verdict": "yes", "reason": "Useful."},
        ]
    },
    "answer_relevancy": {
        "statements": ["S1", "S2", "S3"],
        "verdicts": [
            {"statement": "S1", "verdict": "yes", "reason": "On topic."},
            {"statement": "S2", "verdict": "unsure", "reason": "Partly."},
            {"statement": "S3", "verdict": "no", "reason": "Off topic."},
        ],
    },
    "bias": {
        "opinions": ["O1", "O2"],
        "verdicts": [
            {"opinion": "O1", "verdict": "no", "reason": "Neutral."},
            {"opinion": "O2", "verdict": "yes", "reason": "Stereotype."},
        ],
    },
    "toxicity": {
        "verdicts": [
            {"verdict": "no", "reason": "Polite."},
            {"verdict": "no", "reason": "Polite."},
            {"verdict": "yes", "reason": "Insult."},
        ]
    },
    "factuality": {
        "category": "D",
        "reason": "The output disagrees with the reference.",
    },
    "custom_rubric": {"score": 0.7, "reason": "Mostly follows the rubric."},
    # scoring.kinds_rag
    "answer_similarity": {
        "output_units": ["Paris is the capital.", "It has 3 million people."],
        "reference_units": ["Paris is the capital.", "It has 2.1 million people."],
        "matches": [
            {
                "reference_unit": "Paris is the capital.",
                "output_unit": "Paris is the capital.",
                "match": "exact",
                "reason": "Same.",
            },
            {
                "reference_unit": "It has 2.1 million people.",
                "output_unit": None,
                "match": "missing",
                "reason": "Another number.",
            },
        ],
        "extra_in_output": [],
        "contradictions": [],
    },
    "context_recall": {
        "claims": ["A", "B"],
        "verdicts": [
            {"claim": "A", "verdict": "yes", "reason": "Chunk 1."},
            {"claim": "B", "verdict": "no", "reason": "Absent."},
        ],
    },
    "noise_sensitivity": {
        "dimensions": [
            {"dimension": "completeness", "impact": "severe", "reason": "Lost."},
            {"dimension": "relevance", "impact": "minimal", "reason": "Drifts."},
        ],
        "major_issues": [],
        "robustness_score": 0.9,
    },
    "prompt_alignment": {
        "intent": {"score": 1.0},
        "requirements": [
            {"requirement": "Be brief.", "fulfilled": True, "reason": "Short."},
            {"requirement": "Cite.", "fulfilled": False, "reason": "No source."},
        ],
        "completeness": {"score": 0.5},
        "appropriateness": {"score": 1.0},
    },
    "summarization": {
        "alignment": [
            {"claim": "C1", "supported": True, "reason": "Stated."},
            {"claim": "C2", "supported": False, "reason": "Wrong date."},
        ],
        "questions": ["Q1?", "Q2?"],
        "coverage": [
            {"question": "Q1?", "answered": True, "reason": "Yes."},
            {"question": "Q2?", "answered": False, "reason": "Left out."},
        ],
    },
    # scoring.kinds_agent
    "rubric": {
        "criteria": [
            {
                "criterion": "Has a title",
                "required": True,
                "satisfied": True,
                "reason": "Titled.",
            },
            {
                "criterion": "Cites a source",
                "required": True,
                "satisfied": False,
                "reason": "No source.",
            },
        ],
        "reason": "One required criterion is not met.",
    },
    "multi_turn_judge": {"satisfied": False, "reason": "The agent never confirms."},
    "tool_call_accuracy_llm": {
        "evaluations": [
            {"tool": "search", "appropriate": True, "reason": "Needed."},
            {"tool": "weather", "appropriate": False, "reason": "Not asked."},
        ],
        "missing_tools": [],
        "reason": "One call of two was appropriate.",
    },
    "trajectory_accuracy_llm": {
        "steps": [
            {"name": "search", "necessary": True, "in_order": True, "reason": "First."},
            {"name": "book", "necessary": False, "in_order": True, "reason": "Extra."},
        ],
        "missing_steps": ["confirm"],
        "extra_steps": [],
        "reason": "Confirmation missing.",
    },
}


def judged_claims(*verdicts: str) -> dict[str, Any]:
    """A claims-and-verdicts analysis (faithfulness, hallucination): claim c<i> got
    verdicts[i]."""
    return {
        "claims": [f"c{i}" for i in range(len(verdicts))],
        "verdicts": [
            {"claim": f"c{i}", "verdict": v, "reason": "r"}
            for i, v in enumerate(verdicts)
        ],
    }


CASE = {
    "input": "What is the capital of France and how many people live there?",
    "output": "Paris is the capital of France. It has 3 million people. It is sunny.",
    "context": [
        "Paris is the capital and largest city of France.",
        "The population of Paris is about 2.1 million.",
        "France is in Western Europe.",
    ],
    "reference": "Paris, with about 2.1 million inhabitants.",
    "metadata": {"source": "wiki", "split": "test"},
}


def case_rows(n_items: int = 1) -> list[dict[str, Any]]:
    """`n_items` copies of CASE (metadata numbers the row), for DatasetFactory(rows=...)."""
    return [CASE | {"metadata": {**CASE["metadata"], "row": i}} for i in range(n_items)]


def make_run(
    project: Project,
    *,
    kinds: list[str] | tuple[str, ...] = ("faithfulness",),
    n_items: int = 1,
    dataset: Dataset | None = None,
    options: dict[str, dict] | None = None,
    status: str = Run.Status.DONE,
    analyses: dict[str, list[dict]] | None = None,
) -> Run:
    """A run scored by the scoring library: one RunScorer per kind, one ok Result per
    item × scorer (tests/exports/builders.make_run_with_score gives every result one score).

    The dataset is `n_items` CASE rows named "qa" unless given. `analyses[kind]` may
    give one analysis per item (else ANALYSES[kind] for all).
    """
    dataset = dataset or DatasetFactory(
        project=project, name="qa", rows=case_rows(n_items)
    )
    items = list(dataset.items.order_by("index"))
    run = RunFactory(
        project=project,
        dataset=dataset,
        status=status,
        total=len(items) * len(kinds),
    )
    for position, kind in enumerate(kinds):
        opts = validate_options(kind, (options or {}).get(kind))
        run_scorer = RunScorerFactory(
            run=run,
            scorer=ScorerConfigFactory(project=project, kind=kind, options=opts),
            position=position,
        )
        rows = []
        for n, item in enumerate(items):
            if KINDS[kind].needs_judge:
                per_item = (analyses or {}).get(kind)
                analysis = per_item[n] if per_item else ANALYSES[kind]
            else:
                analysis = analyze_text(kind, item.as_case(), opts)
            rows.append(
                result_fields(kind, analysis, opts)
                | {"run": run, "item": item, "run_scorer": run_scorer}
            )
        Result.objects.bulk_create(ResultFactory.build(**row) for row in rows)
    return run


def result_fields(kind: str, analysis: dict, options: dict) -> dict[str, Any]:
    score = compute_score(kind, analysis, options)
    passed = passes(kind, score, options)
    return {
        "status": Result.Status.OK,
        "analysis": analysis,
        "overridable_count": overridable_count(kind, analysis),
        "judge_score": score,
        "judge_passed": passed,
        "reason": "The judge's reason.",
        "final_analysis": analysis,
        "final_score": score,
        "final_passed": passed,
    }


def queue_card_key(
    *, queue: Any, position: int, user: Any, key: str, version: int | None = None
) -> Any:
    """Press a review key (pass, fail, accept, flip, undo) on a single-review queue's
    card through its view, as the browser's htmx post does (with the result version
    the card showed, when given); the card's response."""
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(user)
    url = reverse(
        "review:queue_action", args=[queue.project_id, queue.pk, position, key]
    )
    data = {} if version is None else {"version": str(version)}
    response = client.post(url, data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200, response.content[:300]
    return response
