"""Review API: one router for the app, combining one router per domain."""

from __future__ import annotations

from ninja import Router

from evalsite.review.api import (
    aggregates,
    comments,
    explorer,
    guidelines,
    overrides,
    pairwise,
    queues,
    rescore,
    reviews,
)

router = Router(tags=["review"])
for _module in (
    overrides,
    aggregates,
    rescore,
    explorer,
    comments,
    queues,
    reviews,
    pairwise,
):
    router.add_router("", _module.router)
router.add_router("", guidelines.router)
