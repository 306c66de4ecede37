"""Celery's filesystem transport with atomic message writes.

kombu's filesystem transport creates the message file and then writes into it; a worker
polling the folder can move and read the file in between, get an empty payload and die
with a JSONDecodeError. Writing to a temporary name and renaming it into place makes a
message appear whole or not at all.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

SCHEME = "evalsitefs"


class Channel(filesystem.Channel):
    # kombu's filesystem Channel._put, whose stub ignores the same mismatch with
    # AbstractChannel._put(queue, message).
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # The ".tmp" suffix keeps _get from picking the file up before it is complete.
        partial = f"{final}.tmp"
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel


def register() -> None:
    TRANSPORT_ALIASES.setdefault(SCHEME, "evalsite.lib.fstransport:Transport")
