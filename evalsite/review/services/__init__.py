"""Review writes, one module per domain (import from the module)."""
