"""Non-LLM kinds: hand-computed analyses from texts."""

from __future__ import annotations

import pytest

from scoring import CaseError, analyze_text, compute_score
from scoring.textkinds import (
    NEGATORS,
    completeness_elements,
    coverage,
    keywords,
    lemma,
    sentiment_comparative,
    stopwords,
)


def ratio(kind: str, output: str, reference: str | None = None, **options) -> float:
    case = {"output": output, "reference": reference, "input": "unused input"}
    return analyze_text(kind, case, options or None)["ratio"]


# --- content_similarity ---------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "options", "expected"),
    [
        (
            "The quick brown fox",
            "The quick brown dog",
            {},
            0.8,
        ),  # 2 x 12 / (16 + 16 - 2)
        ("night", "nacht", {}, 0.25),  # only "ht" shared: 2 x 1 / 8
        ("Night", "night", {}, 1.0),
        ("Night", "night", {"ignore_case": False}, 0.75),  # ig gh ht: 2 x 3 / 8
        ("a b  c", "abc", {}, 1.0),  # whitespace removed
        ("a", "ab", {}, 0.0),  # shorter than 2
        ("a", "a", {}, 1.0),  # equal beats "shorter than 2"
        (
            "aaaa",
            "aa",
            {},
            0.5,
        ),  # multiset: aa x3 vs aa x1 -> 1 common; 2 / (4 + 2 - 2)
        ("abc", "xyz", {}, 0.0),
    ],
)
def test_content_similarity(a, b, options, expected):
    assert ratio("content_similarity", a, b, **options) == expected


def test_content_similarity_details_and_scale():
    case = {"output": "The quick brown fox", "reference": "The quick brown dog"}
    analysis = analyze_text("content_similarity", case)
    assert analysis["common_bigrams"] == 12
    assert analysis["compared_with"] == "reference"
    assert compute_score("content_similarity", analysis, {"scale": 10}) == 8.0


# --- textual_difference ---------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("kitten", "sitting", 0.6153846153846154),  # LCS "ittn": 8 / 13
        ("tide", "diet", 0.5),  # LCS 2 ("ie"/"de"): 4 / 8; difflib's ratio says 0.25
        ("abc", "abc", 1.0),
        ("", "abc", 0.0),
        ("A", "a", 0.0),  # case-sensitive
        ("abcd", "abxd", 0.75),  # LCS 3: 6 / 8
    ],
)
def test_textual_difference(a, b, expected):
    assert ratio("textual_difference", a, b) == expected


def test_textual_difference_details():
    analysis = analyze_text(
        "textual_difference", {"output": "kitten", "reference": "sitting"}
    )
    assert analysis["lcs_length"] == 4
    assert analysis["changes"] == 5  # 2 deletions + 3 insertions


# --- keyword_coverage -----------------------------------------------------------


def test_keywords_drop_stopwords_punctuation_and_numbers():
    assert keywords("Paris, 2024: the capital of France!") == [
        "paris",
        "capital",
        "france",
    ]
    assert keywords("") == []
    assert "the" in stopwords() and "don't" in stopwords()
    assert keywords("Don’t") == []  # curly apostrophe normalised, then a stopword


def test_keyword_coverage_vectors():
    assert ratio(
        "keyword_coverage", "france capital", "Paris, 2024: the capital of France!"
    ) == (2 / 3)
    assert (
        ratio("keyword_coverage", "anything", "the and of") == 1.0
    )  # no keywords -> 1
    assert ratio("keyword_coverage", "", "capital") == 0.0


def test_keyword_coverage_mastra_examples_use_input_without_reference():
    full = analyze_text(
        "keyword_coverage",
        {
            "input": "JavaScript frameworks like React and Vue",
            "output": "Popular JavaScript frameworks include React and Vue for web development",
        },
    )
    assert full["ratio"] == 1.0
    assert full["compared_with"] == "input"
    assert full["matched"] == ["javascript", "frameworks", "react", "vue"]
    minimal = analyze_text(
        "keyword_coverage",
        {
            "input": "Machine learning models require data preprocessing, feature "
            "engineering, and hyperparameter tuning",
            "output": "Data preparation is important for models",
        },
    )
    assert minimal["total_keywords"] == 10
    assert minimal["matched"] == ["models", "data"]
    assert minimal["ratio"] == 0.2


