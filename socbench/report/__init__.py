"""The report over a results folder (``socbench report``): ``leaderboard`` (ranks and paired comparisons),
``html`` (one self-contained ``report.html``), ``tables``, ``figures``, and the run's files for people
(``files``: summary.md, a domain's markdown; ``mcq``: CP vs MCP tables; ``circular``: OpenCompass's
circular summary). Every number comes from the results log (``socbench.log``)."""
