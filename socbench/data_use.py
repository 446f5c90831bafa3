"""Licensed data stays where its licence allows: prompts of a ``local`` study go only to in-process
engines and to loopback or private-network servers. Why: archives (ISSP, ESS, WVS) forbid uploading
microdata to public AI services, and a persona prompt carries a respondent's attributes and answers.
Other hosts need ``--allow_remote_data`` (recorded); checked by the preflight and by the flow's first stage.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from socbench.data.layout import dataset_root
from socbench.data.synth import INFO_FILE
from socbench.engines.openai_settings import api_bases
from socbench.errors import ConfigError
from socbench.manifest import DomainSpec, find_manifest

if TYPE_CHECKING:
    from socbench.engines.settings import EngineSettings

ACKNOWLEDGE = "--allow_remote_data"
REMOTE_HOSTS = "SOCBENCH_REMOTE_HOSTS"  # comma-separated hosts treated as non-local, whatever they resolve to


def data_use(root: Path, domain: DomainSpec) -> str:
    """``local`` or ``remote``: the manifest's ``data_use``; a folder without a manifest is an ISSP one
    (licensed microdata: local) unless ``socbench data synth`` wrote it (synthetic: remote)."""
    if find_manifest(root) is None and (root / INFO_FILE).is_file():
        return "remote"
    return domain.data_use


def is_local_host(host: str) -> bool:
    """Every address ``host`` resolves to is loopback or private (and ``$SOCBENCH_REMOTE_HOSTS`` lacks it)."""
    if host.lower() in {name.strip().lower() for name in os.environ.get(REMOTE_HOSTS, "").split(",")}:
        return False
    try:
        found = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False  # a name that does not resolve is not known to be local
    addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found}
    return bool(addresses) and all(a.is_loopback or a.is_private for a in addresses)


def remote_data(settings: EngineSettings, dataset_dir: Path,
                domains: Sequence[DomainSpec]) -> dict[str, Any] | None:
    """``{"studies", "hosts"}``: the ``local`` studies and the non-local hosts their prompts would go to;
    None when nothing would leave."""
    if settings.api_type != "openai":
        return None  # in-process engines
    root = dataset_root(dataset_dir)
    studies = [d.display_name for d in domains if data_use(root, d) == "local"]
    urls = api_bases(settings.api_base or "")
    hosts = [h for h in dict.fromkeys(urlsplit(url).hostname or url for url in urls) if not is_local_host(h)]
    return {"studies": studies, "hosts": hosts} if studies and hosts else None


def check_data_use(settings: EngineSettings, dataset_dir: Path, domains: Sequence[DomainSpec],
                   allowed: bool) -> str | None:
    """A ConfigError unless every prompt stays local or ``--allow_remote_data`` (``allowed``) says so; the
    line to print."""
    sent = remote_data(settings, dataset_dir, domains)
    if sent is None:
        return None
    what = f"data of {', '.join(sent['studies'])} (data_use: local) to {', '.join(sent['hosts'])}"
    if not allowed:
        raise ConfigError(f"--api_base: refused to send the licensed {what}, not a loopback or "
                          f"private-network address; pass {ACKNOWLEDGE} if the licence allows it (or set "
                          "data_use: remote in the study's socbench.yaml)")
    return f"sending the licensed {what}, as {ACKNOWLEDGE} acknowledges"
