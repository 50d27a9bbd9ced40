"""The decode loop: prefill, then draft → verify K+1 positions in one target forward → roll back.

Continuous (in-flight) batching: up to `concurrency` rows decode together, each accepting on its own.
A row that hits EOS or its token budget leaves the batch at once (its cache rows are dropped) and the
next queued prompt takes its place: it is prefilled apart and its cache rows are appended to the
running batch, so the batch stays full while prompts wait — as a serving engine keeps it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from specdeploy.engines.reference.runtime.cache import KVState
from specdeploy.engines.reference.runtime.drafters import Drafter, make_drafter
from specdeploy.engines.reference.runtime.static_step import new_state
from specdeploy.engines.reference.runtime.stats import Recorder
from specdeploy.engines.reference.runtime.verify import pick, verify_row


@dataclass(frozen=True)
class RowSpec:
    """One sequence's own settings (a served request carries its own): token budget, sampling, and EOS held
    back until `min_tokens` are out."""

    budget: int
    temperature: float
    generator: torch.Generator
    top_k: int = 0
    top_p: float = 1.0
    min_tokens: int = 0


REUSE_MIN = 16
"""The shortest shared prompt start a joining prompt takes from the donor's cache (SmolLM2's chat template opens
every prompt with the same 24-token system turn: a third of an MT-Bench prompt)."""


class Donor(NamedTuple):
    """The prompt whose cached slots later prompts that start the same way reuse: its tokens, its target cache
    (keys, values [1, H, S, D] per layer), what the drafter kept of it (`Drafter.remember`)."""

    tokens: list[int]
    layers: list[tuple[torch.Tensor, torch.Tensor]]
    drafter: Any


RELEASED = RowSpec(0, 0.0, torch.Generator())
"""What a released sequence's settings become: one shared spec instead of its own generator."""


