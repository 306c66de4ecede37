"""Error reports that never show a secret, in development too.

Django hides ``sensitive_variables`` locals and ``sensitive_post_parameters`` only when
DEBUG is off, on the grounds that a DEBUG site is not safe anyway. Ours runs with DEBUG on
for every ``make run`` user, and a judge endpoint chosen by any project owner can make a
view fail while a decrypted key sits in a local, so the filter is always on. Frames we
cannot mark (the openai client's, scoring's) are cleansed by name as Django cleanses
settings: any local, or dict key inside one, called like ``api_key``, ``token`` or
``secret`` is shown as stars.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

from django.http import HttpRequest
from django.views.debug import SafeExceptionReporterFilter


class AlwaysSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    def is_active(self, request: HttpRequest | None) -> bool:
        return True

    def get_traceback_frame_variables(
        self, request: HttpRequest | None, tb_frame: FrameType
    ) -> Any:
        return [
            (name, self.cleanse_setting(name, value))
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]
