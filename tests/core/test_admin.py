from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin

pytestmark = pytest.mark.django_db


def test_every_model_of_ours_is_in_the_admin():
    ours = [m for m in apps.get_models() if m.__module__.startswith("evalsite.")]
    missing = [m.__name__ for m in ours if not admin.site.is_registered(m)]
    assert missing == []


def test_admin_changelists_render(admin_client):
    ours = [m for m in apps.get_models() if m.__module__.startswith("evalsite.")]
    for model in ours:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert admin_client.get(url).status_code == 200, url
