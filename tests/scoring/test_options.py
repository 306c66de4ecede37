"""Options: defaults, key-by-key merging, errors that name the field, JSON Schema."""

from __future__ import annotations

import pytest

from scoring import (
    KINDS,
    OptionsError,
    UnknownKindError,
    options_schema,
    validate_options,
)
from scoring.kinds.custom_rubric import DEFAULT_CUSTOM_RUBRIC
from scoring.options import MAX_SCALE


def test_defaults_for_every_kind_have_scale_and_threshold():
    for kind in KINDS:
        options = validate_options(kind, None)
        assert options["scale"] == 1.0
        expected_threshold = None if kind == "factuality" else 0.5
        assert options["threshold"] == expected_threshold
        assert validate_options(kind, {}) == options


def test_context_relevance_penalties_merge_key_by_key_and_zero_is_honoured():
    options = validate_options(
        "context_relevance", {"penalties": {"unused_high_relevance": 0}}
    )
    assert options["penalties"] == {
        "unused_high_relevance": 0.0,
        "missing_context_per_item": 0.15,
        "max_missing_context_penalty": 0.5,
    }


def test_factuality_defaults_and_category_scores_merge():
    options = validate_options("factuality", {"category_scores": {"disagree": 0.25}})
    assert options["category_scores"] == {
        "subset": 1.0,
        "superset": 1.0,
        "agree": 1.0,
        "disagree": 0.25,
        "differ_but_factual": 1.0,
    }
    assert options["rubric_prompt"] is None
    assert options["threshold"] is None


def test_answer_relevancy_merges_with_defaults():
    assert validate_options("answer_relevancy", {"scale": 10}) == {
        "scale": 10.0,
        "threshold": 0.5,
        "uncertainty_weight": 0.3,
    }


def test_custom_rubric_has_a_usable_default():
    assert (
        validate_options("custom_rubric", None)["rubric_prompt"]
        == DEFAULT_CUSTOM_RUBRIC
    )
    assert "{{output}}" in DEFAULT_CUSTOM_RUBRIC


@pytest.mark.parametrize(
    ("kind", "options", "field", "fragment"),
    [
        ("faithfulness", {"scael": 2}, "scael", "unknown option"),
        ("faithfulness", {"scale": 0}, "scale", "greater than 0"),
        ("faithfulness", {"scale": -1}, "scale", "greater than 0"),
        ("faithfulness", {"scale": True}, "scale", "not a boolean"),
        ("faithfulness", {"scale": "ten"}, "scale", "number"),
        ("faithfulness", {"scale": float("nan")}, "scale", "finite"),
        ("faithfulness", {"threshold": 1.5}, "threshold", "less than or equal to 1"),
        ("faithfulness", {"threshold": None}, "threshold", "number"),
        ("hallucination", {"penalties": {}}, "penalties", "unknown option"),
        (
            "context_relevance",
            {"penalties": {"unused_high_relevance": -0.1}},
            "penalties.unused_high_relevance",
            "greater than or equal to 0",
        ),
        (
            "context_relevance",
            {"penalties": {"max_missing": 0.1}},
            "penalties.max_missing",
            "unknown option",
        ),
        ("context_relevance", {"penalties": 3}, "penalties", "dictionary"),
        (
            "answer_relevancy",
            {"uncertainty_weight": 2},
            "uncertainty_weight",
            "less than",
        ),
        (
            "factuality",
            {"category_scores": {"wrong": 1}},
            "category_scores.wrong",
            "unknown",
        ),
        (
            "factuality",
            {"category_scores": {"subset": "x"}},
            "category_scores.subset",
            "number",
        ),
        (
            "factuality",
            {"rubric_prompt": "no placeholder"},
            "rubric_prompt",
            "{{completion}}",
        ),
        ("factuality", {"rubric_prompt": "   "}, "rubric_prompt", "empty"),
        ("factuality", {"threshold": 2}, "threshold", "less than or equal to 1"),
        ("custom_rubric", {"rubric_prompt": "Rate it"}, "rubric_prompt", "{{output}}"),
        ("content_similarity", {"ignore_case": "yes"}, "ignore_case", "boolean"),
        ("tone_consistency", {"reference_tone": 5}, "reference_tone", "string"),
    ],
)
def test_options_errors_name_the_field(kind, options, field, fragment):
    with pytest.raises(OptionsError) as info:
        validate_options(kind, options)
    assert info.value.field == field
    assert field in str(info.value)
    assert fragment in str(info.value)


def test_unknown_option_lists_the_allowed_ones():
    with pytest.raises(OptionsError) as info:
        validate_options("answer_relevancy", {"uncertainty": 0.5})
    assert "uncertainty_weight" in str(info.value)


def test_options_must_be_an_object():
    with pytest.raises(OptionsError):
        validate_options("faithfulness", [1, 2])  # type: ignore[arg-type]


def test_unknown_kind():
    with pytest.raises(UnknownKindError) as info:
        validate_options("nope", {})
    assert "nope" in str(info.value) and "faithfulness" in str(info.value)


def test_validate_options_does_not_mutate_the_input():
    given = {"penalties": {"unused_high_relevance": 0.2}}
    validate_options("context_relevance", given)
    assert given == {"penalties": {"unused_high_relevance": 0.2}}


