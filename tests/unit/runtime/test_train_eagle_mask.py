"""tools/train_eagle.py's step-2 mask: the chain's second draft attends, at run time, to the verified
positions' keys (made from the target's features) and to itself; training must see the same context."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from train_eagle import step2_mask  # noqa: E402


def test_step2_sees_earlier_step1_keys_and_itself():
    valid = torch.tensor([[1, 1, 1, 0]])  # three tokens and one pad
    allowed = step2_mask(valid, torch.float32)[0, 0] == 0
    w = 4
    for j in range(3):
        assert allowed[j, :w].tolist() == [i <= j for i in range(3)] + [False]  # step 1: causal, no pad
        assert not allowed[j, w:].any()  # step 1 never sees step 2
        step2 = allowed[w + j]
        assert step2[:w].tolist() == [i < j for i in range(3)] + [False]  # earlier step-1 keys only
        assert step2[w:].tolist() == [i == j for i in range(4)]  # and itself
