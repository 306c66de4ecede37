from __future__ import annotations

import queue

import pytest
from kombu import Connection

from evalsite.lib import fstransport

fstransport.register()


@pytest.fixture
def channel(tmp_path):
    folder = tmp_path / "q"
    folder.mkdir()
    (tmp_path / "control").mkdir()
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    with Connection("evalsitefs://", transport_options=options) as conn:
        assert isinstance(conn.default_channel, fstransport.Channel)
        yield conn.default_channel, folder


def test_messages_round_trip_and_leave_no_partial_files(channel):
    chan, folder = channel
    chan._put("jobs", {"n": 1})
    assert [p.suffix for p in folder.iterdir()] == [".msg"]
    assert chan._get("jobs") == {"n": 1}
    assert list(folder.iterdir()) == []


def test_a_message_is_visible_to_consumers_only_once_complete(channel, monkeypatch):
    chan, folder = channel
    seen_before_rename = []
    real_replace = fstransport.os.replace

    def spy(src, dst):
        seen_before_rename.append(sorted(p.name for p in folder.iterdir()))
        return real_replace(src, dst)

    monkeypatch.setattr(fstransport.os, "replace", spy)
    chan._put("jobs", {"n": 2})
    # At the moment of the rename only the temporary file existed: no consumer could
    # have picked up a half-written ".msg".
    assert len(seen_before_rename) == 1
    assert all(name.endswith(".msg.tmp") for name in seen_before_rename[0])
    assert chan._get("jobs") == {"n": 2}


def test_temporary_files_are_not_consumed(channel):
    chan, folder = channel
    (folder / "1_abc.jobs.msg.tmp").write_bytes(b"")
    with pytest.raises(queue.Empty):
        chan._get("jobs")
