"""The input shapes the differential suite widened to (issue 26): non-ASCII case folding,
non-boolean flags, JSON replies with text around them, and factuality replies that mix a
leading letter with a later parenthesised one. Expected values are what the reference
(Node 22.23's JavaScript, promptfoo 0.123.1, Mastra 1.10.2) gives, or the documented
difference (README, `factuality-mixed-letters`)."""

from __future__ import annotations

import json

import pytest

from scoring.analysis import parse_factuality_reply
from scoring.errors import AnalysisError
from scoring.jstext import js_lower, js_strip
from scoring.kinds.agent import ConversationVerdictReply, CriterionReply
from scoring.kinds.context_relevance import ContextRelevanceReply
from scoring.kinds.rag import Requirement, SummaryClaim
from scoring.kinds.toxicity import ToxicityVerdictsReply
from scoring.prompts import load_json_object, parse_model
from scoring.textkinds import dice_ratio, keywords, sentiment_comparative

# ------------------------------------------------------------------ case folding


@pytest.mark.parametrize(
    ("text", "lowered"),
    [
        # what JavaScript's toLowerCase() gives on Node 22.23 (Unicode 17)
        ("İ", "i\u0307"),
        ("ΣΑΣ", "σας"),
        ("ΑΣ.", "ας."),
        ("ß", "ß"),
        ("\u212a", "k"),
        ("\ua7cbX", "ɤx"),  # Unicode 16: Latin capital ram's horn
        ("\u1c89", "\u1c8a"),  # Unicode 16: Cyrillic Tje
        ("\U00010d50\U00010d51", "\U00010d70\U00010d71"),  # Unicode 16: Garay
        ("\U00016ea0", "\U00016ebb"),  # Unicode 17: Beria Erfe
        # a Garay letter is cased: the sigma before it is not final, after it it is
        ("ΑΣ\U00010d50", "ασ\U00010d70"),
        ("\U00010d50Σ", "\U00010d70ς"),
        ("ΑΣ\u0301\ua7da", "ασ\u0301\ua7db"),  # through a combining accent
        ("İΣ\ua7cb", "i\u0307σɤ"),  # İ lengthens the text before the sigma
    ],
)
def test_js_lower_is_javascripts_to_lower_case(text, lowered):
    assert js_lower(text) == lowered


def test_js_strip_is_javascripts_trim():
    assert js_strip("\ufeff yes\u00a0\n") == "yes"
    assert js_strip("yes\x85") == "yes\x85"  # U+0085 is not JavaScript whitespace
    assert js_strip("\x1cyes") == "\x1cyes"


def test_text_scorers_fold_letters_newer_than_pythons_unicode():
    assert dice_ratio("\ua7cbAMS", "ɤams")[0] == 1.0
    # lower-cased before the spaces go, as Mastra does: the sigma before a space is final
    assert dice_ratio("ΣΑΣ like", "σας like")[0] == 1.0
    assert keywords("\U00010d50\U00010d51 garden") == ["\U00010d70\U00010d71", "garden"]
    assert sentiment_comparative("GOOD \ua7cb") == sentiment_comparative("good ɤ")


# ------------------------------------------------------------------ verdict words


def test_verdicts_are_trimmed_as_javascript_trims():
    def verdict(raw: str) -> object:
        reply = parse_model(
            '{"verdicts": [{"verdict": ' + raw + ', "reason": "r"}]}',
            ToxicityVerdictsReply,
        )
        return reply.model_dump()["verdicts"][0]["verdict"]

    assert verdict('"yes\\ufeff"') == "yes"
    assert verdict('"\\u00a0YES"') == "yes"
    for broken in ('"yes\\u0085"', '"\\uff39\\uff25\\uff33"', "true", "1", "null"):
        with pytest.raises(ValueError):
            verdict(broken)


# ------------------------------------------------------------------ boolean flags


@pytest.mark.parametrize("flag", ["yes", "Yes", "true", "no", "1", 1, 0, None])
def test_a_judge_flag_must_be_a_json_boolean(flag):
    chunk = {"context_index": 0, "relevance": "high", "used": flag, "reason": "r"}
    replies = [
        (ContextRelevanceReply, {"evaluations": [chunk], "missing_context": []}),
        (ConversationVerdictReply, {"satisfied": flag, "reason": "r"}),
        (CriterionReply, {"number": 1, "satisfied": flag, "reason": "r"}),
        (Requirement, {"requirement": "x", "fulfilled": flag, "reason": "r"}),
        (SummaryClaim, {"claim": "x", "supported": flag, "reason": "r"}),
    ]
    for model, data in replies:
        with pytest.raises(ValueError, match="boolean"):
            parse_model(json.dumps(data), model)


def test_a_json_boolean_flag_is_read():
    reply = parse_model('{"satisfied": false, "reason": "r"}', ConversationVerdictReply)
    assert reply.model_dump()["satisfied"] is False


# ------------------------------------------------------------------ JSON with text


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": 1}\nThe reasoning is that the claims hold.',
        '{"a": 1}\n\nNote: {see above}',
        '```json\n{"a": 1}\n```\nThat is all.',
        'Here is the JSON you asked for:\n{"a": 1}',
        '{"a": 1}\n{"a": 2}',
        '{"a": 1} ```',
    ],
)
def test_the_object_opening_the_reply_is_read_and_the_text_around_it_ignored(raw):
    assert load_json_object(raw) == {"a": 1}


@pytest.mark.parametrize(
    "raw",
    ['{"verdicts": [{"verdict": "yes", "reason": "r"}', "no JSON here", "", "[1, 2]"],
)
def test_a_reply_without_a_complete_object_is_refused(raw):
    with pytest.raises(ValueError):
        load_json_object(raw)


# ------------------------------------------------------------------ factuality


@pytest.mark.parametrize(
    ("reply", "category"),
    [
        # the opening JSON object, text after it ignored (promptfoo reads the same)
        ('{"category": "B", "reason": "r"}\nThe reasoning is that it is not (C).', "B"),
        ('```json\n{"category": "d", "reason": "r"}\n```\nThat is all.', "D"),
        # a parenthesised letter first: both read it
        ("(C) The answer covers it. answer: D", "C"),
        ("a) The answer covers it. Not (B).", "A"),
        # a leading lone letter, a later parenthesis: ours reads the leading letter
        # (README, factuality-mixed-letters; promptfoo reads B and E)
        ("A. The answer covers it. It is not (B) because details differ.", "A"),
        ("b: The answer covers it (see above)", "B"),
    ],
)
def test_factuality_replies_mixing_letters(reply, category):
    assert parse_factuality_reply(reply)["category"] == category


def test_a_factuality_json_reply_without_category_is_not_read_from_text_after_it():
    with pytest.raises(AnalysisError):
        parse_factuality_reply('{"reason": "r"}\nAnswer: (C)')
