"""The report over a results folder (``socbench report``) and the run's files for people; every number is
read from the results log (``socbench.log``)."""
