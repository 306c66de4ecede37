from __future__ import annotations

# Item view, overrides, what-if rescore, compare, run aggregates (helper D1).
urlpatterns: list = []
