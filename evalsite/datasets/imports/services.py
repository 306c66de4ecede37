"""Moved to evalsite.datasets.readers.services (re-exported for the review app only)."""

from evalsite.datasets.readers.services import (
    GroupSpill,
    ImportPreview,
    ImportSpill,
    import_dataset_create,
    import_detect,
    import_preview,
    import_spill,
)

__all__ = [
    "GroupSpill",
    "ImportPreview",
    "ImportSpill",
    "import_dataset_create",
    "import_detect",
    "import_preview",
    "import_spill",
]
