"""Uploaded files kept on disk between the preview and the mapping steps.

The file is uploaded once: the first step stores it under VAR_DIR/uploads named by a
random token, the view binds the token to the user and project in the session, and the
file is deleted after the dataset is created, or by `uploads_cleanup` after an hour
(celery beat runs it every 10 minutes, see CELERY_BEAT_SCHEDULE). All waiting files
together may take at most UPLOAD_SPOOL_MAX_BYTES of disk.
"""

from __future__ import annotations

import fcntl
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.services import human_bytes

MAX_AGE_SECONDS = 3600
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def uploads_dir() -> Path:
    path = Path(settings.VAR_DIR) / "uploads"
    path.mkdir(parents=True, exist_ok=True)
    return path


def upload_path(token: str) -> Path | None:
    """The stored file for `token`, or None when the token is malformed or expired."""
    if not _TOKEN_RE.match(token or ""):
        return None
    path = uploads_dir() / f"{token}.upload"
    return path if path.is_file() else None


def _spool_bytes() -> int:
    total = 0
    for path in uploads_dir().glob("*.upload"):
        try:
            total += path.stat().st_size
        except FileNotFoundError:
            continue  # removed meanwhile
    return total


@contextmanager
def _spool_lock() -> Iterator[None]:
    """One process at a time between measuring the spool and reserving room in it."""
    with open(uploads_dir() / ".lock", "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def upload_store(*, file: UploadedFile[bytes]) -> str:
    """Copy an upload to disk chunk by chunk; return its token.

    1. Sweep expired uploads.
    2. Under a lock, check the file fits in UPLOAD_SPOOL_MAX_BYTES with every upload
       still waiting, and reserve its room: the file is created at its full (sparse)
       size, so a concurrent upload counts it. ApplicationError when it does not fit.
    3. Copy the upload into it.
    """
    uploads_cleanup()
    size = file.size or 0
    cap = settings.UPLOAD_SPOOL_MAX_BYTES
    token = secrets.token_urlsafe(24)
    path = uploads_dir() / f"{token}.upload"
    with _spool_lock():
        used = _spool_bytes()
        if used + size > cap:
            raise ApplicationError(
                f"The server's room for uploads waiting for their column mapping is "
                f"full ({human_bytes(used)} of {human_bytes(cap)} in use, this file is "
                f"{human_bytes(size)}). Finish or abandon other uploads, or try again "
                "within the hour; an administrator can raise UPLOAD_SPOOL_MAX_BYTES.",
                field_errors={"file": "No room for this upload on the server now."},
            )
        with open(path, "wb") as out:
            out.truncate(size)
    try:
        with open(path, "r+b") as out:
            for chunk in file.chunks():
                out.write(chunk)
            out.truncate()
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return token


def upload_discard(token: str) -> None:
    path = upload_path(token)
    if path is not None:
        path.unlink(missing_ok=True)


def upload_remember(
    session: SessionBase, *, key: str, token: str, info: dict[str, object]
) -> None:
    """Bind a stored upload to the session under `key` (the dataset upload's and the
    import's are kept apart), dropping entries older than MAX_AGE_SECONDS. `info`
    holds at least project_id, user_id and filename."""
    now = time.time()
    pending = {
        t: known
        for t, known in session.get(key, {}).items()
        if now - known.get("created", 0) <= MAX_AGE_SECONDS
    }
    pending[token] = {**info, "created": now}
    session[key] = pending


def upload_recall(
    session: SessionBase,
    *,
    key: str,
    token: str,
    project_id: int,
    user_id: int,
    expired: str,
) -> tuple[dict[str, Any], File[bytes]]:
    """The stored file for `token` if this user stored it in this project within the
    hour, with what was remembered about it; else Http404 saying `expired`."""
    info = session.get(key, {}).get(token)
    if (
        not info
        or info.get("project_id") != project_id
        or info.get("user_id") != user_id
        or time.time() - info.get("created", 0) > MAX_AGE_SECONDS
    ):
        raise Http404(expired)
    path = upload_path(token)
    if path is None:
        raise Http404(expired)
    return info, File(open(path, "rb"), name=info["filename"])  # noqa: SIM115


def upload_forget(session: SessionBase, *, key: str, token: str) -> None:
    """Delete the stored file and its entry in the session."""
    upload_discard(token)
    pending = session.get(key, {})
    pending.pop(token, None)
    session[key] = pending


def uploads_cleanup(*, max_age_seconds: int = MAX_AGE_SECONDS) -> int:
    """Delete stored uploads older than `max_age_seconds`; returns how many. Safe to run
    twice, and from any process."""
    cutoff = time.time() - max_age_seconds
    removed = 0
    for path in uploads_dir().glob("*.upload"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue  # another process removed it first
    return removed
