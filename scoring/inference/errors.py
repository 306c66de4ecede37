"""What the estimators raise when the data cannot support a figure."""

from __future__ import annotations


class NotEnoughData(ValueError):
    """Too few labels (or annotators) for the figure asked for; the message says how
    many more are needed."""
