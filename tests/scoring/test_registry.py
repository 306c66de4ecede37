"""The registry describes every kind completely and consistently."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil

import pytest

import scoring.kinds
from scoring import KINDS, LLM_KINDS, TEXT_KINDS, KindSpec, prompts, validate_options
from scoring.kinds.base import KindDef
from scoring.registry import KIND_DEFS

ALL_KINDS = {
    "faithfulness",
    "hallucination",
    "context_relevance",
    "context_precision",
    "answer_relevancy",
    "bias",
    "toxicity",
    "factuality",
    "custom_rubric",
    "content_similarity",
    "textual_difference",
    "keyword_coverage",
    "completeness",
    "tone_consistency",
    "tool_call_accuracy",
    "trajectory_accuracy",
    # agent kinds (scoring.kinds.agent, scoring.kinds.trajectory)
    "rubric",
    "multi_turn_judge",
    "tool_call_accuracy_llm",
    "trajectory_accuracy_llm",
    "trajectory",
    # scoring.kinds.rag
    "answer_similarity",
    "context_recall",
    "noise_sensitivity",
    "prompt_alignment",
    "summarization",
    # another tool's grades, never computed (evalsite's import)
    "imported",
}


def test_every_kind_is_registered():
    assert set(KINDS) == ALL_KINDS
    assert set(LLM_KINDS) | set(TEXT_KINDS) == ALL_KINDS - {"imported"}
    assert [name for name, spec in KINDS.items() if not spec.runnable] == ["imported"]
    assert set(TEXT_KINDS) == {
        "content_similarity",
        "textual_difference",
        "keyword_coverage",
        "completeness",
        "tone_consistency",
        "tool_call_accuracy",
        "trajectory_accuracy",
        "trajectory",
    }


@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_spec_fields(kind):
    spec = KINDS[kind]
    assert isinstance(spec, KindSpec)
    assert spec.name == kind
    assert spec.label and spec.description and len(spec.description) > 40
    assert spec.direction in ("higher", "lower")
    assert set(spec.required_fields) <= {
        "input",
        "output",
        "context",
        "reference",
        "tool_calls",
        "baseline_output",
    }
    # An agent may answer with tool calls alone; context recall judges the retrieval
    # against the reference, not the output.
    assert (
        "output" in spec.required_fields
        or "tool_calls" in spec.required_fields
        or kind == "context_recall"
    )
    assert spec.defaults == validate_options(kind, None)
    json.dumps(spec.options_schema)  # JSON-serialisable
    assert spec.options_schema["type"] == "object"
    assert {"scale", "threshold"} <= set(spec.options_schema["properties"])
    if spec.needs_judge:
        assert spec.steps
    elif not spec.runnable:  # imported: the tool's pass is what a reviewer flips
        assert spec.steps == () and spec.overridable == {"passed": [True, False]}
    else:
        assert spec.steps == () and spec.overridable == {} and spec.value_labels == {}
    for pattern, values in spec.overridable.items():
        labels = spec.value_labels[pattern]
        keys = {json.dumps(v) if isinstance(v, bool) else v for v in values}
        assert set(labels) == keys, pattern


def test_directions():
    lower = {name for name, spec in KINDS.items() if spec.direction == "lower"}
    assert lower == {"hallucination", "bias", "toxicity"}


def test_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        KINDS["faithfulness"].label = "x"  # type: ignore[misc]


def test_overridable_values():
    assert KINDS["faithfulness"].overridable == {
        "verdicts.*.verdict": ["yes", "no", "unsure"]
    }
    assert KINDS["hallucination"].overridable == {"verdicts.*.verdict": ["yes", "no"]}
    assert KINDS["context_relevance"].overridable == {
        "evaluations.*.relevance": ["high", "medium", "low", "none"],
        "evaluations.*.used": [True, False],
    }
    assert KINDS["factuality"].overridable == {"category": ["A", "B", "C", "D", "E"]}
    assert KINDS["hallucination"].value_labels["verdicts.*.verdict"] == {
        "yes": "hallucinated",
        "no": "supported",
    }
    assert KINDS["factuality"].value_labels["category"]["A"] == "subset, consistent"


def test_required_fields():
    assert KINDS["factuality"].required_fields == ("output", "reference")
    assert set(KINDS["faithfulness"].required_fields) == {"output", "context"}
    assert (
        "context" not in KINDS["context_relevance"].required_fields
    )  # no chunks -> 1 x scale


def test_imported_grade_keeps_the_tools_pass_whatever_the_score():
    from scoring import compute_score, overridable_count, passes

    failed_high = {"passed": False, "score": 0.9, "reason": "judge said no"}
    passed_low = {"passed": True, "score": 0.6, "reason": "close enough"}
    assert compute_score("imported", failed_high) == 0.9
    assert passes("imported", 0.9, analysis=failed_high) is False
    assert passes("imported", 0.6, analysis=passed_low) is True
    assert overridable_count("imported", passed_low) == 1


def test_every_kind_module_is_listed_in_the_registry() -> None:
    """A kind defined in a module under scoring.kinds but left out of the registry's
    explicit list would silently not exist."""
    defined = set()
    for info in pkgutil.iter_modules(scoring.kinds.__path__):
        module = importlib.import_module(f"scoring.kinds.{info.name}")
        for value in vars(module).values():
            if isinstance(value, KindDef):
                defined.add(value.name)
            elif isinstance(value, tuple) and value and isinstance(value[0], KindDef):
                defined.update(kind.name for kind in value)
    listed = [kind.name for kind in KIND_DEFS]
    assert len(listed) == len(set(listed))
    assert defined == set(listed) == set(KINDS)


def test_the_prompt_tables_hold_exactly_the_judged_kinds() -> None:
    assert set(prompts.STEPS) == set(LLM_KINDS)
    assert set(prompts.FIRST_STEP_BUILDERS) == set(LLM_KINDS)
    assert set(prompts.ROLE) == set(LLM_KINDS)
    assert set(prompts.VERDICT_BUILDERS) == {
        "faithfulness",
        "hallucination",
        "answer_relevancy",
        "bias",
    }
    for kind in LLM_KINDS:
        assert [step.kind for step in prompts.STEPS[kind]] == [kind] * len(
            prompts.STEPS[kind]
        )
