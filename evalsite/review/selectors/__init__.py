"""Review reads, one module per domain (import from the module)."""
