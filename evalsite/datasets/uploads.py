"""Uploaded files kept on disk between the preview and the mapping steps.

The file is uploaded once: the first step stores it under VAR_DIR/uploads named by a
random token, the view binds the token to the user and project in the session, and the
file is deleted after the dataset is created, or by `uploads_cleanup` after an hour.
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

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


def upload_store(*, file: UploadedFile) -> str:
    """Copy an upload to disk chunk by chunk; return its token."""
    uploads_cleanup()
    token = secrets.token_urlsafe(24)
    path = uploads_dir() / f"{token}.upload"
    with open(path, "wb") as out:
        for chunk in file.chunks():
            out.write(chunk)
    return token


def upload_discard(token: str) -> None:
    path = upload_path(token)
    if path is not None:
        path.unlink(missing_ok=True)


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
