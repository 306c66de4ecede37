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


# One agent's item (a travel booking) with every agent column, hostile text in a tool
# result: the end-to-end and queue-card tests upload it.
AGENT_ROW = {
    "input": "Book the cheapest flight to Oslo on Friday",
    "output": "Booked SK4411 for 89 EUR.",
    "system_prompt": "You are a travel agent. Never book without searching first.",
    "conversation": [
        {"role": "user", "content": "Book the cheapest flight to Oslo on Friday"},
        {"role": "assistant", "content": "Searching <b>flights</b>…"},
        {"role": "tool", "content": "SK4411 89 EUR", "tool_call_id": "c1"},
        {"role": "assistant", "content": "Booked SK4411 for 89 EUR."},
    ],
    "tool_calls": [
        {
            "id": "c1",
            "name": "search_flights",
            "arguments": {"to": "OSL", "day": "friday"},
            "result": [{"flight": "SK4411", "price": 89}],
        },
        {
            "name": "book",
            "arguments": {"flight": "SK4411"},
            "result": "<script>x</script>",
        },
    ],
    "expected_tool_calls": ["search_flights", "book"],
    "baseline_output": "Booked flight SK4411 (89 EUR).",
    "customer": "c-17",
}
