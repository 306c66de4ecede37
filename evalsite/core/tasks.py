from __future__ import annotations

from celery import shared_task


@shared_task(name="core.ping_write")
def ping_write(marker: str) -> None:
    """Write a marker row; the integration suite uses it to prove the worker round trip."""
    from evalsite.core.services import ping_record

    ping_record(marker=marker)
