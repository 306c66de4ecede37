from __future__ import annotations

import httpx
import pytest

from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import JudgeConnection
from evalsite.evals.services import judge_create_offline, scorer_create
from scoring.offline_judge import start_server

CASES = [
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


def make_dataset(project, n: int = 3, name: str = "support") -> Dataset:
    dataset = Dataset.objects.create(
        project=project, name=name, file_format="jsonl", item_count=n
    )
    Item.objects.bulk_create(
        Item(
            dataset=dataset,
            index=i,
            input=CASES[i % len(CASES)]["input"],
            output=CASES[i % len(CASES)]["output"]
            + ("" if i < len(CASES) else f" ({i})"),
            context=CASES[i % len(CASES)]["context"],
            reference=CASES[i % len(CASES)]["reference"],
            metadata={"row": i},
        )
        for i in range(n)
    )
    return dataset


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
    judge = judge_create_offline(project)
    judge.base_url = offline_judge.base_url
    judge.save(update_fields=["base_url"])
    return judge


@pytest.fixture
def dataset(project):
    return make_dataset(project)


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
