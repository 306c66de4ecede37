from __future__ import annotations

from ninja import Router

# Results list with filters, comments, assignments, queues (helper D2).
router = Router(tags=["review"])
