"""Types shared by the apps' API schemas."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

# The id of a row: a positive 64-bit integer. Larger numbers are refused as input (422)
# rather than reaching the database, where SQLite raises OverflowError on them, and
# inside a streamed export that happens after the response has begun.
ObjectId = Annotated[int, Field(ge=1, le=2**63 - 1)]
