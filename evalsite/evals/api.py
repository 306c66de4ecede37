"""Evals API: one router for the app, combining the judges', scorers' and runs' routers."""

from __future__ import annotations

from ninja import Router

from evalsite.evals.audits import api as audits
from evalsite.evals.judges import api as judges
from evalsite.evals.runs import api as runs
from evalsite.evals.scorers import api as scorers

router = Router()
for _module in (judges, scorers, runs, audits):
    router.add_router("", _module.router)
