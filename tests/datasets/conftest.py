from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.datasets.models import Dataset
from evalsite.datasets.services import dataset_create


def upload(name: str, data: bytes | str) -> SimpleUploadedFile:
    if isinstance(data, str):
        data = data.encode()
    return SimpleUploadedFile(name, data)


GOOD_CSV = (
    "input,output,context,reference,topic\n"
    'How do I export?,Use File > Export.,"[""Export is under File."", ""PDF and Markdown are supported.""]",'
    "File > Export,export\n"
    'Is sync free?,Yes.,"[""Sync is free on all plans.""]",Yes,sync\n'
)


@pytest.fixture
def good_csv():
    return upload("support.csv", GOOD_CSV)


def uploaded_dataset(project, owner, rows: int = 3, *, chunks: bool = False) -> Dataset:
    """Dataset "d" uploaded through the service as a CSV of rows q0,a0 … (the way a user
    makes one; tests/factories.DatasetFactory skips parsing). `chunks=True` adds a JSON
    context column of two chunks per row ("chunk 0a", "chunk 0b", …)."""
    if chunks:
        data = "input,output,context\n" + "".join(
            f'q{i},a{i},"[""chunk {i}a"", ""chunk {i}b""]"\n' for i in range(rows)
        )
    else:
        data = "input,output\n" + "".join(f"q{i},a{i}\n" for i in range(rows))
    return dataset_create(
        project=project, user=owner, file=upload("d.csv", data), name="d"
    )
