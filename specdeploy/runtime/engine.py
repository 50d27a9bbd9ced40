"""The decode loop: prefill, then draft → verify K+1 positions in one target forward → roll back.

Prompts run in waves of `concurrency` rows decoded in lockstep; each row accepts on its own, and a
row that hits EOS or its token budget leaves the batch (its cache rows are dropped).
"""

from __future__ import annotations

import time
from typing import Any

import torch

from specdeploy.runtime.cache import KVState
from specdeploy.runtime.drafters import make_drafter, right_aligned
from specdeploy.runtime.stats import RunStats, percentiles
from specdeploy.runtime.verify import pick, verify_row


class Recorder:
    """Accumulates timings and acceptance over all waves of one `generate` call."""

    def __init__(self, draft_len: int) -> None:
        self.hist = [0] * (draft_len + 1)
        self.steps = self.drafted = self.generated = 0
        self.draft_s = self.verify_s = self.prefill_s = 0.0
        self.ttft: list[float] = []
        self.itl: list[float] = []

    def finish(self, wall: float, **meta: Any) -> RunStats:
        seq_steps = sum(self.hist)
        accepted = sum(n * c for n, c in enumerate(self.hist))
        return RunStats(
            **meta,
            generated_tokens=self.generated,
            steps=self.steps,
            seq_steps=seq_steps,
            accept_hist=tuple(c / seq_steps if seq_steps else 0.0 for c in self.hist),
            acceptance_length=(accepted + seq_steps) / seq_steps if seq_steps else 0.0,
            drafted_tokens=self.drafted,
            accepted_tokens=accepted,
            draft_time_s=self.draft_s,
            verify_time_s=self.verify_s,
            prefill_time_s=self.prefill_s,
            wall_time_s=wall,
            tokens_per_s=self.generated / wall if wall > 0 else 0.0,
            ttft_ms=percentiles(self.ttft),
            itl_ms=percentiles(self.itl),
        )


@torch.inference_mode()
def run_wave(
    pair: Any,
    prompts: list[list[int]],
    mechanism: str,
    draft_len: int,
    max_new_tokens: int,
    temperature: float,
    generator: torch.Generator,
    ngram_match: int,
    rec: Recorder,
) -> list[list[int]]:
    """Decode one batch of prompts to completion; returns the generated tokens per prompt."""
    start = time.perf_counter()
    eos = pair.eos_token_ids
    batch = len(prompts)
    target = KVState(pair.target, batch)
    drafter = make_drafter(mechanism, pair, batch, temperature, generator, ngram_match)
    try:
        logits = target.forward(*right_aligned(prompts), last_only=True)[:, -1]
        drafter.prefill(prompts)
        outputs = [[pick(logits[i], temperature, generator)] for i in range(batch)]
        now = time.perf_counter()
        rec.prefill_s += now - start
        rec.ttft += [(now - start) * 1e3] * batch
        histories = [list(p) + o for p, o in zip(prompts, outputs, strict=True)]
        active = [i for i in range(batch) if not _done(outputs[i], max_new_tokens, eos)]
        if len(active) < batch:
            _leave(target, drafter, list(range(batch)), active)
        while active:
            step_start = time.perf_counter()
            limits = [min(draft_len, max_new_tokens - len(outputs[i]) - 1) for i in active]
            drafts, qs = drafter.propose([histories[i] for i in active], limits)
            drafted = time.perf_counter()
            lengths = [len(d) for d in drafts]
            chunk = torch.zeros(len(active), 1 + max(lengths), dtype=torch.long)
            ok = torch.zeros(chunk.shape, dtype=torch.bool)
            for row, i in enumerate(active):
                chunk[row, : 1 + lengths[row]] = torch.tensor([histories[i][-1]] + drafts[row])
                ok[row, : 1 + lengths[row]] = True
            before = target.width
            logits = target.forward(chunk, ok)
            accepted, nexts = [], []
            for row in range(len(active)):
                n, nxt = verify_row(logits[row, : 1 + lengths[row]], drafts[row], qs[row], temperature, generator)
                accepted.append(n)
                nexts.append(nxt)
            target.truncate(torch.tensor([before + 1 + n for n in accepted]))  # keep x, d1..dn
            drafter.commit(accepted, nexts)
            end = time.perf_counter()
            rec.steps += 1
            rec.draft_s += drafted - step_start
            rec.verify_s += end - drafted
            still = []
            for row, i in enumerate(active):
                rec.hist[accepted[row]] += 1
                rec.drafted += lengths[row]
                new = _clip(drafts[row][: accepted[row]] + [nexts[row]], outputs[i], max_new_tokens, eos)
                outputs[i] += new
                histories[i] += new
                rec.itl += [(end - step_start) * 1e3 / len(new)] * len(new)
                if not _done(outputs[i], max_new_tokens, eos):
                    still.append(i)
            if len(still) < len(active):
                _leave(target, drafter, active, still)
            active = still
    finally:
        drafter.close()
    rec.generated += sum(map(len, outputs))
    return outputs


def _clip(new: list[int], out: list[int], budget: int, eos: set[int]) -> list[int]:
    new = new[: budget - len(out)]
    for j, token in enumerate(new):
        if token in eos:
            return new[: j + 1]
    return new


def _done(out: list[int], budget: int, eos: set[int]) -> bool:
    return len(out) >= budget or (bool(out) and out[-1] in eos)


def _leave(target: KVState, drafter: Any, active: list[int], still: list[int]) -> None:
    rows = torch.tensor([active.index(i) for i in still], dtype=torch.long)
    target.select(rows)
    drafter.select(rows)
