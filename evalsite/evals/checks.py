"""System checks of the judge settings (``manage.py check``, and at every start)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning

from evalsite.evals.judges.egress import key_env_entries


def check_judge_key_env_allowed(**kwargs: Any) -> list[CheckMessage]:
    """A ``JUDGE_KEY_ENV_ALLOWED`` entry without a host (the old syntax) or malformed
    allows nothing: say so, and how to write it."""
    _, problems = key_env_entries()
    return [
        Warning(
            problem,
            hint="Entries are NAME@host[:port], PREFIX*@host[:port] or NAME@* "
            "(any host); see JUDGE_KEY_ENV_ALLOWED in the README.",
            id="evals.W001",
        )
        for problem in problems
    ]
