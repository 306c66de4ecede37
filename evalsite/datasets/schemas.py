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
    archived: bool
    created_at: datetime


class ItemOut(Schema):
    id: int
    index: int
    input: str
    output: str
    context: list[str]
    reference: str
    metadata: dict[str, Any]
    # Agent data: "" or null when the item has none.
    system_prompt: str
    conversation: list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]] | None
    expected_tool_calls: list[Any] | None
    expected_trajectory: list[Any] | None
    baseline_output: str
