"""Stage 1: read one domain's question set and respondents."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench import progress
from socbench.config import RunConfig
from socbench.data import load_domain
from socbench.data.loaders import unmapped_line
from socbench.data_use import check_data_use
from socbench.domains import get_domain
from socbench.types import DomainData


@task(name="load_data", cache_policy=NO_CACHE, persist_result=False)
def load_data(domain_id: int, config: RunConfig) -> DomainData:
    """Validated DomainData for the configured sample size and interview count; first, refused if its
    prompts would take licensed data where ``socbench.data_use`` does not allow (on a worker too)."""
    domain = get_domain(domain_id, config.dataset_dir)
    check_data_use(config, [domain])
    progress.begin(f"domain {domain.id} {domain.name}")
    data = load_domain(config.dataset_dir, domain, config.dataset_size, config.interview_count,
                       config.interview_sample)
    if line := unmapped_line(data):
        progress.note(line)
    return data
