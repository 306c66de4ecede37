"""Reading dataset files: see rows (the entry points) for the package's map."""
