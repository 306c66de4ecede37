"""Every judged kind's prompts stay byte-identical when the code around them moves.

The judge cache keys and the offline judge depend on the exact text of every message and
on the reply schemas sent with it. For each judged kind this test runs one fixed case
through the offline judge (deterministic) with a cache that records the key of every call
(sha256 of base URL, model, messages and parameters, schema included), and compares the
sha256 of those keys, in order, with a digest hard-coded below.

The digests in ``EXPECTED`` were computed from the code BEFORE the kinds were moved into
``scoring.kinds`` (one module per family): ``prompt_digest`` run against that code, twice
(identical), and its output pasted here. A change here means a prompt or a reply schema changed: the
judge cache is then cold for that kind and the offline judge must still recognise it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from scoring.judge import judge_case, make_client
from scoring.registry import KINDS

CONTEXT = [
    "The Eiffel Tower is in Paris. It was completed in 1889 and is 330 metres tall.",
    "Paris is the capital of France.",
]
QUESTION = "Where is the Eiffel Tower and when was it completed?"
BASE = {
    "input": QUESTION,
    "output": "The Eiffel Tower is in Paris. The Eiffel Tower was completed in 1925. "
    "Only a fool would build it anywhere else, I think.",
    "context": CONTEXT,
    "reference": "The Eiffel Tower is in Paris and was completed in 1889.",
}

# kind -> (case, options); kinds not listed use BASE and their default options.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "custom_rubric": (
        BASE,
        {"rubric_prompt": "Is {{output}} polite? Asked: {{input}}."},
    ),
    "noise_sensitivity": (
        {**BASE, "baseline_output": "The Eiffel Tower was completed in 1889."},
        None,
    ),
    "prompt_alignment": (
        {
            "input": "Name the capital of France. Do not mention Germany.",
            "output": "The capital of France is Paris, unlike Germany's Berlin.",
        },
        None,
    ),
    "rubric": (
        BASE,
        {
            "criteria": [
                {"description": "Names Paris"},
                {"description": "Gives the height in metres"},
            ]
        },
    ),
    "multi_turn_judge": (
        {
            "conversation": [
                {"role": "user", "content": "Weather in London?"},
                {"role": "assistant", "content": "London will have rain."},
                {"role": "user", "content": "And Paris?"},
            ],
            "output": "Paris will be sunny.",
        },
        {"criterion": "Weather for London and Paris."},
    ),
    "tool_call_accuracy_llm": (
        {
            "input": "What is the weather in Paris?",
            "output": "Sunny.",
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Paris"}},
                {"name": "send_email", "arguments": {"to": "bob"}},
            ],
        },
        {"available_tools": "get_weather: a forecast\nsend_email: sends mail"},
    ),
    "trajectory_accuracy_llm": (
        {
            "input": "Search and summarise",
            "output": "Done.",
            "tool_calls": [
                {"name": "search"},
                {"name": "search"},
                {"name": "summarize"},
            ],
            "expected_trajectory": ["search", "summarize"],
        },
        None,
    ),
}

EXPECTED: dict[str, str] = {
    "faithfulness": "7e38392cb0e7d7c40c35ad61b526861e6f762e163f38d4bfd9bf6784221c0418",
    "hallucination": "0c440198c86a1cedd09830ca351619523faef4fba8a86292523c7454772287d2",
    "context_relevance": "3cd7392eff9a40873d85577ba695b85927a9688df762169ab0cbf4531b109c0f",
    "context_precision": "df20af327e91b4cf38fe26ecd0b906aeb2d1a31d7c3da1fa642da9e872440acd",
    "answer_relevancy": "6218a3218b3acfde4a8c0ec38a502e50fb920ce3567e5f44ac7cca6220e345eb",
    "bias": "c58ca57bf0750db49d2ab35589667ff4aa9126401e4c96c81b8a03f9f0ebc2c9",
    "toxicity": "5d1ac74e0dd54fbcb8f835fa5c4257d2cb9eb05b56c6b31103f779b8c86dfa24",
    "factuality": "1b7b0ff1d00eaab3e8d81d679e087c781a4a8553368852fe909505d82685a8c1",
    "custom_rubric": "7d687dd1c132373152376a5cbe80c25e81464696021b78de91140bbbdca9c646",
    "rubric": "128728998aa2f765e82d0f599825cc5eb06a4a0791965ecaff5a72934ee042ad",
    "multi_turn_judge": "5f2e3ac06f607ac7c3029bb8e73ef9731fcc82103f147e2c79d531329c7f497a",
    "tool_call_accuracy_llm": "c6a60a761d56795521bf53a029880091482be1494b479cd524a65c0b30fc7ef6",
    "trajectory_accuracy_llm": "672b0480f08f6e040de7df8f7bfab17d3bf55871ac732f6f22859d97949e5990",
    "answer_similarity": "4470c966cdbabaab9d29a565c74eb3e630e0f9e1747275a036863a3834a28198",
    "context_recall": "e227a25a3dfe6f397b8f020304da94af20002d71b8f7d017b03cb013189f45cc",
    "noise_sensitivity": "6c1447ece55f1c23eef731ff9520341ad2d3f3961be600f19c73c0138fcc6f72",
    "prompt_alignment": "bb291f3b04b2457d750fa5b992b3daa8ea79e08b4ed754fa07ee8048f6b5f361",
    "summarization": "74f6e00d66890cc3b23f56985d2437e7d3ae1eba038111772804f18e1634f061",
}

JUDGED = [name for name, spec in KINDS.items() if spec.needs_judge]


class RecordingCache:
    """A cache that never hits and remembers every key asked for, in order."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def get(self, key: str) -> dict[str, Any] | None:
        self.keys.append(key)
        return None

    def set(self, key: str, value: dict[str, Any]) -> None:
        pass


def prompt_digest(base_url: str, kind: str) -> str:
    case, options = CASES.get(kind, (BASE, None))
    cache = RecordingCache()
    judge_case(
        kind,
        case,
        options,
        make_client(base_url, "test-key", timeout=10.0),
        model="digest-model",
        # The key includes the base URL, which is a random port here: a fixed one.
        base_url="http://judge.invalid/v1",
        cache=cache,
    )
    assert cache.keys, kind
    return hashlib.sha256("\n".join(cache.keys).encode()).hexdigest()


def test_every_judged_kind_has_a_digest() -> None:
    assert sorted(EXPECTED) == sorted(JUDGED)


@pytest.mark.parametrize("kind", JUDGED)
def test_prompts_are_unchanged(judge: Any, kind: str) -> None:
    assert prompt_digest(judge.base_url, kind) == EXPECTED[kind]
