from __future__ import annotations

from typing import Any

import httpx
import pytest

from evalsite.evals.judges.services import judge_create_offline
from evalsite.evals.models import JudgeConnection
from evalsite.evals.scorers.services import scorer_create
from scoring.offline_judge import start_server
from scoring.offline_judge.imperfect import Imperfection
from tests.factories import DatasetFactory

CASES: list[dict[str, Any]] = [
    {
        "input": "How long do refunds take?",
        "output": "Refunds are processed within 5 business days.",
        "context": [
            "Refunds are processed within 5 business days of approval.",
            "Shipping is free for orders over 50 euros.",
        ],
        "reference": "Refunds take 5 business days after approval.",
    },
    {
        "input": "Can I change my delivery address?",
        "output": "No, addresses can never be changed. We also offer free pizza.",
        "context": ["You can change the delivery address until the order has shipped."],
        "reference": "Yes, until the order ships.",
    },
    {
        "input": "Which payment methods do you accept?",
        "output": "We accept Visa, Mastercard and PayPal.",
        "context": ["Accepted payment methods: Visa, Mastercard, PayPal."],
        "reference": "Visa, Mastercard and PayPal.",
    },
]


def support_rows(n: int = 3) -> list[dict[str, Any]]:
    """`n` support questions for DatasetFactory(rows=...): CASES over and over, the
    outputs numbered after the first round so that no two items are the same."""
    return [
        {
            "input": case["input"],
            "output": case["output"] + ("" if i < len(CASES) else f" ({i})"),
            "context": case["context"],
            "reference": case["reference"],
            "metadata": {"row": i},
        }
        for i, case in ((i, CASES[i % len(CASES)]) for i in range(n))
    ]


@pytest.fixture(scope="session")
def offline_judge():
    server = start_server(port=0, enable_control=True)
    yield server
    server.stop()


def judge_control(server, **body) -> None:
    """Script the offline judge (e.g. script=["400"]) for the next requests."""
    root = server.base_url.removesuffix("/v1")
    httpx.post(f"{root}/_control", json=body, timeout=5).raise_for_status()


def judge_stats(server) -> dict:
    return httpx.get(f"{server.base_url.removesuffix('/v1')}/_stats", timeout=5).json()


@pytest.fixture
def judge(project, offline_judge) -> JudgeConnection:
    httpx.post(
        f"{offline_judge.base_url.removesuffix('/v1')}/_reset", timeout=5
    ).raise_for_status()
    # An honest judge unless the test makes it imperfect (the knobs outlive _reset).
    judge_control(offline_judge, **Imperfection().to_dict())
    judge = judge_create_offline(project)
    judge.base_url = offline_judge.base_url
    judge.save(update_fields=["base_url"])
    return judge


@pytest.fixture
def dataset(project):
    return DatasetFactory(project=project, name="support", rows=support_rows(3))


@pytest.fixture
def scorers(project, judge, owner):
    return [
        scorer_create(
            project=project,
            user=owner,
            name="Faithfulness",
            kind="faithfulness",
            judge=judge,
        ),
        scorer_create(
            project=project, user=owner, name="Similarity", kind="content_similarity"
        ),
    ]
