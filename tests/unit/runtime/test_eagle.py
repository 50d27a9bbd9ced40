"""The EAGLE-3 head's drafter: greedy speculation stays lossless, its cache rolls back to verified positions,
and a saved head loads back to the same drafts."""

from __future__ import annotations

import pytest
import torch

from specdeploy.engines.reference.runtime import generate
from specdeploy.engines.reference.runtime.eagle_model import EagleHead, load_eagle, save_eagle
from specdeploy.engines.reference.runtime.models import ModelPair, load_drafter
from specdeploy.errors import UsageError
from tests.unit.runtime.tiny import MAX_NEW, random_prompts, repetitive_prompts, tiny_head, tiny_llama


@pytest.fixture(scope="module")
def prompts():
    return random_prompts(8, 96, seed=1) + repetitive_prompts(6, 96, seed=2)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_eagle3_greedy_is_lossless(target, prompts, concurrency):
    pair = ModelPair(target, tiny_head(target))
    plain, _ = generate(ModelPair(target), prompts, "none", 0, concurrency, MAX_NEW)
    drafted = 0
    for k in (1, 2, 4, 7):
        out, stats = generate(pair, prompts, "eagle3", k, concurrency, MAX_NEW)
        assert out == plain, f"K={k}"
        drafted += stats.drafted_tokens
    assert drafted > 0


def test_target_hooks_are_removed_after_a_run(target, prompts):
    generate(ModelPair(target, tiny_head(target)), prompts[:2], "eagle3", 3, 2, 4)
    assert not any(layer._forward_hooks for layer in target.model.layers)


def test_saved_head_drafts_the_same(tmp_path, prompts):
    target32 = tiny_llama(0).float()  # its own copy: a head shares (and .float() would convert) the embedding
    head = tiny_head(target32)
    save_eagle(head, tmp_path / "eagle", "tiny")
    loaded = load_drafter(str(tmp_path / "eagle"), target32)
    assert isinstance(loaded, EagleHead) and loaded.feature_layers == (0, 1)
    _, a = generate(ModelPair(target32, head), prompts, "eagle3", 3, 2, MAX_NEW)
    _, b = generate(ModelPair(target32, loaded.eval()), prompts, "eagle3", 3, 2, MAX_NEW)
    assert abs(a.acceptance_length - b.acceptance_length) < 0.05  # bf16 storage may flip a rare near-tie


def test_a_drafter_folder_of_an_unknown_kind_is_refused(tmp_path):
    """The folder says what it holds in format words (`head`, `model`); any other kind is refused by name,
    not loaded as a model it is not."""
    import json

    target32 = tiny_llama(0).float()
    save_eagle(tiny_head(target32), tmp_path / "eagle", "tiny")
    meta = tmp_path / "eagle" / "specdeploy_drafter.json"
    assert json.loads(meta.read_text())["kind"] == "head"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "kind": "tree"}))
    with pytest.raises(UsageError, match="specdeploy_drafter.json names an unknown kind 'tree'"):
        load_drafter(str(tmp_path / "eagle"), target32)


def test_mechanism_and_drafter_kind_must_match(target, prompts):
    with pytest.raises(
        UsageError,
        match=r"eagle3 needs a drafter of kind head \(one reading the target's hidden "
        r"states.*; its drafter is of kind model",
    ):
        generate(ModelPair(target, tiny_llama(7, layers=1)), prompts[:1], "eagle3", 2, 1, 4)
    with pytest.raises(
        UsageError,
        match=r"draft_target needs a drafter of kind model \(a language model of its own.*; "
        "its drafter is of kind head",
    ):
        generate(ModelPair(target, tiny_head(target)), prompts[:1], "draft_target", 2, 1, 4)


def test_head_for_another_target_is_refused(tmp_path):
    head = tiny_head(tiny_llama(0).float())
    save_eagle(head, tmp_path / "eagle", "tiny")
    with pytest.raises(UsageError, match="another target"):
        load_eagle(tmp_path / "eagle", tiny_llama(0, layers=1).float(), {"feature_layers": [0, 1]})


@torch.no_grad()
def teacher_forced_draft(head: EagleHead, target, history: list[int]) -> int:
    """What the head predicts after `history` read in one pass: pair (features at j, token j + 1) for every j."""
    from specdeploy.engines.reference.runtime.eagle import FeatureTap

    tap = FeatureTap([target.model.layers[i] for i in head.feature_layers])
    try:
        target(input_ids=torch.tensor([history]))
        feats = tap.features()
    finally:
        tap.close()
    embeds = head.inputs(torch.tensor([history[1:]]), feats[:, :-1], True)
    hidden = head.body.model(inputs_embeds=embeds).last_hidden_state
    return int(head.body.lm_head(hidden[:, -1]).argmax(-1))


def test_first_drafts_equal_the_head_read_in_one_pass(target, prompts, monkeypatch):
    """The incremental feed (prefill features, then each verify chunk's, holes across rows) must give the head
    exactly the inputs a single pass over the verified history gives: a misaligned or stale feature breaks it."""
    from specdeploy.engines.reference.runtime.eagle import EagleDrafter

    head, seen = tiny_head(target), []
    propose = EagleDrafter.propose

    def spy(self, histories, limits):
        drafts, qs = propose(self, histories, limits)
        seen.extend((list(h), d[0]) for h, d in zip(histories, drafts, strict=True) if d)
        return drafts, qs

    monkeypatch.setattr(EagleDrafter, "propose", spy)
    generate(ModelPair(target, head), prompts[:6], "eagle3", 2, 3, MAX_NEW)
    assert len(seen) > 20
    assert all(draft == teacher_forced_draft(head, target, history) for history, draft in seen)
