from __future__ import annotations

from ninja import Router

from evalsite.review.api_queue import router as queue_router

router = Router(tags=["review"])
router.add_router("", queue_router)
