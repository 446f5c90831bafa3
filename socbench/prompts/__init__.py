"""Prompt builders: ISSP persona prompts and seeded option orders."""

from socbench.prompts.persona import (
    ANSWER_PREFIX,
    PromptSettings,
    build_domain_prompts,
    build_prompt,
    build_prompts,
    country_words,
    fill_placeholders,
    prompt_text,
    settings_from_config,
    variant_prompts,
)
from socbench.shuffle import display_order, render_options, shuffled_order

__all__ = [
    "ANSWER_PREFIX",
    "PromptSettings",
    "build_domain_prompts",
    "build_prompt",
    "build_prompts",
    "country_words",
    "display_order",
    "fill_placeholders",
    "prompt_text",
    "render_options",
    "settings_from_config",
    "shuffled_order",
    "variant_prompts",
]
