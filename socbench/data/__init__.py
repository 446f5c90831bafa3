"""ISSP data layer: load a SocioBench dataset, map countries, build scoreable items, sample."""

from socbench.data.countries import (
    COUNTRIES,
    CountryInfo,
    codebook_country_table,
    country_attribute_key,
    country_info,
    resolve_country,
)
from socbench.data.loaders import (
    AnswerRecord,
    CodebookEntry,
    QuestionRecord,
    available_sizes,
    build_respondents,
    dataset_root,
    is_missing_label,
    load_answer_records,
    load_codebook,
    load_domain,
    load_questions,
    normalize_code,
    sample_dir,
)
from socbench.data.options import (
    INVALID_CODE,
    NO_ANSWER,
    build_items,
    effective_options,
    summarize_items,
)
from socbench.data.sampling import SAMPLE_SEED, draw_order, stratified_sample

__all__ = [
    "COUNTRIES",
    "SAMPLE_SEED",
    "INVALID_CODE",
    "NO_ANSWER",
    "AnswerRecord",
    "CodebookEntry",
    "CountryInfo",
    "QuestionRecord",
    "available_sizes",
    "build_items",
    "build_respondents",
    "codebook_country_table",
    "country_attribute_key",
    "country_info",
    "dataset_root",
    "draw_order",
    "effective_options",
    "is_missing_label",
    "load_answer_records",
    "load_codebook",
    "load_domain",
    "load_questions",
    "normalize_code",
    "resolve_country",
    "sample_dir",
    "stratified_sample",
    "summarize_items",
]
