"""Items are numbered from 1 on every page (as context chunks are); the API and the
exports keep the 0-based `index`. Metadata shows as a tree, never a Python repr."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.queues.services import queue_create
from tests.conftest import login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(project, kinds=["faithfulness"])


def _first(run):
    return Result.objects.filter(run=run).order_by("item__index").first()


def test_the_item_page_and_the_explorer_count_items_from_one(client, reviewer, run):
    result = _first(run)
    assert result.item.index == 0 and result.item.number == 1
    login(client, reviewer)
    html = client.get(
        reverse("review:item", args=[run.project_id, result.pk])
    ).content.decode()
    assert re.search(r"<h1>Item 1 <span", html)
    assert "Item 0" not in html
    html = client.get(
        reverse("review:explorer", args=[run.project_id, run.pk])
    ).content.decode()
    assert ">#1</a>" in html and ">#0</a>" not in html


def test_the_queue_card_counts_items_from_one(client, reviewer, run):
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    first = queue.entries.order_by("position").first().result.item
    login(client, reviewer)
    html = client.get(
        reverse("review:queue", args=[queue.project_id, queue.pk]) + "?pos=1"
    ).content.decode()
    assert f"Item #{first.index + 1} ·" in html
    assert f"Item #{first.index} ·" not in html


def test_the_api_keeps_the_zero_based_index(client, reviewer, run, bearer):
    result = _first(run)
    body = client.get(f"/api/results/{result.pk}", **bearer(reviewer)).json()
    assert body["item"]["index"] == 0


def test_item_metadata_shows_as_a_tree_not_a_python_repr(client, reviewer, run):
    result = _first(run)
    item = result.item
    item.metadata = {
        "source": "wiki",
        "trace": {"steps": [1, 2], "ok": True, "note": None},
    }
    item.save(update_fields=["metadata"])
    login(client, reviewer)
    html = client.get(
        reverse("review:item", args=[run.project_id, result.pk])
    ).content.decode()
    block = html.split('id="item-metadata"', 1)[1].split("</section>", 1)[0]
    assert "{&#x27;" not in block and "True" not in block and "None" not in block
    assert "<dt>trace</dt>" in block and '<span class="json-bool">true</span>' in block
    assert '<span class="json-null">null</span>' in block
