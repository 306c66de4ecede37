"""Runs side by side: model-less, it reads evals' results over datasets' matchings."""
