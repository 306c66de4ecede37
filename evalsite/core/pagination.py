from __future__ import annotations

from django.conf import settings
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination as NinjaLimitOffsetPagination

# Larger offsets overflow the database's integer types (a 500 instead of an empty page).
MAX_OFFSET = 2**62


class LimitOffsetPagination(NinjaLimitOffsetPagination):
    """ninja's limit/offset pagination with both numbers bounded."""

    class Input(Schema):
        limit: int = Field(
            settings.NINJA_PAGINATION_PER_PAGE,
            ge=1,
            le=settings.NINJA_PAGINATION_MAX_LIMIT,
        )
        offset: int = Field(0, ge=0, le=MAX_OFFSET)
