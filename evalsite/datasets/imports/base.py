"""Moved to evalsite.datasets.readers.base (re-exported for the review app only)."""

from evalsite.datasets.readers.base import (
    TOOL_LABELS,
    Grade,
    ImportedRow,
    ImportSummary,
)

__all__ = ["TOOL_LABELS", "Grade", "ImportSummary", "ImportedRow"]
