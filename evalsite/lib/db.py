"""Helpers for the few statements written in SQL by hand."""

from __future__ import annotations

from django.db.models import Field, Model


def column_name(model: type[Model], field_name: str) -> str:
    """The database column of one of `model`'s concrete fields."""
    field = model._meta.get_field(field_name)
    if not isinstance(field, Field) or field.column is None:
        raise LookupError(f"{model.__name__}.{field_name} has no column of its own.")
    return field.column
