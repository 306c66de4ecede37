"""Another tool's file turned into a dataset and a finished run: model-less, it writes
through datasets' and evals' models in one transaction."""
