from __future__ import annotations

from evalsite_gate.cli import main

raise SystemExit(main())
