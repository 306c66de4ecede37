from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo data (`manage.py load_demo`, run by `make run`). It owns no tables: it
    calls the services of every other app, so it sits above them all (see the layers
    contract in pyproject.toml)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.demo"
