"""Review API: one router for the app, combining the item page's routers and one
router per feature."""

from __future__ import annotations

from ninja import Router

from evalsite.review.api import aggregates, comments, overrides, rescore
from evalsite.review.estimates import api as estimates
from evalsite.review.explorer import api as explorer
from evalsite.review.guidelines import api as guidelines
from evalsite.review.housekeeping import api as housekeeping
from evalsite.review.pairwise import api as pairwise
from evalsite.review.queues import api as queues
from evalsite.review.team import api as reviews

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
    estimates,
    housekeeping,
):
    router.add_router("", _module.router)
router.add_router("", guidelines.router)
