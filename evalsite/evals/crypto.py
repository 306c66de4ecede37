"""Encryption of judge API keys at rest (Fernet, key derived from SECRET_KEY).

Rotating SECRET_KEY makes stored keys unreadable: `secret_decrypt` then raises
SecretUnreadableError and the owner must enter the key again.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from evalsite.core.exceptions import ApplicationError

# Domain separation: the same SECRET_KEY also signs sessions; this key is for this use only.
_HKDF_INFO = b"evalsite.evals.judge-api-key.v1"


class SecretUnreadableError(ApplicationError):
    pass


def _fernet() -> Fernet:
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=_HKDF_INFO
    ).derive(settings.SECRET_KEY.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(derived))


def secret_encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode("utf-8")).decode("ascii")


def secret_decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError) as exc:
        raise SecretUnreadableError(
            "The stored API key cannot be decrypted (was SECRET_KEY changed?). "
            "Enter the key again."
        ) from exc
