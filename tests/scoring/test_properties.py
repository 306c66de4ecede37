"""Property tests: bounds and monotonicity of the formulas (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import analyze_text, compute_score, passes, round_half_up

YES_NO_UNSURE = st.sampled_from(["yes", "no", "unsure"])
YES_NO = st.sampled_from(["yes", "no"])
SCALES = st.one_of(
    st.just(1.0),
    st.just(10.0),
    st.floats(min_value=0.01, max_value=1000, allow_nan=False),
)
WEIGHT = st.floats(min_value=0, max_value=1)
PENALTY = st.floats(min_value=0, max_value=1)


def within(score: float, scale: float) -> bool:
    # round_half_up can reach at most the next 0.01 above the scaled ratio
    return 0 <= score <= scale + 0.005 + 1e-9 * scale


def claims(values: list[str], key: str = "claim") -> dict:
    return {"verdicts": [{key: str(i), "verdict": v} for i, v in enumerate(values)]}


@given(st.lists(YES_NO_UNSURE, max_size=30), SCALES)
def test_faithfulness_bounded(values, scale):
    assert within(
        compute_score("faithfulness", claims(values), {"scale": scale}), scale
    )


@given(st.lists(YES_NO_UNSURE, min_size=1, max_size=30), st.data(), SCALES)
def test_flipping_no_to_yes_never_lowers_faithfulness(values, data, scale):
    noes = [i for i, v in enumerate(values) if v in ("no", "unsure")]
    if not noes:
        return
    i = data.draw(st.sampled_from(noes))
    flipped = [*values[:i], "yes", *values[i + 1 :]]
    options = {"scale": scale}
    before = compute_score("faithfulness", claims(values), options)
    after = compute_score("faithfulness", claims(flipped), options)
    assert after >= before


@given(st.lists(YES_NO, min_size=1, max_size=30), st.data())
def test_flipping_yes_to_no_never_raises_hallucination(values, data):
    yeses = [i for i, v in enumerate(values) if v == "yes"]
    if not yeses:
        return
    i = data.draw(st.sampled_from(yeses))
    flipped = [*values[:i], "no", *values[i + 1 :]]
    assert compute_score("hallucination", claims(flipped)) <= compute_score(
        "hallucination", claims(values)
    )


@given(st.lists(YES_NO_UNSURE, min_size=1, max_size=30), st.data(), WEIGHT, SCALES)
def test_upgrading_a_verdict_never_lowers_answer_relevancy(values, data, weight, scale):
    i = data.draw(st.integers(min_value=0, max_value=len(values) - 1))
    order = {"no": 0, "unsure": 1, "yes": 2}
    better = data.draw(
        st.sampled_from([v for v in order if order[v] >= order[values[i]]])
    )
    upgraded = [*values[:i], better, *values[i + 1 :]]
    options = {"uncertainty_weight": weight, "scale": scale}
    before = compute_score("answer_relevancy", claims(values, "statement"), options)
    after = compute_score("answer_relevancy", claims(upgraded, "statement"), options)
    assert after >= before
    assert within(before, scale) and within(after, scale)


@given(st.lists(YES_NO, max_size=30), SCALES)
def test_lower_is_better_kinds_bounded(values, scale):
    for kind, key in (
        ("hallucination", "claim"),
        ("bias", "opinion"),
        ("toxicity", "x"),
    ):
        assert within(compute_score(kind, claims(values, key), {"scale": scale}), scale)


@given(st.lists(YES_NO, max_size=30), SCALES)
def test_context_precision_bounded(values, scale):
    analysis = {
        "verdicts": [{"context_index": i, "verdict": v} for i, v in enumerate(values)]
    }
    assert within(compute_score("context_precision", analysis, {"scale": scale}), scale)


@given(st.lists(YES_NO, min_size=2, max_size=20), st.data())
def test_moving_a_useful_chunk_earlier_never_lowers_context_precision(values, data):
    pairs = [
        (i, i + 1)
        for i in range(len(values) - 1)
        if values[i] == "no" and values[i + 1] == "yes"
    ]
    if not pairs:
        return
    i, j = data.draw(st.sampled_from(pairs))
    swapped = list(values)
    swapped[i], swapped[j] = swapped[j], swapped[i]

    def analysis(vs):
        return {
            "verdicts": [{"context_index": k, "verdict": v} for k, v in enumerate(vs)]
        }

    assert compute_score("context_precision", analysis(swapped)) >= compute_score(
        "context_precision", analysis(values)
    )


EVALUATION = st.fixed_dictionaries(
    {
        "context_index": st.integers(min_value=0, max_value=50),
        "relevance": st.sampled_from(["high", "medium", "low", "none"]),
        "used": st.booleans(),
    }
)


@given(
    st.lists(EVALUATION, max_size=20),
    st.lists(st.text(max_size=5), max_size=10),
    PENALTY,
    PENALTY,
    PENALTY,
    SCALES,
)
def test_context_relevance_bounded(evaluations, missing, unused, per_item, cap, scale):
    options = {
        "scale": scale,
        "penalties": {
            "unused_high_relevance": unused,
            "missing_context_per_item": per_item,
            "max_missing_context_penalty": cap,
        },
    }
    analysis = {"evaluations": evaluations, "missing_context": missing}
    assert within(compute_score("context_relevance", analysis, options), scale)


@given(st.lists(EVALUATION, min_size=1, max_size=20), st.data())
def test_marking_a_chunk_used_never_lowers_context_relevance(evaluations, data):
    i = data.draw(st.integers(min_value=0, max_value=len(evaluations) - 1))
    used = [dict(e) for e in evaluations]
    used[i]["used"] = True
    assert compute_score("context_relevance", {"evaluations": used}) >= compute_score(
        "context_relevance", {"evaluations": evaluations}
    )


@given(st.floats(min_value=0, max_value=1), SCALES)
def test_custom_rubric_bounded(score, scale):
    assert within(
        compute_score("custom_rubric", {"score": score}, {"scale": scale}), scale
    )


@given(st.floats(min_value=0, max_value=10_000, allow_nan=False))
def test_round_half_up_is_close_and_two_decimals(x):
    rounded = round_half_up(x)
    assert abs(rounded - x) <= 0.005 + 1e-9 * max(1, x)
    assert math.isclose(rounded * 100, round(rounded * 100), abs_tol=1e-6)


@given(st.integers(min_value=0, max_value=199))
def test_round_half_up_exact_halves_go_up_below_two(cents):
    # x = n.nn5 in [0, 2): the epsilon of SCORERS.md lifts every such half
    # (1.005 is stored as 1.00499999999999989...). Above 2 a float ulp exceeds the
    # epsilon and some halves (2.135) round down, exactly as in Mastra's JS.
    x = (cents * 10 + 5) / 1000
    assert round_half_up(x) == (cents + 1) / 100


def test_round_half_up_follows_the_formula_literally_above_two():
    assert (
        round_half_up(2.135) == 2.13
    )  # 2.13499999999999996447... + 2.2e-16 stays below


TEXT = st.text(max_size=60)


@settings(max_examples=60)
@given(TEXT, TEXT, st.booleans())
def test_text_kinds_ratio_in_unit_interval(output, reference, ignore_case):
    case = {"output": output, "reference": reference + "x", "input": "q"}
    for kind, options in (
        ("content_similarity", {"ignore_case": ignore_case}),
        ("textual_difference", None),
        ("keyword_coverage", None),
        ("completeness", None),
        ("tone_consistency", None),
        ("tone_consistency", {"reference_tone": reference}),
    ):
        value = analyze_text(kind, case, options)["ratio"]
        assert 0 <= value <= 1, (kind, value)


@settings(max_examples=60)
@given(TEXT.filter(lambda t: t.strip()))
def test_text_identical_to_reference_scores_one(text):
    case = {"output": text, "reference": text}
    for kind in (
        "content_similarity",
        "textual_difference",
        "keyword_coverage",
        "completeness",
    ):
        assert analyze_text(kind, case)["ratio"] == 1.0, kind


@given(st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1), SCALES)
def test_pass_rules_are_monotonic(score, threshold, scale):
    options = {"threshold": threshold, "scale": scale}
    if passes("faithfulness", score * scale, options):
        assert passes("faithfulness", min(1.0, score + 0.1) * scale, options)
    if passes("hallucination", score * scale, options):
        assert passes("hallucination", max(0.0, score - 0.1) * scale, options)