def test_json_schema_is_inlined_and_has_constraints():
    schema = options_schema("context_relevance")
    assert "$defs" not in schema and "$ref" not in str(schema)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["scale"]["exclusiveMinimum"] == 0
    assert schema["properties"]["scale"]["default"] == 1.0
    assert schema["properties"]["threshold"]["minimum"] == 0
    assert schema["properties"]["threshold"]["maximum"] == 1
    penalties = schema["properties"]["penalties"]
    assert penalties["type"] == "object"
    assert penalties["additionalProperties"] is False
    assert penalties["properties"]["unused_high_relevance"]["default"] == 0.1
    assert penalties["properties"]["max_missing_context_penalty"]["default"] == 0.5


def test_factuality_threshold_schema_allows_null():
    threshold = options_schema("factuality")["properties"]["threshold"]
    assert threshold["default"] is None
    assert {"type": "null"} in threshold["anyOf"]
    number = next(s for s in threshold["anyOf"] if s.get("type") == "number")
    assert number["minimum"] == 0 and number["maximum"] == 1


def _number_paths(schema, prefix=""):
    """Dotted names of every number option in a kind's JSON Schema."""
    for name, prop in schema.get("properties", {}).items():
        if prop.get("type") == "object":
            yield from _number_paths(prop, f"{prefix}{name}.")
        elif prop.get("type") == "number" or any(
            p.get("type") == "number" for p in prop.get("anyOf", [])
        ):
            yield f"{prefix}{name}"


def _nested(path, value):
    *parents, last = path.split(".")
    options = {last: value}
    for part in reversed(parents):
        options = {part: options}
    return options


NUMBER_OPTIONS = [
    (kind, path) for kind in KINDS for path in _number_paths(options_schema(kind))
]
NUMBER_OPTION_IDS = [f"{kind}:{path}" for kind, path in NUMBER_OPTIONS]


def test_every_kind_has_its_number_options_listed():
    found = {f"{kind}:{path}" for kind, path in NUMBER_OPTIONS}
    assert "faithfulness:scale" in found
    assert "factuality:category_scores.disagree" in found
    assert "context_relevance:penalties.max_missing_context_penalty" in found
    assert "answer_relevancy:uncertainty_weight" in found
    assert "factuality:threshold" in found


@pytest.mark.parametrize(
    "bad",
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        1e308,
        -1e308,
        10**400,
        "nan",
        "NaN",
        "inf",
        "-Infinity",
        "1e999",
        "1e308",
    ],
    ids=repr,
)
@pytest.mark.parametrize(("kind", "path"), NUMBER_OPTIONS, ids=NUMBER_OPTION_IDS)
def test_every_number_option_refuses_non_finite_and_huge_values(kind, path, bad):
    with pytest.raises(OptionsError) as info:
        validate_options(kind, _nested(path, bad))
    assert info.value.field == path
    message = str(info.value)
    assert path in message
    assert any(
        words in message for words in ("finite", "less than or equal", "greater than")
    ), message
    assert len(message) < 300  # a 400-digit input is not echoed whole


@pytest.mark.parametrize(("kind", "path"), NUMBER_OPTIONS, ids=NUMBER_OPTION_IDS)
def test_every_number_option_has_a_finite_range_in_its_schema(kind, path):
    prop = options_schema(kind)
    for part in path.split("."):
        prop = prop["properties"][part]
    number = next((p for p in prop.get("anyOf", []) if p["type"] == "number"), prop)
    assert "minimum" in number or "exclusiveMinimum" in number
    assert "maximum" in number


def test_scale_has_a_sensible_upper_bound():
    assert validate_options("faithfulness", {"scale": 100})["scale"] == 100.0
    assert validate_options("faithfulness", {"scale": MAX_SCALE})["scale"] == MAX_SCALE
    with pytest.raises(OptionsError) as info:
        validate_options("faithfulness", {"scale": MAX_SCALE * 10})
    assert info.value.field == "scale"


@pytest.mark.parametrize("value", [0, 0.25, 1, "0.5"])
def test_factuality_category_scores_accept_fractions_of_the_scale(value):
    options = validate_options("factuality", {"category_scores": {"disagree": value}})
    assert options["category_scores"]["disagree"] == float(value)


@pytest.mark.parametrize("value", [1.5, -1, 2, -0.001, 1.0001, 10, -10])
def test_factuality_category_scores_stay_within_0_1(value):
    # A category score outside 0-1 would give a score outside 0-scale, which
    # overrides, aggregates and the histogram do not hold (promptfoo takes any number).
    with pytest.raises(OptionsError) as info:
        validate_options("factuality", {"category_scores": {"subset": value}})
    assert info.value.field == "category_scores.subset"
    assert "less than or equal to 1" in str(
        info.value
    ) or "greater than or equal to 0" in str(info.value)


def test_factuality_category_scores_schema_says_0_to_1():
    schema = options_schema("factuality")["properties"]["category_scores"]
    for prop in schema["properties"].values():
        assert (prop["minimum"], prop["maximum"]) == (0, 1)
