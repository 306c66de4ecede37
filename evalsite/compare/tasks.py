"""Compare's tasks."""

from __future__ import annotations

from celery import shared_task

from evalsite.compare.figures import COMPARE_FIGURES_TASK, compare_figures_count


@shared_task(name=COMPARE_FIGURES_TASK, acks_late=True)
def compare_figures_count_task(run_ids: list[int], match: str, key: str) -> None:
    """Count the compare page's figures of these runs not cached yet (the page
    polls for them meanwhile). Safe to run again: a second run finds them cached."""
    compare_figures_count(run_ids=run_ids, match=match, key=key)
