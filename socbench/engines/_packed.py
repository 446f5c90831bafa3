"""Continuation scoring in transformers: each context computed once, many contexts per forward pass.

A group (one context and its continuations) is laid out as its context then its continuations'
token trie; groups are packed into rows of about ``row_tokens``, with a 4-D attention mask
(a token sees its context and trie ancestors) and per-group position ids, so each score equals
the plain forward pass. The LM head runs only where a scored token is predicted (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

Tokens = tuple[int, ...]
Score = tuple[float, bool]  # (sum of log-probs, every token the argmax)


@dataclass(frozen=True)
class Group:
    """One context and the continuations to score after it (each at least one token)."""

    context: Tokens
    continuations: tuple[Tokens, ...]


@dataclass
class _Row:
    """Tokens of several groups side by side, with each token's parent (-1: a group's first token)."""

    tokens: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    # (group index, continuation index, row indices whose logits predict each token)
    reads: list[tuple[int, int, list[int]]] = field(default_factory=list)

    def add(self, gid: int, context: Tokens, continuations: Sequence[tuple[int, Tokens]]) -> None:
        """Lay out one context and the trie of ``continuations`` ((index in the group, tokens))."""
        base = len(self.tokens)
        self.tokens += context
        self.positions += range(len(context))
        self.parents += [-1] + [base + i for i in range(len(context) - 1)]
        last = base + len(context) - 1
        nodes: dict[Tokens, int] = {}
        for cid, cont in continuations:
            at = [last]
            for k in range(1, len(cont)):
                prefix = cont[:k]
                if prefix not in nodes:
                    nodes[prefix] = len(self.tokens)
                    self.tokens.append(cont[k - 1])
                    self.positions.append(len(context) + k - 1)
                    self.parents.append(at[-1])
                at.append(nodes[prefix])
            self.reads.append((gid, cid, at))

    def mask(self) -> np.ndarray:
        """[L, L] booleans: a token sees itself and its ancestors."""
        size = len(self.tokens)
        seen = np.zeros((size, size), dtype=bool)
        for i, parent in enumerate(self.parents):
            if parent >= 0:
                seen[i] = seen[parent]
            seen[i, i] = True
        return seen


def prefixes(continuations: Iterable[Tokens]) -> set[Tokens]:
    """The continuations' distinct proper prefixes: the inner nodes of their token trie below the root, each
    one token after the context (vLLM's option scoring asks one request per node)."""
    return {cont[:k] for cont in continuations for k in range(1, len(cont))}


def _chunks(group: Group, row_tokens: int) -> Iterator[list[tuple[int, Tokens]]]:
    """A group's continuations in chunks that fit a row with the context (one at least)."""
    chunk: list[tuple[int, Tokens]] = []
    seen: set[Tokens] = set()
    for cid, cont in enumerate(group.continuations):
        new = prefixes([cont]) - seen
        if chunk and len(group.context) + len(seen) + len(new) > row_tokens:
            yield chunk
            chunk, seen, new = [], set(), prefixes([cont])
        chunk.append((cid, cont))
        seen |= new
    if chunk:
        yield chunk


def pack(groups: Sequence[Group], row_tokens: int) -> list[_Row]:
    """Rows of at most ``row_tokens`` tokens (first fit, largest first); a group larger than a row
    is split into chunks of continuations, each with its own copy of the context."""
    pieces = [(len(g.context) + len(prefixes(c for _, c in chunk)), gid, chunk)
              for gid, g in enumerate(groups) for chunk in _chunks(g, row_tokens)]
    rows: list[_Row] = []
    for size, gid, chunk in sorted(pieces, key=lambda p: -p[0]):
        row = next((r for r in rows if len(r.tokens) + size <= row_tokens), None)
        if row is None:
            rows.append(row := _Row())
        row.add(gid, groups[gid].context, chunk)
    return rows


def iter_scores(model, groups: Sequence[Group], row_tokens: int = 256,
                rows_per_pass: int = 4) -> Iterator[tuple[int, int, Score]]:
    """(group index, continuation index, (log P(continuation | context), greedy?)), yielded as each
    forward pass finishes so the caller stores results as they come."""
    import torch

    rows = pack(groups, row_tokens)
    with torch.inference_mode():
        for start in range(0, len(rows), rows_per_pass):
            batch = rows[start:start + rows_per_pass]
            (logits, lse, best), where = _forward(model, batch)
            for n, row in enumerate(batch):
                for gid, cid, at in row.reads:
                    cont = groups[gid].continuations[cid]
                    picked = [where[n, i] for i in at]
                    total = float((logits[picked, list(cont)].float() - lse[picked]).sum())
                    yield gid, cid, (total, all(best[p] == t for p, t in zip(picked, cont)))


def _forward(model, batch: list[_Row]):
    """One forward pass over right-padded rows; log-probs (fp32) and argmax at the read positions."""
    import torch

    width = max(len(row.tokens) for row in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    positions = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), 1, width, width), dtype=bool)
    mask[:, 0] = np.eye(width, dtype=bool)  # padding sees itself only (never read)
    flat: list[int] = []
    where: dict[tuple[int, int], int] = {}
    for n, row in enumerate(batch):
        size = len(row.tokens)
        ids[n, :size], positions[n, :size] = row.tokens, row.positions
        mask[n, 0, :size, :size] = row.mask()
        for i in sorted({i for _, _, at in row.reads for i in at}):
            where[n, i] = len(flat)
            flat.append(n * width + i)
    device = model.device
    hidden = model.model(input_ids=torch.from_numpy(ids).to(device),
                         position_ids=torch.from_numpy(positions).to(device),
                         attention_mask=torch.from_numpy(mask).to(device), use_cache=False).last_hidden_state
    logits = model.lm_head(hidden.reshape(-1, hidden.shape[-1])[torch.tensor(flat, device=device)])
    return (logits, *_normalizers(logits)), where


def _normalizers(logits, chunk: int = 16):
    """log-sum-exp (fp32) and argmax (first maximum on ties) per row of logits, a few rows at a
    time in place (an fp32 copy of all rows was measured 4x slower)."""
    import torch

    lse = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
    best = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
    for start in range(0, logits.shape[0], chunk):
        rows = logits[start:start + chunk].to(torch.float32, copy=True)  # never modify the logits
        top, best[start:start + chunk] = rows.max(dim=-1)
        lse[start:start + chunk] = top + rows.sub_(top[:, None]).exp_().sum(dim=-1).log()
    return lse, best.tolist()
