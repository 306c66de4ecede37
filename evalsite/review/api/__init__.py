"""Review API: one router for the app, combining one router per domain."""

from __future__ import annotations

from ninja import Router

from evalsite.review.api import (
    aggregates,
    comments,
    compare,
    estimates,
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
    compare,
    explorer,
    comments,
    queues,
    reviews,
    pairwise,
    estimates,
):
    router.add_router("", _module.router)
router.add_router("", guidelines.router)
