"""The synthetic demo data (not ISSP data), installed as ``socbench._demo`` so that an installed
socbench runs its demo."""
