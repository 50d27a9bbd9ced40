"""Emission for vLLM: the speculative config per mechanism, the schedule, the --config YAML and the argv."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from specdeploy.engines.vllm.contract import lines
from specdeploy.engines.vllm.declare import VllmMethod, method_of
from specdeploy.engines.vllm.emit import ServeLimits, emit, speculative_config
from specdeploy.errors import UsageError

LINE = lines()["0.32"]
LIMITS = ServeLimits(max_num_seqs=64, max_model_len=4096, dtype="bfloat16", port=8123)


def test_ngram_maps_the_matching_size_and_drops_trtllm_pool_settings() -> None:
    spec, origin = speculative_config("ngram", {"max_matching_ngram_size": 4, "is_keep_all": True}, 3, LINE)
    assert spec == {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    assert origin["prompt_lookup_max"] == ("speculative", "options", "max_matching_ngram_size")


@pytest.mark.parametrize(
    ("mechanism", "method"),
    [("draft_target", "draft_model"), ("eagle", "eagle"), ("eagle3", "eagle3"), ("dspark", "dspark")],
)
def test_drafter_methods_carry_the_drafter(mechanism: str, method: str) -> None:
    spec, _ = speculative_config(mechanism, {}, 2, LINE, drafter="/models/head")
    assert spec == {"method": method, "num_speculative_tokens": 2, "model": "/models/head"}


def test_mtp_and_dspark_may_use_the_targets_own_weights() -> None:
    assert speculative_config("mtp", {"vanilla": False}, 1, LINE)[0] == {"method": "mtp", "num_speculative_tokens": 1}
    assert "model" not in speculative_config("dspark", {"draft_topk": 8}, 7, LINE)[0]


def test_sa_is_not_vllms_suffix_decoding() -> None:
    # TensorRT-LLM's SA is a per-request suffix automaton; vLLM's suffix is Arctic Inference's suffix trees
    assert method_of("sa") is None
    with pytest.raises(UsageError, match="has no method for 'sa'"):
        speculative_config("sa", {}, 4, LINE)


def test_suffix_maps_its_options_onto_the_suffix_decoding_fields() -> None:
    options = {"max_tree_depth": 16, "max_cached_requests": 0, "max_spec_factor": 2.0, "min_token_prob": 0.2}
    spec, origin = speculative_config("suffix", options, 8, LINE)
    assert spec == {
        "method": "suffix",
        "num_speculative_tokens": 8,
        "suffix_decoding_max_tree_depth": 16,
        "suffix_decoding_max_cached_requests": 0,
        "suffix_decoding_max_spec_factor": 2.0,
        "suffix_decoding_min_token_prob": 0.2,
    }
    assert origin["suffix_decoding_max_tree_depth"] == ("speculative", "options", "max_tree_depth")
    assert origin["num_speculative_tokens"] == ("speculative", "draft_len")  # the cap of a variable draft
    assert set(spec) - {"method", "num_speculative_tokens"} <= set(LINE.fields)


def test_suffix_gets_one_cap_for_a_tuned_schedule() -> None:
    # vLLM 0.32's SuffixDecodingProposer asserts the scheduled K equals num_speculative_tokens
    out = emit("suffix", {}, 6, target="/m", limits=LIMITS, line=LINE, schedule={1: 6, 8: 3}, max_concurrency=16)
    assert out.speculative is not None and "num_speculative_tokens_per_batch_size" not in out.speculative
    assert out.speculative["num_speculative_tokens"] == 6
    assert out.notes[0].startswith("vLLM's suffix takes no per-batch-size schedule (its proposer asserts")
    assert "K = 6 at every batch size (tuned: 1-7: 6, 8-16: 3, 17-64: 0)" in out.notes[0]


@pytest.mark.parametrize(
    ("mechanism", "options", "drafter", "path", "message"),
    [
        ("eagle3", {}, None, "speculative.draft_model", "needs a drafter model"),
        ("ngram", {}, "/m", "speculative.draft_model", "takes no drafter model"),
        ("ngram", {"window": 3}, None, "speculative.options.window", "has no option 'window'"),
        ("suffix", {}, "/m", "speculative.draft_model", "takes no drafter model"),
        ("eagle3", {"dynamic_tree": True}, "/m", "speculative.options.dynamic_tree", "no dynamic tree"),
        ("mtp", {"relaxed_acceptance": True}, None, "speculative.options.relaxed_acceptance", "no relaxed acceptance"),
        ("medusa", {}, "/m", "speculative.mechanism", "has no method for 'medusa'"),
    ],
)
def test_what_vllm_cannot_honour_is_refused_where_the_profile_wrote_it(
    mechanism: str, options: dict[str, object], drafter: str | None, path: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        speculative_config(mechanism, options, 3, LINE, drafter=drafter)
    assert caught.value.issues[0].dotted == path


def test_k_must_be_positive() -> None:
    with pytest.raises(UsageError, match="num_speculative_tokens > 0") as caught:
        speculative_config("ngram", {}, 0, LINE)
    assert caught.value.issues[0].dotted == "speculative.draft_len"


def test_a_tuned_schedule_becomes_inclusive_ranges_and_stops_above_max_concurrency() -> None:
    out = emit("ngram", {}, 4, target="/m", limits=LIMITS, line=LINE, schedule={1: 4, 4: 2}, max_concurrency=16)
    assert out.speculative is not None
    assert out.speculative["num_speculative_tokens_per_batch_size"] == [[1, 3, 4], [4, 16, 2], [17, 64, 0]]
    assert out.origin["num_speculative_tokens_per_batch_size"] == ("speculative", "schedule")


def test_a_schedule_reaching_max_num_seqs_needs_no_stop_range() -> None:
    out = emit("ngram", {}, 3, target="/m", limits=LIMITS, line=LINE, schedule={1: 3, 8: 1})
    assert out.speculative is not None
    assert out.speculative["num_speculative_tokens_per_batch_size"] == [[1, 7, 3], [8, 64, 1]]


def test_a_schedule_k_above_num_speculative_tokens_is_refused() -> None:
    # vLLM would silently cap it at num_speculative_tokens
    with pytest.raises(UsageError, match="cap it at 2"):
        emit("ngram", {}, 2, target="/m", limits=LIMITS, line=LINE, schedule={1: 4})


def test_a_release_without_a_schedule_gets_one_k_and_a_note() -> None:
    old = dataclasses.replace(LINE, schedule_field=None)
    out = emit("ngram", {}, 4, target="/m", limits=LIMITS, line=old, schedule={1: 4, 4: 2}, max_concurrency=16)
    assert out.speculative == {"method": "ngram", "num_speculative_tokens": 4}
    assert "no per-batch-size schedule: K = 4" in out.notes[0] and "from concurrency 17" in out.notes[0]


def test_the_config_file_and_the_argv_say_the_same() -> None:
    out = emit("eagle3", {"one_model": True}, 3, target="/t", limits=LIMITS, line=LINE, drafter="/h")
    doc = yaml.safe_load(out.config_yaml())
    assert doc == {
        "model": "/t",
        "host": "127.0.0.1",
        "port": 8123,
        "max-num-seqs": 64,
        "tensor-parallel-size": 1,
        "dtype": "bfloat16",
        "max-model-len": 4096,
        "speculative-config": {"method": "eagle3", "num_speculative_tokens": 3, "model": "/h"},
    }
    argv = out.argv()
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == doc["speculative-config"]
    assert argv[argv.index("--max-num-seqs") + 1] == "64"
    assert {f"--{key}" for key in doc} <= {flag["flag"] for flag in LINE.serve_args.values()}


def test_without_a_mechanism_vllm_serves_plain() -> None:
    out = emit(None, {}, 0, target="/t", limits=LIMITS, line=LINE)
    assert out.speculative is None and "speculative-config" not in out.serve


def test_every_mechanisms_vllm_declaration_names_a_method_of_its_line() -> None:
    from specdeploy.plugin.registry import registry

    declared = {name: cls.engines["vllm"] for name, cls in registry().items() if "vllm" in cls.engines}
    assert set(declared) == {"ngram", "draft_target", "eagle", "eagle3", "mtp", "dspark", "suffix"}
    for method in declared.values():
        assert isinstance(method, VllmMethod) and method.method in LINE.methods and LINE.name in method.lines
