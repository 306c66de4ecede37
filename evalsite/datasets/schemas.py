from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema


class DatasetOut(Schema):
    id: int
    project_id: int
    name: str
    version: int
    item_count: int
    columns: list[str]
    mapping: dict[str, Any]
    file_format: str
    source_filename: str
    created_at: datetime


class ItemOut(Schema):
    id: int
    index: int
    input: str
    output: str
    context: list[str]
    reference: str
    metadata: dict[str, Any]
