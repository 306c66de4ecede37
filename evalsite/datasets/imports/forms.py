"""Moved to evalsite.datasets.readers.forms (re-exported for the review app only)."""

from evalsite.datasets.readers.forms import ConfirmForm, ImportForm, PreviewOptionsForm

__all__ = ["ConfirmForm", "ImportForm", "PreviewOptionsForm"]
