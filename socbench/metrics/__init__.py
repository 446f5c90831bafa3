"""Metrics over scored items, one idea per module; import each from its module (no re-exports)."""
