"""socbench: how well can an LLM stand in for a real survey respondent?"""

__version__ = "0.1.0"
