"""How many respondents a model's answers are worth: prediction-powered estimates (PPI++) of a run's
answers, their effective sample size, a coverage check over repeated splits, and a budget planner.
A plain library over numpy arrays and one run's items (``items.run_items``); see docs/estimates.md."""
