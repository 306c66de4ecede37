from __future__ import annotations

from enum import StrEnum


class CeleryQueue(StrEnum):
    DEFAULT = "default"
    SCORING = "scoring"
