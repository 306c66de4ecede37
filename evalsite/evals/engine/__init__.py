"""The judging engine: the dispatcher (dispatch), the claims on results and the one
write of their outcome (claims), the judge cache, the judge connections' shared limiter
and the run page's live figures (livestats). Every result is judged through
dispatch.run_dispatch."""
