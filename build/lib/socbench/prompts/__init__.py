"""Prompt builders: ISSP persona prompts (``socbench.prompts.persona``)."""

from socbench.prompts.persona import build_domain_prompts, prompt_text

__all__ = ["build_domain_prompts", "prompt_text"]
