"""Moved to evalsite.datasets.readers; these modules re-export what the review app
imports until it names the new paths."""
