"""Types shared by the apps' API schemas."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import Field

# The id of a row: a positive 64-bit integer. Larger numbers are refused as input (422)
# rather than reaching the database, where SQLite raises OverflowError on them, and
# inside a streamed export that happens after the response has begun.
ObjectId = Annotated[int, Field(ge=1, le=2**63 - 1)]


class ErrorFieldOut(Schema):
    field: str
    message: str


class ErrorOut(Schema):
    """The API's one error body (evalsite/api.py maps every error to it)."""

    detail: str
    errors: list[ErrorFieldOut]