class Batch:
    """The running batch: target cache, drafter state and every sequence's output; `active` in cache row order.

    Sequences are `add`ed at any time (a server's requests) and join at the next `admit`."""

    def __init__(self, pair: Any, drafter: Drafter, rec: Recorder) -> None:
        self.pair, self.drafter, self.rec = pair, drafter, rec
        self.eos = pair.eos_token_ids
        self.target = new_state(pair.target, 0, pair.decode)  # eager: KVState; static modes: static_step.py
        self.active: list[int] = []
        self.prompts: list[list[int]] = []
        self.specs: list[RowSpec] = []
        self.outputs: list[list[int]] = []
        self.histories: list[list[int]] = []
        self.last_emit: list[float] = []
        self.first_emit: list[float] = []
        self.stopped: set[int] = set()  # asked to stop early (a stop string matched)
        self.drafted: list[int] = []  # per sequence: drafts proposed, drafts accepted
        self.accepted: list[int] = []
        self.free: list[int] = []  # released indexes `add` reuses: a server's lists stay as long as its busiest moment
        self.donor: Donor | None = None

    def add(self, prompt: list[int], spec: RowSpec) -> int:
        """Queue a sequence; its index names it until it is released."""
        if not self.free:
            self.prompts.append([])
            self.specs.append(RELEASED)
            self.outputs.append([])
            self.histories.append([])
            self.last_emit.append(0.0)
            self.first_emit.append(0.0)
            self.drafted.append(0)
            self.accepted.append(0)
            self.free.append(len(self.prompts) - 1)
        i = self.free.pop()
        self.prompts[i], self.specs[i], self.outputs[i], self.histories[i] = list(prompt), spec, [], list(prompt)
        self.last_emit[i], self.drafted[i], self.accepted[i] = 0.0, 0, 0
        return i

    def release(self, i: int) -> None:
        """A finished sequence's tokens and settings (its generator) are no longer needed, and its index is free for
        the next request (a server runs for days)."""
        self.prompts[i], self.outputs[i], self.histories[i] = [], [], []
        self.specs[i] = RELEASED
        self.stopped.discard(i)
        self.free.append(i)

    def admit(self, joining: list[int]) -> None:
        """Prefill the joining prompts, pick their first tokens, append their rows (in `joining`'s order,
        regrouped by prompt length).

        Prompts of one length share a forward; different lengths get one each, since a padded batch costs its
        longest prompt for every row (measured: 8 MT-Bench prompts admitted together took 1.07-1.35x the CPU
        time of one forward each) while a forward of a whole prompt keeps the GEMMs busy on its own. A prompt
        that starts like the donor (a chat template's system turn) starts from the donor's cached slots and
        prefills only the rest; a prompt that shares no such start (prefilled whole) becomes the next donor."""
        start = time.perf_counter()
        groups: dict[tuple[int, int], list[int]] = {}
        for i in joining:
            groups.setdefault((len(self.prompts[i]), self._reusable(self.prompts[i])), []).append(i)
        joining = [i for group in groups.values() for i in group]
        fresh = KVState(self.pair.target, 0)
        parts = []
        donor = None  # every group's reuse was counted against self.donor: replace it after the loop
        for (length, reused), group in groups.items():
            prompts = [self.prompts[i] for i in group]
            one = KVState(self.pair.target, len(group))
            if reused:
                assert self.donor is not None
                one.preload([(keys[:, :, :reused], values[:, :, :reused]) for keys, values in self.donor.layers])
            chunk = torch.tensor([p[reused:] for p in prompts])
            parts.append(one.forward(chunk, torch.ones(chunk.shape, dtype=torch.bool), last_only=True)[:, -1])
            if not reused and donor is None and length > REUSE_MIN:
                donor = Donor(
                    prompts[0],
                    [(k.clone(), v.clone()) for k, v in one.prefix(0, length)],
                    self.drafter.remember(0, length),
                )
            self.drafter.join(prompts, reused, self.donor.drafter if reused and self.donor else None)  # this forward
            fresh.extend(one)
        self.donor = donor or self.donor
        logits = torch.cat(parts)
        self.target.extend(fresh)
        now = time.perf_counter()
        for row, i in enumerate(joining):
            s = self.specs[i]
            self.outputs[i] = [
                pick(self._held(logits[row : row + 1], i)[0], s.temperature, s.generator, s.top_k, s.top_p)
            ]
            self.histories[i].append(self.outputs[i][0])
            self.last_emit[i] = self.first_emit[i] = now
        self.rec.prefill_s += now - start
        self.rec.ttft += [(now - start) * 1e3] * len(joining)  # a request arrives when its slot frees
        self.leave(self.active + joining)

    def _reusable(self, prompt: list[int]) -> int:
        """How many of the prompt's first tokens the donor's cache holds (at least one token is left to prefill)."""
        if self.donor is None:
            return 0
        n = 0
        for a, b in zip(self.donor.tokens, prompt[:-1], strict=False):
            if a != b:
                break
            n += 1
        return n if n >= REUSE_MIN else 0

    def step(self, draft_len: int, own: dict[int, int] | None = None) -> None:
        """One draft → verify → roll back over every active row; `own` maps a sequence to its own draft length."""
        active, rec = self.active, self.rec
        step_start = time.perf_counter()
        ks = [own.get(i, draft_len) if own else draft_len for i in active]
        limits = [min(k, self.specs[i].budget - len(self.outputs[i]) - 1) for k, i in zip(ks, active, strict=True)]
        drafts, qs = self.drafter.propose([self.histories[i] for i in active], limits)
        drafted = time.perf_counter()
        lengths = [len(d) for d in drafts]
        chunk = torch.zeros(len(active), 1 + max(lengths), dtype=torch.long)
        ok = torch.zeros(chunk.shape, dtype=torch.bool)
        for row, i in enumerate(active):
            chunk[row, : 1 + lengths[row]] = torch.tensor([self.histories[i][-1]] + drafts[row])
            ok[row, : 1 + lengths[row]] = True
        before = self.target.width
        logits = self.target.forward(chunk, ok)
        accepted, nexts = [], []
        for row, i in enumerate(active):
            s = self.specs[i]
            n, nxt = verify_row(
                self._held(logits[row, : 1 + lengths[row]], i),
                drafts[row],
                qs[row],
                s.temperature,
                s.generator,
                s.top_k,
                s.top_p,
            )
            accepted.append(n)
            nexts.append(nxt)
        self.target.truncate(torch.tensor([before + 1 + n for n in accepted]))  # keep x, d1..dn
        self.drafter.commit(accepted, nexts)
        end = time.perf_counter()
        rec.occupancy.append(len(active))
        rec.draft_s += drafted - step_start
        rec.verify_s += end - drafted
        for row, i in enumerate(active):
            rec.hist[accepted[row]] += 1
            rec.drafted += lengths[row]
            rec.first_drafts += lengths[row] > 0
            rec.first_hits += lengths[row] > 0 and accepted[row] > 0
            self.drafted[i] += lengths[row]
            self.accepted[i] += accepted[row]
            new = _clip(drafts[row][: accepted[row]] + [nexts[row]], self.outputs[i], self.specs[i].budget, self.eos)
            self.outputs[i] += new
            self.histories[i] += new
            if new:  # one delivery of up to K + 1 tokens; an admission's prefill stall is in its gap
                rec.itl.append((end - self.last_emit[i]) * 1e3)
            self.last_emit[i] = end
        self.leave(active)

    def leave(self, rows: list[int]) -> None:
        """Rows (in cache order) that are done leave the batch; the rest become `active`."""
        still = [
            i for i in rows if i not in self.stopped and not _done(self.outputs[i], self.specs[i].budget, self.eos)
        ]
        self.rec.tpot += [
            (self.last_emit[i] - self.first_emit[i]) * 1e3 / (len(self.outputs[i]) - 1)
            for i in rows
            if i not in still and len(self.outputs[i]) > 1
        ]
        if len(still) < len(rows):
            keep = torch.tensor([rows.index(i) for i in still], dtype=torch.long)
            self.target.select(keep)
            self.drafter.select(keep)
        self.active = still

    def _held(self, logits: torch.Tensor, i: int) -> torch.Tensor:
        """Logits [T, V] of the next T positions of sequence i, EOS masked where fewer than min_tokens are out."""
        blocked = min(len(logits), self.specs[i].min_tokens - len(self.outputs[i]))
        if blocked <= 0:
            return logits
        logits = logits.clone()
        logits[:blocked, sorted(self.eos)] = float("-inf")
        return logits


