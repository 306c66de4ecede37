"""A Parquet file written row group by row group while it streams.

pyarrow's ParquetWriter writes to any file-like object; `_Drain` is one that keeps
what was written until the generator hands it on, so after each row group (and the
footer at the end) the bytes leave and memory holds one row group's values at most.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_TYPES: dict[str, Any] = {
    "int": pa.int64(),
    "count": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "str": pa.string(),
    "time": pa.timestamp("us", tz="UTC"),
    "json": pa.string(),
    "list": pa.string(),
    "meta": pa.string(),
}


class _Drain(io.RawIOBase):
    """A write-only file that keeps its bytes until `take()`."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts = []
        return data


def parquet_schema(
    columns: Sequence[tuple[str, str]], metadata: dict[str, str] | None = None
) -> Any:
    return pa.schema(
        [pa.field(name, _TYPES[kind]) for name, kind in columns], metadata=metadata
    )


def parquet_stream(
    columns: Sequence[tuple[str, str]],
    rows: Iterable[list[Any]],
    *,
    rows_per_group: int,
    metadata: dict[str, str] | None = None,
) -> Iterator[bytes]:
    """`rows` (values in `columns` order, as Arrow takes them for each column's type:
    nested values and metadata already text, see parquet_types) as a Parquet file,
    one row group per `rows_per_group` rows. An empty `rows` is a valid file with
    the schema and no row group."""
    schema = parquet_schema(columns, metadata)
    drain = _Drain()
    writer = pq.ParquetWriter(drain, schema, compression="snappy")
    try:
        group: list[list[Any]] = []
        for row in rows:
            group.append(row)
            if len(group) >= rows_per_group:
                writer.write_table(_table(group, schema))
                group = []
                yield drain.take()
        if group:
            writer.write_table(_table(group, schema))
    finally:
        writer.close()
    yield drain.take()


def _table(group: list[list[Any]], schema: Any) -> Any:
    # zip(*group) turns rows into columns in C.
    arrays = [
        pa.array(column, type=field.type)
        for field, column in zip(schema, zip(*group, strict=True), strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)
