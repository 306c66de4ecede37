"""Reading dataset files: see rows (the entry points) for the package's map.

`Problem` is re-exported only for the review app's imports until they name
evalsite.datasets.parsing.limits; nothing else should import from here.
"""

from evalsite.datasets.parsing.limits import Problem

__all__ = ["Problem"]
