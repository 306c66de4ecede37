"""Archive and delete runs, datasets, scorers, judge connections and review queues.

It lives in `review`, the lowest app that sees all five and the queues that keep runs
(and so their datasets) from being deleted."""
