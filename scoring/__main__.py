"""``python -m scoring score --kind faithfulness --input cases.jsonl``."""

from __future__ import annotations

from scoring.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