def test_reference_wins_over_input():
    case = {"input": "capital", "reference": "france", "output": "france"}
    assert analyze_text("keyword_coverage", case)["ratio"] == 1.0
    case = {"input": "capital", "reference": "  ", "output": "france"}
    assert (
        analyze_text("keyword_coverage", case)["ratio"] == 0.0
    )  # blank reference -> input


# --- completeness ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("running", "run"),
        ("making", "make"),
        ("hoping", "hope"),
        ("hopping", "hop"),
        ("studies", "study"),
        ("agreed", "agree"),
        ("stopped", "stop"),
        ("opening", "open"),
        ("falling", "fall"),
        ("boxes", "box"),
        ("cats", "cat"),
        ("went", "go"),
        ("was", "be"),
        ("thing", "thing"),
        ("bus", "bus"),
        ("class", "class"),
    ],
)
def test_lemma(word, expected):
    assert lemma(word) == expected


def test_completeness_elements():
    assert completeness_elements("Cats run") == ["cats", "cat", "run"]
    assert completeness_elements("Élan, vital!") == ["elan", "vital"]
    assert completeness_elements("...") == []


@pytest.mark.parametrize(
    ("reference", "output", "expected"),
    [
        ("Cats run", "cat running", 1.0),  # cats ~ cat (3/4 > 0.6), cat, run exact
        ("Élan vital", "elan", 0.5),  # accents stripped; vital missing
        ("nations", "national", 0.5),  # nation ~ national (6/8); nations not contained
        ("international", "nation", 0.0),  # 6/13 <= 0.6
        ("cat", "cats", 1.0),
        ("car", "cart", 0.0),  # 3 letters or fewer: exact match only
        ("...", "", 1.0),  # no elements, empty output
        ("...", "x", 0.0),  # no elements, non-empty output
    ],
)
def test_completeness(reference, output, expected):
    assert ratio("completeness", output, reference) == expected


def test_completeness_details():
    analysis = analyze_text(
        "completeness", {"reference": "Élan vital", "output": "elan"}
    )
    assert analysis["missing"] == ["vital"]
    assert analysis["total_elements"] == 2


# --- tone_consistency -------------------------------------------------------------


def test_sentiment_comparative():
    assert sentiment_comparative("I love this.") == 1.0  # love +3 over 3 tokens
    assert sentiment_comparative("I do not love this.") == -0.6  # negated: -3 / 5
    assert sentiment_comparative("This isn’t good") == -1.0  # curly apostrophe, negator
    assert sentiment_comparative("") == 0.0
    assert sentiment_comparative("not") == 0.0
    assert {"not", "don't", "isn't", "can't", "won't", "doesn't"} <= NEGATORS


def test_tone_stability():
    analysis = analyze_text(
        "tone_consistency", {"output": "I love this. It is great! I hate the ending."}
    )
    # comparatives 1, 1, -0.75; mean 5/12; population variance 294/432
    assert analysis["sentence_sentiments"] == [1.0, 1.0, -0.75]
    assert analysis["variance"] == pytest.approx(294 / 432)
    assert analysis["ratio"] == pytest.approx(1 - 294 / 432)
    assert analysis["mode"] == "stability"


def test_tone_stability_edges():
    assert ratio("tone_consistency", "all good") == 1.0  # one sentence
    assert ratio("tone_consistency", "") == 1.0
    assert ratio("tone_consistency", "Great. Great!") == 1.0
    # very different sentences: variance 1 -> 0, never negative
    assert ratio("tone_consistency", "Good! Bad! Good! Bad!") == 0.0


