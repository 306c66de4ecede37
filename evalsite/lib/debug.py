"""Error reports that never show a secret, in development too.

Django hides ``sensitive_variables`` locals and ``sensitive_post_parameters`` only when
DEBUG is off, on the grounds that a DEBUG site is not safe anyway. Ours runs with DEBUG on
for every ``make run`` user, and a judge endpoint chosen by any project owner can make a
view fail while a decrypted key sits in a local, so the filter is always on. Frames we
cannot mark (the openai client's, scoring's) are cleansed by name as Django cleanses
settings: any local, or dict key inside one, called like ``api_key``, ``token`` or
``secret`` is shown as stars.

Django's names miss the settings that carry credentials inside a URL (``DATABASE_URL``,
``REDIS_URL``, ``CELERY_BROKER_URL``, a cache's ``LOCATION``) and the process environment,
which the development server copies into every request's META: so every setting,
META entry or local named like a URL, URI, DSN, broker, location or password is
cleansed too, and so is any value that carries a password in a URL
(``scheme://user:password@host``), whatever it is called.
"""

from __future__ import annotations

import re
from types import FrameType
from typing import Any

from django.http import HttpRequest
from django.views.debug import SafeExceptionReporterFilter

# Django's own list plus names whose values are (or hold) URLs with credentials.
HIDDEN_NAMES = re.compile(
    "API|AUTH|TOKEN|KEY|SECRET|PASS|PWD|SIGNATURE|HTTP_COOKIE|CREDENTIAL|PRIVATE"
    "|URL|URI|DSN|BROKER|LOCATION|CONN|DATABASE",
    flags=re.IGNORECASE,
)
# The password of a URL's user information: "postgres://user:s3cret@db/x".
_URL_PASSWORD = re.compile(r"([a-z][a-z0-9+.-]*://[^/\s:@]*):[^/\s@]*@", re.IGNORECASE)


class AlwaysSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    hidden_settings = HIDDEN_NAMES

    def is_active(self, request: HttpRequest | None) -> bool:
        return True

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str) and cleansed != self.cleansed_substitute:
            return _URL_PASSWORD.sub(rf"\1:{self.cleansed_substitute}@", cleansed)
        return cleansed

    def get_traceback_frame_variables(
        self, request: HttpRequest | None, tb_frame: FrameType
    ) -> Any:
        return [
            (name, self.cleanse_setting(name, value))
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]
