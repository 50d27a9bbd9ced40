"""The contract tables catch unknown or misspelled names, wrong types and values, and version mismatches."""

from __future__ import annotations

from typing import Any

from specdeploy.engines.trtllm.engine import build_argv
from specdeploy.engines.trtllm.llm_api import llm_api_options
from specdeploy.engines.trtllm.tables import check_argv, check_llm_api_options, load_table
from specdeploy.engines.trtllm.versions import LINES, RANGES, UNCONFIRMED
from tests.unit.trtllm.cases import ENGINE, PYTORCH

T12, T13 = load_table("trtllm-1.2.1"), load_table("trtllm-1.3")


def test_every_line_has_a_table() -> None:
    for line in LINES.values():
        assert load_table(line.table)["line"] == line.name
    assert "trtllm-build" in T12["cli"] and "trtllm-build" not in T13["cli"]


def test_misspelled_and_unknown_keys_fail() -> None:
    good = {
        "max_batch_size": 8,
        "speculative_config": {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "d"},
    }
    assert check_llm_api_options(good, T12) == []
    assert check_llm_api_options({"max_batch_sizes": 8}, T12) == [".max_batch_sizes: unknown field"]
    assert check_llm_api_options({"kv_cache_config": {"free_gpu_mem_fraction": 0.9}}, T12)
    bad_spec = {"speculative_config": {"decoding_type": "Eagle", "max_draft_length": 3, "speculative_model": "d"}}
    assert check_llm_api_options(bad_spec, T12)[0] == "speculative_config.max_draft_length: unknown field"
    assert check_llm_api_options({"max_batch_size": "8"}, T12)


def test_version_specific_names() -> None:
    assert check_llm_api_options({"speculative_config": {"decoding_type": "DFlash"}}, T12)
    assert check_llm_api_options({"speculative_config": {"decoding_type": "DFlash"}}, T13) == []
    assert check_llm_api_options({"speculative_config": {"decoding_type": "Medusa"}}, T13)
    rejection = {"speculative_config": {"decoding_type": "Eagle", "use_rejection_sampling": True}}
    assert check_llm_api_options(rejection, T12)


def test_argv_flags_checked() -> None:
    assert check_argv(["trtllm-serve", "m", "--backend", "pytorch", "--port", "8000"], T12) == []
    assert check_argv(["trtllm-serve", "m", "--backend", "tensorrt"], T13)  # no engine backend on 1.3
    assert check_argv(["trtllm-serve", "m", "--max-batch-size", "8"], T12)[0] == (
        "trtllm-serve: unknown option --max-batch-size"
    )
    assert check_argv(["trtllm-build", "--speculative_decoding_mode", "eagle3"], T12)
    assert check_argv(["trtllm-build", "--max_draft_len", "x"], T12)
    assert check_argv(["trtllm-build", "--checkpoint_dir", "c"], T13)
    assert check_argv(["trtllm-bench", "--model", "m", "throughput", "--concurency", "4"], T12)


def test_emitters_follow_the_version_line(resolve_case: Any) -> None:
    r12 = resolve_case("a", PYTORCH["pytorch-1.2.1-eagle3"])
    r13 = resolve_case("b", PYTORCH["pytorch-1.3.0-eagle3"])
    s12 = llm_api_options(r12, draft_len=3)["speculative_config"]
    s13 = llm_api_options(r13, draft_len=3)["speculative_config"]
    assert (s12["decoding_type"], "speculative_model_dir" in s12) == ("Eagle", True)
    assert (s13["decoding_type"], "speculative_model" in s13) == ("Eagle3", True)
    mtp = resolve_case("c", PYTORCH["pytorch-1.2.1-mtp"])
    assert llm_api_options(mtp, draft_len=2)["speculative_config"]["num_nextn_predict_layers"] == 2


def test_overlap_scheduler_and_token_budget(resolve_case: Any) -> None:
    for name, off in [
        ("pytorch-1.2.1-eagle3", False),
        ("pytorch-1.2.1-eagle3-two-model-schedule", True),
        ("pytorch-1.2.1-draft_target", True),
        ("pytorch-1.2.1-ngram-schedule", True),
        ("pytorch-1.2.1-mtp", False),
    ]:
        opts = llm_api_options(resolve_case(name, PYTORCH[name]), draft_len=7, tuning=True)
        assert opts.get("disable_overlap_scheduler", False) is off, name
        assert opts["max_num_tokens"] >= opts["max_batch_size"] * (1 + 7)
        assert opts["enable_iter_perf_stats"] is True


def test_cuda_graphs_cover_the_schedule(resolve_case: Any) -> None:
    r = resolve_case("s", PYTORCH["pytorch-1.2.1-ngram-schedule"])
    opts = llm_api_options(r, draft_len=4, schedule={1: 4, 5: 2}, max_concurrency=20)
    sizes = opts["cuda_graph_config"]["batch_sizes"]
    assert {1, 4, 5, 20, 32} <= set(sizes)


def test_lookahead_engine_draft_len(resolve_case: Any) -> None:
    r = resolve_case("l", ENGINE["tensorrt-1.2.1-lookahead"])
    argv = build_argv(r, "convert.target")
    w, n, g = 4, 3, 4
    assert argv[argv.index("--max_draft_len") + 1] == str((n - 2) + (w - 1 + g) * (n - 1))
    assert argv[argv.index("--speculative_decoding_mode") + 1] == "lookahead_decoding"


def test_unconfirmed_facts_live_in_one_place() -> None:
    assert "1.3.draft_target_alias" in UNCONFIRMED
    assert all(key in UNCONFIRMED for line in RANGES for key in line.unknown)
