from __future__ import annotations

import queue

import pytest
from kombu import Connection

from evalsite.lib import fstransport

fstransport.register()


@pytest.fixture
def connection(tmp_path):
    folder = tmp_path / "q"
    folder.mkdir()
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    (tmp_path / "control").mkdir()
    with Connection("evalsitefs://", transport_options=options) as conn:
        yield conn, folder


def test_messages_round_trip_and_leave_no_partial_files(connection):
    conn, folder = connection
    q = conn.SimpleQueue("jobs")
    q.put({"n": 1})
    assert [p.suffix for p in folder.iterdir()] == [".msg"]
    assert q.get(timeout=1).payload == {"n": 1}
    q.close()


def test_a_message_is_visible_to_consumers_only_once_complete(connection, monkeypatch):
    conn, folder = connection
    seen_before_rename = []
    real_replace = fstransport.os.replace

    def spy(src, dst):
        seen_before_rename.append(sorted(p.name for p in folder.iterdir()))
        return real_replace(src, dst)

    monkeypatch.setattr(fstransport.os, "replace", spy)
    q = conn.SimpleQueue("jobs")
    q.put({"n": 2})
    # At the moment of the rename only the temporary file existed: no consumer could
    # have picked up a half-written ".msg".
    assert len(seen_before_rename) == 1
    assert all(name.endswith(".msg.tmp") for name in seen_before_rename[0])
    assert q.get(timeout=1).payload == {"n": 2}
    q.close()


def test_temporary_files_are_not_consumed(connection):
    conn, folder = connection
    q = conn.SimpleQueue("jobs")
    (folder / "1_abc.jobs.msg.tmp").write_bytes(b"")
    with pytest.raises(queue.Empty):
        q.get(timeout=0.2)
    q.close()
