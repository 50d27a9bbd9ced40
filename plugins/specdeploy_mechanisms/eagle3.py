"""EAGLE-3: a one-layer drafter fed with the target's hidden states (PyTorch backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specdeploy.engines.reference.declare import ReferenceDrafter
from specdeploy.engines.trtllm.declare import TrtllmDecoding
from specdeploy.engines.trtllm.versions import VersionLine
from specdeploy.engines.vllm.declare import VllmMethod
from specdeploy.issues import Issue
from specdeploy.plugin import AcceptancePrior, CheckContext, Mechanism
from specdeploy_mechanisms._common import options

if TYPE_CHECKING:
    from specdeploy_mechanisms._options import Eagle3Options

EAGLE3_DRAFT_VOCAB = 32000
"""The draft vocabulary of published EAGLE-3 heads, when the drafter's config does not say."""


class Eagle3(Mechanism):
    name = "eagle3"
    summary = "EAGLE-3 drafter head on the target's hidden states; high acceptance, cheap drafting"
    Options = options("Eagle3Options")
    needs_draft_model = True
    engines = {
        "pytorch": TrtllmDecoding(
            decoding_type={"1.2": "Eagle", "1.3": "Eagle3"},
            fields=lambda o, line: _fields(o, line),
            overlap=lambda o: bool(getattr(o, "one_model", True)),
            refuse=lambda o, line: _refused(o, line),
            range_notes=lambda line: (
                [] if line.eagle3_two_model == "supported" else [f"two-model {line.eagle3_two_model}"]
            ),
            one_model=lambda o, line: line.name == "1.2" and bool(getattr(o, "one_model", True)),
            unconfirmed=("1.3.eagle3_two_model_rc24_rc26", "1.3.tree_topk_since_rc14"),
            sources={
                "decoding_type": "P121 from_dict maps 'Eagle' (no Eagle3); Eagle3 literal P14",
                "two_model": "VersionLine.eagle3_two_model of each range (its sources)",
            },
        ),
        "reference": ReferenceDrafter("specdeploy.engines.reference.runtime.eagle:EagleDrafter", reads="head"),
        "vllm": VllmMethod(
            "eagle3",
            "required",
            ignored={"one_model": "vLLM always runs the EAGLE-3 head in the target's process"},
            refused={
                "layers_to_capture": (
                    None,
                    "vLLM reads the captured layers from the head's config.json "
                    "(eagle_aux_hidden_state_layer_ids), not from the speculative config",
                ),
                "dynamic_tree": (False, "vLLM 0.32 drafts a chain, no dynamic tree"),
                "dynamic_tree_max_topk": (None, "vLLM 0.32 drafts a chain, no dynamic tree"),
            },
        ),
    }
    default_draft_len = 3
    training = "trained drafter head per target"
    prior = AcceptancePrior(row="l31-8b-eagle3-al-mtbench", note=" (MT-bench, temperature 1)")

    def check(self, ctx: CheckContext) -> Iterator[Issue]:
        opts: Eagle3Options = ctx.options
        if opts.dynamic_tree and ctx.line is not None and ctx.line.name == "1.2":
            yield ctx.issue(
                "options.dynamic_tree",
                "dynamic EAGLE-3 trees need TensorRT-LLM 1.3 or later",
                "set runtime.trtllm_version: 1.3.0 or drop dynamic_tree",
            )
        if opts.dynamic_tree and opts.dynamic_tree_max_topk is None and _tree_needs_topk(ctx.line):
            yield ctx.issue(
                "options.dynamic_tree_max_topk",
                "TensorRT-LLM refuses a dynamic tree without dynamic_tree_max_topK (EagleDecodingConfig."
                "validate_eagle_config; tables/trtllm-1.3.json, Eagle3)",
                "set options.dynamic_tree_max_topk, e.g. 4",
            )
        yield from _two_model(ctx, opts)
        if ctx.target and ctx.draft:
            if ctx.draft.hidden != ctx.target.hidden:
                yield ctx.issue(
                    "draft_model",
                    f"EAGLE-3 drafter hidden size {ctx.draft.hidden} does not match the target's {ctx.target.hidden}",
                    "use the EAGLE-3 drafter trained for this target",
                )
            if ctx.draft.vocab and ctx.draft.vocab != ctx.target.vocab:
                yield ctx.issue(
                    "draft_model",
                    f"EAGLE-3 drafter vocab_size {ctx.draft.vocab} does not match the target's {ctx.target.vocab}",
                    "use the EAGLE-3 drafter trained for this target",
                )
        if opts.layers_to_capture and ctx.profile.runtime.backend == "reference":
            yield Issue(
                ("speculative", "options", "layers_to_capture"),
                "ignored on the reference backend: its EAGLE head reads the target layers it was trained on "
                "(recorded in the drafter's specdeploy_drafter.json); this option is TensorRT-LLM's",
                "drop it for the reference backend, or train a head on these layers (tools/train_eagle.py --layers)",
                severity="warning",
            )
        elif ctx.target and opts.layers_to_capture:
            bad = [i for i in opts.layers_to_capture if not -ctx.target.layers <= i < ctx.target.layers]
            if bad:
                yield ctx.issue(
                    "options.layers_to_capture", f"layers {bad} do not exist in a {ctx.target.layers}-layer target"
                )

    def draft_cost(self, ctx: Any, batch: int, k: int) -> float:
        """K sequential steps of one decoder layer + an LM head over the draft vocabulary."""
        head = ctx.draft.draft_vocab if ctx.draft and ctx.draft.draft_vocab else EAGLE3_DRAFT_VOCAB
        return float(k * ctx.forward(ctx.layer(ctx.draft or ctx.target), batch=batch, lm_vocab=head))


