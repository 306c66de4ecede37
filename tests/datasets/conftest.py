from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile


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