@torch.inference_mode()
def run_batched(
    pair: Any,
    prompts: list[list[int]],
    mechanism: str,
    draft_len: int,
    concurrency: int,
    max_new_tokens: int,
    temperature: float,
    generator: torch.Generator,
    ngram_match: int,
    rec: Recorder,
) -> list[list[int]]:
    """Decode every prompt with at most `concurrency` in the batch; returns the generated tokens per prompt."""
    drafter = make_drafter(mechanism, pair, temperature, generator, ngram_match)
    batch = Batch(pair, drafter, rec)
    queue = deque(batch.add(p, RowSpec(max_new_tokens, temperature, generator)) for p in prompts)
    try:
        while queue or batch.active:
            if queue and len(batch.active) < concurrency:
                batch.admit([queue.popleft() for _ in range(min(concurrency - len(batch.active), len(queue)))])
            if batch.active:
                batch.step(draft_len)
    finally:
        drafter.close()
    rec.generated += sum(map(len, batch.outputs))
    return batch.outputs


def _clip(new: list[int], out: list[int], budget: int, eos: set[int]) -> list[int]:
    new = new[: budget - len(out)]
    for j, token in enumerate(new):
        if token in eos:
            return new[: j + 1]
    return new


def _done(out: list[int], budget: int, eos: set[int]) -> bool:
    return len(out) >= budget or (bool(out) and out[-1] in eos)
