from __future__ import annotations

import socket

from evalsite.core.models import WorkerPing


def ping_record(*, marker: str) -> WorkerPing:
    ping, _ = WorkerPing.objects.get_or_create(
        marker=marker, defaults={"hostname": socket.gethostname()}
    )
    return ping
