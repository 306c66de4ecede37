#!/usr/bin/env python
from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # One clear line naming the setting beats a wall of traceback at start-up.
        sys.exit(f"evalsite: configuration error: {str(exc).strip().splitlines()[0]}")
    except OperationalError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        sys.exit(f"evalsite: cannot use the database from DATABASE_URL: {first_line}")


if __name__ == "__main__":
    main()
