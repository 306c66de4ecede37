from __future__ import annotations


class ApplicationError(Exception):
    """A domain error with a message safe to show to the user.

    `field_errors` maps a field name to its message so forms and the API can point at it.
    """

    status_code = 400

    def __init__(
        self, message: str, *, field_errors: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field_errors = field_errors or {}


class PermissionDeniedError(ApplicationError):
    status_code = 403


class ConflictError(ApplicationError):
    status_code = 409
