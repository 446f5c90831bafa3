"""ISSP data layer: load a SocioBench dataset, map countries, build scoreable items, sample."""

from socbench.data.loaders import load_domain
from socbench.data.options import build_items, summarize_items

__all__ = ["build_items", "load_domain", "summarize_items"]
