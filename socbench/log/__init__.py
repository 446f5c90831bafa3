"""A run's results log: the one place that defines (``records``), writes (``write``, ``summary``) and reads
(``read``) what a run computed. The report, the leaderboard, ``socbench export`` and ``socbench.evaluate``
read through here and compute none of it again."""
