from __future__ import annotations

from django.apps import AppConfig


class CompareConfig(AppConfig):
    """Model-less; installed so that its tasks are registered (workers discover
    them, and web processes send them by name)."""

    name = "evalsite.compare"

    def ready(self) -> None:
        # The page sends its count by name (compare.figures); importing the module
        # registers it in this process too, which eager tests need.
        from evalsite.compare import tasks  # noqa: F401
