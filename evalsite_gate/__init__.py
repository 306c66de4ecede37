"""evalsite-gate: a regression gate for CI over evalsite's REST API.

It starts a run (or takes one already started), waits for it, compares it with a
baseline run on matched items through the compare API (the paired t-interval the
compare page shows) and exits 0 (no regression), 1 (a regression beyond the margin)
or 2 (not enough evidence to tell). Exit codes 3 and above are failures of the gate
itself (see ``evalsite_gate.errors``).

A package of its own beside ``evalsite`` because importing ``evalsite`` starts
Django's Celery app: the client needs httpx and tqdm only, and talks HTTP.
"""