def test_tone_against_reference():
    analysis = analyze_text(
        "tone_consistency",
        {"output": "This is good."},
        {"reference_tone": "This is fine"},
    )
    assert analysis["output_sentiment"] == 1.0
    assert analysis["reference_sentiment"] == pytest.approx(2 / 3)
    assert analysis["ratio"] == pytest.approx(2 / 3)
    opposite = analyze_text(
        "tone_consistency",
        {"output": "I do not love this."},
        {"reference_tone": "I love this"},
    )
    assert opposite["ratio"] == 0.0  # 1 - 1.6 clamped


# --- case errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "case", "field"),
    [
        ("content_similarity", {"reference": "x"}, "output"),
        ("textual_difference", {"output": None, "reference": "x"}, "output"),
        ("keyword_coverage", {"output": "x"}, "reference"),
        ("completeness", {"output": "x", "reference": "", "input": " "}, "reference"),
        ("completeness", {"output": "x", "reference": 3}, "reference"),
        ("tone_consistency", {"output": 42}, "output"),
    ],
)
def test_case_errors_name_the_field(kind, case, field):
    with pytest.raises(CaseError) as info:
        analyze_text(kind, case)
    assert info.value.field == field
    assert field in str(info.value)


def test_analyze_text_refuses_llm_kinds():
    with pytest.raises(ValueError, match="judge"):
        analyze_text("faithfulness", {"output": "x", "context": ["y"]})


# --- the JavaScript reference's own rules (checked by make conformance) ----


def test_whitespace_is_javascripts():
    # U+FEFF is whitespace in JavaScript (removed), U+001C only in Python (kept).
    assert ratio("content_similarity", "ab\ufeffcd", "abcd") == 1.0
    assert ratio("content_similarity", "ab\x1ccd", "abcd") < 1.0
    assert ratio("content_similarity", "ab\u00a0c\td", "abcd") == 1.0


def test_textual_difference_last_digits_are_the_references():
    # 2 x LCS / total, divided once as in Mastra; rapidfuzz's normalized similarity
    # (1 - distance / total) gives 0.33333333333333337 here.
    assert ratio("textual_difference", "cabab", "bbcbaababbcacbbcacabaaacc") == 10 / 30


def test_keywords_are_split_as_keyword_extractor_splits_them():
    text = (
        "The state-of-the-art <b>engine</b> (see https://Example.com/A?b=1), "
        "'quoted' “smart” 2024 1st # well-known!"
    )
    assert keywords(text) == [
        "state-of-the-art",
        "engine",
        "https://Example.com/A?b=1),",  # a URL word is kept as it is, case and all
        "quoted",
        "smart",
        "1st",
        "well-known",
    ]
    assert keywords("U.S.A. and/or C++") == ["usa", "and/or", "c++"]
    assert keywords("don’t") == keywords("dont")  # curly apostrophes are removed


def test_tone_tokens_are_the_sentiment_packages():
    # Runs of two or more spaces collapse, a lone tab does not separate words.
    assert sentiment_comparative("good\tbad") == 0.0  # one token, not in the lexicon
    assert sentiment_comparative("good  \t bad") == 0.0  # +3 - 3 over 2 tokens
    assert sentiment_comparative("good \n") == 3.0  # trimmed: one token
    assert sentiment_comparative("don’t like", fold_apostrophes=False) == 1.0


def test_empty_reference_tone_means_none():
    case = {"output": "I love this. I hate that."}
    empty = analyze_text("tone_consistency", case, {"reference_tone": ""})
    assert empty["mode"] == "stability"
    assert empty == analyze_text("tone_consistency", case)
    blank = analyze_text("tone_consistency", case, {"reference_tone": "  "})
    assert blank["mode"] == "reference_tone"  # "  " is a text, as in Mastra


def test_coverage_on_given_elements():
    # walking ~ walkin (6/7 > 60 %); three letters or fewer: exact only.
    assert coverage(["walking", "dog", "cat"], ["walkin", "dog", "cats"]) == (
        2 / 3,
        ["cat"],
    )
    assert coverage([], []) == (1.0, [])
    assert coverage([], ["x"]) == (0.0, [])
