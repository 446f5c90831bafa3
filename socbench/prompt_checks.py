"""Checks on a run's prompts before any request is sent: they fit the model's context, and
whether the engine cache already answers every one (a domain whose files cannot be read is
skipped here and fails on its own in the flow).

Only prompts that could be too long are tokenized: a byte-level BPE or byte-fallback
SentencePiece token stands for at least one byte, so a prompt's token count is at most its
UTF-8 byte count plus ``SPECIAL_MARGIN``; the others are counted exactly (``TokenCounter``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from socbench.config import RunConfig
from socbench.data import build_items, load_domain
from socbench.domains import DomainSpec as Domain
from socbench.domains import select_domains
from socbench.errors import ConfigError, SocbenchError
from socbench.prompts import build_domain_prompts
from socbench.types import PromptRequest

log = logging.getLogger("socbench")

CHECKED_WHOLE = 3  # prompts (the longest) counted whole, to check the piecewise count
SPECIAL_MARGIN = 3  # tokens a tokenizer may add that stand for no byte of the text (BOS, EOS, dummy prefix)


Prompts = dict[Domain, list[PromptRequest]]


def run_prompts(config: RunConfig, domains: Sequence[Domain] | None = None) -> Prompts:
    """Each selected domain's prompts, as the flow builds them; domains that cannot be read left out."""
    chosen = domains if domains is not None else select_domains(config.domain_id, config.start_domain_id,
                                                                 config.dataset_dir)
    prompts: dict[Domain, list[PromptRequest]] = {}
    for domain in chosen:
        try:
            data = load_domain(config.dataset_dir, domain, config.dataset_size, config.interview_count,
                               config.interview_sample)
        except SocbenchError:
            if len(chosen) == 1:
                raise
            continue  # fails on its own in the flow; the other domains still run
        prompts[domain] = build_domain_prompts(data, build_items(data), config)
    return prompts


@dataclass(frozen=True)
class Overflow:
    """Prompts of one domain longer than the context allows."""

    domain: Domain
    over: int
    total: int
    longest: int  # tokens, the reply's share included


def reply_tokens(request: PromptRequest) -> int:
    """Tokens the answer needs after the prompt: generation's ``max_tokens``, or the longest option
    code scored after the answer prefix (a code's tokens are at most its bytes)."""
    if request.mode == "logprobs":
        return max((len(code.encode()) for code in request.offered_codes), default=1)
    return request.sampling.max_tokens


class TokenCounter:
    """Exact token counts of prompts that share long parts: HF tokenizers cut at special tokens
    first, so a count is the sum of its pieces' plus one per special token, and each distinct
    piece is tokenized once. Where ``exact`` finds that false, prompts are encoded whole."""

    def __init__(self, tokenizer) -> None:
        from socbench.engines._chat import encode

        self._encode = lambda text, special: len(encode(tokenizer, text, special=special))
        specials = {str(t) for t in [*tokenizer.all_special_tokens, *tokenizer.get_added_vocab()] if t}
        self._split = re.compile("|".join(map(re.escape, sorted(specials, key=len, reverse=True)))) \
            if specials else None
        self._added = {special: self._encode("", special) for special in (False, True)}
        self._pieces: dict[str, int] = {}
        self._whole = False

    def _by_pieces(self, text: str, special: bool) -> int:
        pieces = self._split.split(text) if self._split else [text]
        n = self._added[special] + len(pieces) - 1
        for piece in filter(None, pieces):
            if piece not in self._pieces:
                self._pieces[piece] = self._encode(piece, False)
            n += self._pieces[piece]
        return n

    def exact(self, text: str, special: bool) -> int:
        """The count, checked against the whole text's (the first prompts, until one disagrees)."""
        whole = self._encode(text, special)
        self._whole = self._whole or whole != self._by_pieces(text, special)
        return whole

    def count(self, text: str, special: bool) -> int:
        return self._encode(text, special) if self._whole else self._by_pieces(text, special)


def domain_overflow(domain: Domain, prompts: Sequence[PromptRequest], tokenizer,
                    context: int) -> Overflow | None:
    """How many of ``prompts`` (with their replies) exceed ``context`` tokens, counting only the
    prompts whose byte length could (module docstring); None when all fit."""
    from socbench.engines._chat import prompt_text

    texts = [prompt_text(tokenizer, r) + r.answer_prefix for r in prompts]
    room = [context - reply_tokens(r) for r in prompts]
    candidates = sorted((i for i, text in enumerate(texts) if len(text.encode()) + SPECIAL_MARGIN > room[i]),
                        key=lambda i: -len(texts[i]))
    counter, over, longest = TokenCounter(tokenizer), 0, 0
    for rank, i in enumerate(candidates):
        measure = counter.exact if rank < CHECKED_WHOLE else counter.count
        n = measure(texts[i], not prompts[i].chat)
        if n > room[i]:
            over += 1
            longest = max(longest, n + context - room[i])
    return Overflow(domain, over, len(prompts), longest) if over else None


def check_prompt_lengths(prompts: Prompts, tokenizer, context: int, where: str) -> None:
    """Every prompt and its reply fit ``context`` tokens; else one ConfigError line with the count,
    the longest, the context and the two ways out. ``where`` says where the context comes from."""
    overflows = [o for d, p in prompts.items() if (o := domain_overflow(d, p, tokenizer, context))]
    if not overflows:
        return
    first = overflows[0]
    others = ", ".join(str(o.domain.id) for o in overflows[1:])
    also = f" (also domain{'s' * (len(overflows) > 2)} {others})" if others else ""
    raise ConfigError(
        f"domain {first.domain.id} {first.domain.name}: {first.over} of {first.total} prompts are longer "
        f"than the model's context{also}: the longest needs {first.longest} tokens with its reply, the "
        f"context is {context} ({where}); use a longer --engine max_model_len on a model that has it, "
        f"or fewer persona attributes (the manifest's persona_attributes: include:)")


def uncached(engine, prompts: Prompts) -> int:
    """Requests of these prompts the engine cache cannot answer (no backend call); all of them
    when the engine has no cache."""
    from socbench.engines.session import prompt_method

    missing = getattr(engine, "missing", None)
    return sum(missing(prompt_method(p), p) if missing else len(p) for p in prompts.values() if p)
