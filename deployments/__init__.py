"""The demo's Prefect server, worker and deployment helpers (``make demo``, ``make ui``); importable
as ``deployments.local_demo`` from the repository root (``bench.scale_out`` uses its environment)."""
