from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection


class Command(BaseCommand):
    help = "Check that the database and the Celery broker are reachable; one line per problem."

    def handle(self, *args: Any, **options: Any) -> None:
        problems = []
        try:
            connection.ensure_connection()
        except Exception as exc:  # any driver error means the same thing to the user
            problems.append(f"DATABASE_URL: cannot connect ({_first_line(exc)})")
        try:
            from evalsite.celery import app

            with app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=3)
        except Exception as exc:
            problems.append(
                f"REDIS_URL: cannot reach the Celery broker {settings.CELERY_BROKER_URL!r} ({_first_line(exc)})"
            )
        if problems:
            raise CommandError("; ".join(problems))
        self.stdout.write("preflight ok: database and broker reachable")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