def _refused(opts: Any, line: Any) -> Issue | None:
    """Two-model EAGLE-3 where the TensorRT-LLM range refuses it or nobody read it (its `eagle3_two_model` rule)."""
    if not getattr(opts, "one_model", True) and line.eagle3_two_model in ("refused", "unknown"):
        return Issue(
            ("speculative", "options", "one_model"),
            f"two-model EAGLE-3 is {line.eagle3_two_model} on "
            f"TensorRT-LLM {line.range} ({line.sources.get('eagle3_two_model', 'UNKNOWN')})",
            "set options.one_model: true, or pin runtime.trtllm_version: 1.3.0rc23 or 1.2.1",
        )
    return None


def _fields(opts: Any, line: Any) -> dict[str, Any]:
    """One- or two-model, the target layers captured, the dynamic tree (its keys per range)."""
    cfg: dict[str, Any] = (
        {"eagle3_one_model": bool(getattr(opts, "one_model", True))} if line.eagle3_two_model != "refused" else {}
    )
    if getattr(opts, "layers_to_capture", None):
        cfg["eagle3_layers_to_capture"] = sorted(set(opts.layers_to_capture))
    if getattr(opts, "dynamic_tree", False):
        cfg["use_dynamic_tree"] = True
        if getattr(opts, "dynamic_tree_max_topk", None):
            cfg["dynamic_tree_max_topK"] = opts.dynamic_tree_max_topk
    return cfg


def _two_model(ctx: CheckContext, opts: Eagle3Options) -> Iterator[Issue]:
    """Two-model EAGLE-3 where the TensorRT-LLM range deprecates it (where it refuses it: `_refused`, which the
    core reports)."""
    line = ctx.line
    if line is None or opts.one_model:
        return
    version = ctx.profile.runtime.trtllm_version
    if line.eagle3_two_model == "deprecated":
        yield Issue(
            ("speculative", "options", "one_model"),
            f"two-model EAGLE-3 is deprecated on TensorRT-LLM {version} (removed from 1.3.0rc27)",
            "set options.one_model: true",
            severity="warning",
        )


def _tree_needs_topk(line: object) -> bool:
    """The TensorRT-LLM ranges read to refuse a dynamic tree without a top-K (`VersionLine.tree_needs_topk`)."""
    return isinstance(line, VersionLine) and line.tree_needs_topk
