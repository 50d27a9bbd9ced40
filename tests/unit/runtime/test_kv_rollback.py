"""The batched cache must roll back exactly: after a rejection, the next logits equal those of a
fresh forward over the accepted history (an off-by-one leaks a rejected token into attention)."""

from __future__ import annotations

import torch

from specdeploy.engines.reference.runtime.cache import KVState
from specdeploy.engines.reference.runtime.drafters import right_aligned
from tests.unit.runtime.tiny import tiny_llama


def fresh_logits(model, history: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([history])).logits[0, -1]


@torch.no_grad()
def test_rejected_positions_leave_no_trace():
    model = tiny_llama(0)
    prompts = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14]]
    width = max(map(len, prompts))
    tokens = torch.zeros(3, width, dtype=torch.long)
    valid = torch.zeros(3, width, dtype=torch.bool)
    for i, p in enumerate(prompts):
        tokens[i, width - len(p) :], valid[i, width - len(p) :] = torch.tensor(p), True
    kv = KVState(model, 3)
    kv.forward(tokens, valid)
    histories = [list(p) for p in prompts]
    # Two verify steps: row b feeds x + 3 drafts and keeps x + accepted[b] of them.
    for step, accepted in enumerate([[0, 3, 1], [2, 0, 3]]):
        chunk = torch.tensor([[20 + step, 30, 31, 32], [21 + step, 40, 41, 42], [22 + step, 50, 51, 52]])
        before = kv.width
        kv.forward(chunk, torch.ones(chunk.shape, dtype=torch.bool))
        kv.truncate(torch.tensor([before + 1 + n for n in accepted]))
        for b, n in enumerate(accepted):
            histories[b] += chunk[b, : 1 + n].tolist()
    nxt = torch.tensor([[60], [61], [62]])
    logits = kv.forward(nxt, torch.ones(3, 1, dtype=torch.bool))[:, -1]
    for b in range(3):
        expected = fresh_logits(model, histories[b] + [int(nxt[b, 0])])
        assert torch.allclose(logits[b], expected, atol=1e-9), f"row {b}"
    # the tail no row needs was cropped from the cache itself, not only masked
    assert kv.cache.get_seq_length() == kv.width
    assert bool(kv.mask[:, -1].any())


@torch.no_grad()
def test_off_by_one_would_be_detected():
    """Keeping one rejected slot too many changes the logits: the check above has teeth."""
    model = tiny_llama(0)
    kv = KVState(model, 1)
    kv.forward(torch.tensor([[5, 6, 7]]), torch.ones(1, 3, dtype=torch.bool))
    kv.forward(torch.tensor([[8, 30, 31]]), torch.ones(1, 3, dtype=torch.bool))
    kv.truncate(torch.tensor([3 + 1 + 1]))  # keeps x=8 and the rejected draft 30
    leaked = kv.forward(torch.tensor([[9]]), torch.ones(1, 1, dtype=torch.bool))[0, -1]
    assert not torch.allclose(leaked, fresh_logits(model, [5, 6, 7, 8, 9]), atol=1e-6)


@torch.no_grad()
def test_compaction_and_row_removal_keep_logits():
    model = tiny_llama(1)
    kv = KVState(model, 2)
    histories = [[1, 2, 3], [4, 5, 6]]
    kv.forward(torch.tensor(histories), torch.ones(2, 3, dtype=torch.bool))
    for step in range(5):
        chunk = torch.tensor([[7 + step, 8, 9, 10], [11 + step, 12, 13, 14]])
        before = kv.width
        kv.forward(chunk, torch.ones(2, 4, dtype=torch.bool))
        kv.truncate(torch.tensor([before + 1, before + 4]))
        histories[0] += chunk[0, :1].tolist()
        histories[1] += chunk[1].tolist()
    assert bool((~kv.mask).any())
    kv.compact()
    assert kv.cache.get_seq_length() == kv.width == len(histories[1])
    kv.select(torch.tensor([0]))
    out = kv.forward(torch.tensor([[42]]), torch.ones(1, 1, dtype=torch.bool))[0, -1]
    assert torch.allclose(out, fresh_logits(model, histories[0] + [42]), atol=1e-9)


@torch.no_grad()
def test_rows_joining_a_running_batch_keep_logits():
    """In-flight batching appends freshly prefilled rows to a cache with holes; nobody's attention changes."""
    model = tiny_llama(2)
    kv = KVState(model, 2)
    histories = [[1, 2, 3, 4], [5, 6, 7, 8]]
    kv.forward(torch.tensor(histories), torch.ones(2, 4, dtype=torch.bool))
    before = kv.width
    kv.forward(torch.tensor([[9, 10, 11], [12, 13, 14]]), torch.ones(2, 3, dtype=torch.bool))
    kv.truncate(torch.tensor([before + 1, before + 3]))  # row 0 leaves two holes behind
    histories[0] += [9]
    histories[1] += [12, 13, 14]
    joining = [[20, 21], list(range(30, 30 + kv.width + 3))]  # narrower and wider than the running cache
    fresh = KVState(model, 2)
    fresh.forward(*right_aligned(joining))
    kv.extend(fresh)
    histories += joining
    nxt = torch.tensor([[40], [41], [42], [43]])
    logits = kv.forward(nxt, torch.ones(4, 1, dtype=torch.bool))[:, -1]
    for b in range(4):
        histories[b].append(int(nxt[b, 0]))
        assert torch.allclose(logits[b], fresh_logits(model, histories[b]), atol=1e-9), f"row {b}"
    kv.extend(KVState(model, 1))  # a row with nothing cached yet (an EAGLE drafter's newcomer): all holes
    assert kv.rows == 5 and not bool(kv.mask[4].any())
    chunk, valid = right_aligned([[50], [51], [52], [53], [60, 61]])
    logits = kv.forward(chunk, valid)[:, -1]
    for b, row in enumerate([[50], [51], [52], [53]]):
        assert torch.allclose(logits[b], fresh_logits(model, histories[b] + row), atol=1e-9), f"row {b}"
    assert torch.allclose(logits[4], fresh_logits(model, [60, 61]), atol=1e-9)
