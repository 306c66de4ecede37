from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.test import RequestFactory

pytestmark = pytest.mark.django_db


def test_buttons_carry_the_current_filter_to_every_format():
    request = RequestFactory().get("/x", {"final": "fail", "q": "a&b"})
    html = render_to_string(
        "exports/_buttons.html", {"project_id": 3, "run_id": 7}, request=request
    )
    assert 'href="/projects/3/runs/7/export.csv?final=fail&amp;q=a%26b"' in html
    assert (
        'href="/projects/3/runs/7/export.csv?excel=1&amp;final=fail&amp;q=a%26b"'
        in html
    )
    assert 'href="/projects/3/runs/7/export.jsonl?final=fail&amp;q=a%26b"' in html
    assert 'href="/projects/3/runs/7/export.parquet?final=fail&amp;q=a%26b"' in html


def test_buttons_without_filters_export_the_whole_run():
    html = render_to_string(
        "exports/_buttons.html",
        {"project_id": 3, "run_id": 7},
        request=RequestFactory().get("/x"),
    )
    assert 'href="/projects/3/runs/7/export.csv"' in html
    assert 'href="/projects/3/runs/7/export.jsonl"' in html
    assert 'href="/projects/3/runs/7/export.parquet"' in html
    assert ">Parquet</a>" in html
