"""Judge identity: what changes the digest, and the readable label."""

from __future__ import annotations

import pytest

from scoring import OptionsError
from scoring.judge_version import (
    SCORING_VERSION,
    judge_digest,
    judge_label,
    judge_spec,
    template_digest,
)

EXAMPLE = {"output": "Big Ben is in Rome.", "verdict": "fail", "explanation": "London."}


def _digest(
    kind: str = "faithfulness",
    options: dict | None = None,
    model: str = "m",
    temperature: float = 0.0,
) -> str:
    return judge_digest(judge_spec(kind, options, model, {"temperature": temperature}))


def test_the_same_judge_has_the_same_digest() -> None:
    assert _digest() == _digest()
    # Defaults spelled out are the same judge as defaults left out.
    assert _digest(options={"repeat": 1, "examples": [], "rubric": ""}) == _digest()
    assert len(_digest()) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"options": {"rubric": "Be strict."}},
        {"options": {"examples": [EXAMPLE]}},
        {"options": {"repeat": 2, "judge_temperature": 0.5}},
        {"options": {"judge_model": "other"}},
        {"model": "other"},
        {"temperature": 0.3},
        {"kind": "hallucination"},
    ],
)
def test_what_changes_the_judge_changes_the_digest(change: dict) -> None:
    assert _digest(**change) != _digest()


def test_score_only_options_do_not_make_another_judge() -> None:
    assert _digest(options={"threshold": 0.9, "scale": 10}) == _digest()
    # But prompt options do.
    a = _digest("custom_rubric", {"rubric_prompt": "Is {{output}} polite?"})
    b = _digest("custom_rubric", {"rubric_prompt": "Is {{output}} short?"})
    assert a != b


def test_the_overrides_are_recorded_as_the_effective_model_and_temperature() -> None:
    spec = judge_spec(
        "faithfulness",
        {"judge_model": "x", "judge_temperature": 0.4},
        "m",
        {"temperature": 0.0},
    )
    assert spec["model"] == "x" and spec["params"]["temperature"] == 0.4
    assert _digest(options={"judge_model": "x"}) == _digest(model="x")


def test_the_spec_holds_what_the_version_is_made_of() -> None:
    spec = judge_spec("faithfulness", {"examples": [EXAMPLE], "rubric": "R"}, "m", None)
    assert spec["kind"] == "faithfulness"
    assert spec["templates"] == template_digest("faithfulness")
    assert spec["examples"][0]["output"] == EXAMPLE["output"]
    assert spec["rubric"] == "R"
    assert spec["scoring_version"] == SCORING_VERSION
    assert "threshold" not in spec["options"]
    assert template_digest("faithfulness") != template_digest("hallucination")


def test_bad_options_are_refused() -> None:
    with pytest.raises(OptionsError):
        judge_spec("faithfulness", {"repeat": 9}, "m", None)


def test_label() -> None:
    spec = judge_spec(
        "faithfulness", {"examples": [EXAMPLE, EXAMPLE]}, "gpt-4o-mini", None
    )
    assert judge_label(spec, 3) == "faithfulness v3 · gpt-4o-mini · 2 examples"
    one = judge_spec(
        "faithfulness",
        {"examples": [EXAMPLE], "rubric": "R", "repeat": 3, "judge_temperature": 0.7},
        "m",
        None,
    )
    assert (
        judge_label(one, 1)
        == "faithfulness v1 · m · t=0.7 · 1 example · rubric · asked 3×"
    )
