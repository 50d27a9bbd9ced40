"""The published record (data/published.json), the terms it justifies, and the priors derived from it.

No figure of a source is repeated here: the checks read the rows and test the model against what they say.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from specdeploy.errors import UsageError
from specdeploy.perfmodel import record
from specdeploy.perfmodel.acceptance import AcceptanceProfile, iid_alpha
from specdeploy.perfmodel.attention import attention_work
from specdeploy.perfmodel.cost import Efficiency, experts_touched, forward_cost
from specdeploy.perfmodel.predict import AnalyticTimer, Tree
from specdeploy.perfmodel.priors import prior_profile, published
from specdeploy.perfmodel.shapes import DEEPSEEK_V3, LLAMA_3_1_8B, LLAMA_3_1_70B, LLAMA_4_SCOUT, SHAPES
from specdeploy.resolve.gpus import GPUS


def test_record_loads_with_enough_rows_sources_and_both_splits() -> None:
    data = record.record()
    speed = [r for r in record.rows() if r["metric"] != "acceptance only"]
    assert len(speed) >= 20 and len({r["source"] for r in record.rows()}) >= 6
    for split in record.SPLITS:
        assert record.rows(split), split
    for r in record.rows():
        src = data["sources"][r["source"]]
        assert r["split"] == src["split"] and src["where"] and r["section"]
        assert isinstance(r["not_stated"], list)
        assert r.get("model") is None or r["model"] in SHAPES, r["id"]
        assert r.get("gpu") is None or r["gpu"] in GPUS, r["id"]


def test_split_is_by_source_so_no_source_is_in_both_halves() -> None:
    halves = {s: {r["source"] for r in record.rows(s)} for s in record.SPLITS}
    assert not halves["calibration"] & halves["held-out"]


def test_a_malformed_record_is_refused() -> None:
    data = copy.deepcopy(record.record())
    data["rows"].append(dict(data["rows"][0]))
    with pytest.raises(UsageError, match="malformed"):
        record.validate(data)
    data = copy.deepcopy(record.record())
    data["rows"][0] = {**data["rows"][0], "speedup": None, "spec_tps": None, "al": None}
    with pytest.raises(UsageError, match="no published figure"):
        record.validate(data)
    json.dumps(data)  # the record stays plain JSON


def test_priors_derived_from_rows_reproduce_their_rows() -> None:
    """Every prior that cites rows gives back the AL those rows published, at their K."""
    cited = [p for p in published().values() if p.rows]
    assert {p.mechanism for p in cited} >= {"mtp", "eagle3", "eagle", "ngram"}
    for entry in cited:
        profile = prior_profile(entry.mechanism)
        assert all(i in profile.source for i in entry.rows)
        for row_id in entry.rows:
            r = record.row(row_id)
            assert profile.expected_al(r["k"]) == pytest.approx(r["al"], abs=0.005), row_id


def test_iid_alpha_inverts_the_chain_al() -> None:
    for al, k in ((1.37, 5), (2.77, 7), (3.9, 8)):
        assert AcceptanceProfile.iid(iid_alpha(al, k), k).expected_al(k) == pytest.approx(al, abs=1e-6)


def test_mtp_sweep_rows_fix_the_per_pass_cost_shape() -> None:
    """The published MTP sweep: each K adds a verified token and a drafter pass; with a per-pass latency the
    step time grows about linearly in K, as the rows' AL / tokens/s imply."""
    eff = Efficiency(draft_pass_s=5e-4, layer_overhead_s=7e-5)
    timer = AnalyticTimer(DEEPSEEK_V3, GPUS["b200"], mechanism="mtp", quantization="nvfp4", tp=8, eff=eff)
    steps = [timer.step_seconds(1, k) for k in range(6)]
    deltas = [b - a for a, b in zip(steps, steps[1:])]
    assert all(d > 5e-4 for d in deltas)
    assert max(deltas) / min(deltas) < 1.5
    rows = [record.row(f"dsr1-mtp{k}-b200") for k in range(1, 6)]
    implied = [r["al"] / r["spec_tps"] for r in rows]
    assert implied == sorted(implied)  # the rows' own step times grow with K


def test_per_layer_and_per_step_fixed_costs_add_once_per_forward() -> None:
    base = forward_cost(LLAMA_3_1_8B, GPUS["h100-sxm"], batch=1, tokens=1, context=1024, eff=Efficiency()).total_s
    eager = forward_cost(
        LLAMA_3_1_8B, GPUS["h100-sxm"], batch=1, tokens=1, context=1024, eff=Efficiency(layer_overhead_s=3e-4)
    ).total_s
    assert eager - base == pytest.approx(LLAMA_3_1_8B.layers * 3e-4)


def test_tp_allreduce_and_ep_alltoall_latency_per_layer() -> None:
    eff = Efficiency(allreduce_latency_s=1e-5, alltoall_latency_s=2e-5)
    one = forward_cost(DEEPSEEK_V3, GPUS["b200"], batch=1, tokens=1, context=1024, tp=8, eff=eff)
    ep = forward_cost(DEEPSEEK_V3, GPUS["b200"], batch=1, tokens=1, context=1024, tp=8, eff=eff, ep=8)
    moe_layers = DEEPSEEK_V3.layers - DEEPSEEK_V3.dense_layers
    assert ep.comm_s - one.comm_s == pytest.approx(moe_layers * 2e-5)
    assert one.comm_s >= 2 * DEEPSEEK_V3.layers * 1e-5


def test_moe_expert_loading_saturates_at_the_expert_count() -> None:
    for model in (DEEPSEEK_V3, LLAMA_4_SCOUT):
        touched = [experts_touched(model.experts, model.active_experts, n) for n in (1, 4, 16, 64, 4096)]
        assert touched[0] == pytest.approx(model.active_experts)
        assert touched == sorted(touched) and touched[-1] == pytest.approx(model.experts, rel=1e-3)


def test_per_token_cost_makes_verification_grow_with_batch_on_dense_targets() -> None:
    gpu, eff = GPUS["h100-sxm"], Efficiency(token_overhead_s=3e-6)

    def ratio(b: int, e: Efficiency) -> float:
        return (
            forward_cost(LLAMA_3_1_8B, gpu, batch=b, tokens=4, context=1024, eff=e).total_s
            / forward_cost(LLAMA_3_1_8B, gpu, batch=b, tokens=1, context=1024, eff=e).total_s
        )

    assert ratio(64, eff) > ratio(2, eff) > 1.0
    assert ratio(64, eff) > ratio(64, Efficiency())


def test_torch_sdpa_proxy_reads_kv_g_times_only_past_one_token() -> None:
    for t in (1, 2, 9):
        packed = attention_work(LLAMA_3_1_70B, batch=8, tokens=t, context=4096)
        proxy = attention_work(LLAMA_3_1_70B, batch=8, tokens=t, context=4096, gqa_packed=False)
        assert proxy.kv_bytes == (packed.kv_bytes if t == 1 else LLAMA_3_1_70B.group_size * packed.kv_bytes)


def test_tree_verifies_its_nodes_and_drafts_topk_rows_per_pass() -> None:
    gpu, eff = GPUS["h100-sxm"], Efficiency(draft_pass_s=1e-4)
    chain = AnalyticTimer(LLAMA_3_1_8B, gpu, mechanism="eagle3", eff=eff)
    tree = AnalyticTimer(LLAMA_3_1_8B, gpu, mechanism="eagle3", eff=eff, tree=Tree(5, 4, 8))
    assert tree.verify(1, 5).work.tokens == 8 and chain.verify(1, 5).work.tokens == 6
    assert tree.draft_seconds(1, 5) > chain.draft_seconds(1, 5)
    base = AcceptanceProfile.iid(0.6, 8)
    wide = base.widened(Tree(5, 4, 8).width())
    assert base.expected_al(5) < wide.expected_al(5) < 6.0
    assert base.widened(1.0).prefix == pytest.approx(base.prefix)


def test_tree_width_counts_as_width_to_the_fitted_gamma() -> None:
    """A tree's extra candidates per depth are worth width ** gamma independent ones; gamma comes from
    data/acceptance.json (the bench's fit), and the fit explains the record's tree ALs far better than gamma = 1
    (every candidate independent, the old rule)."""
    fit = json.loads(record.ACCEPTANCE.read_text(encoding="utf-8"))["tree"]
    gamma = record.tree_gamma()
    assert gamma == fit["gamma"] and 0.0 < gamma < 1.0
    assert Tree(8, 8, 60).width() == 59 / 8 and Tree(8, 8, 60).effective_width() == pytest.approx((59 / 8) ** gamma)
    assert Tree(3, 1, 4).effective_width() == 1.0 and Tree(3, 3, 4).width() == 1.0  # the root is no candidate
    chain = AcceptanceProfile.iid(0.6, 8)
    shallow = Tree(8, 4, 4).acceptance(chain)  # 3 drafted nodes: no path deeper than 3
    assert shallow.expected_al(8) == shallow.expected_al(3) < 4.0
    assert fit["al_rel_err"]["max"] < fit["al_rel_err_gamma_1"]["mean"] / 3
    for row_id in fit["fitted_on"]:  # calibration rows that publish a tree's AL
        r = record.row(row_id)
        assert r["split"] == "calibration" and r["al"] and record.setting(r, "tree")


def test_bands_answer_by_mechanism_then_fall_back() -> None:
    b = record.band("mtp", "b200")
    if b is None:
        pytest.skip("bench/perfmodel_published.py has not written data/bands.json")
    assert b["rows"] >= 1 and b["max_rel_err"] >= b["median_rel_err"] >= 0
    assert "published rows" in record.band_text("mtp", "b200")
    assert record.band("someone-elses-drafter", "b200")["key"] == "*"


def test_engine_profiles_and_bands_are_what_the_bench_computes() -> None:
    """data/engines.json, bands.json and acceptance.json are the bench's output on this record, not hand-edited."""
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[3] / "bench" / "perfmodel_published.py"
    proc = subprocess.run([sys.executable, str(bench), "--check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_drafter_passes_per_mechanism() -> None:
    from specdeploy.perfmodel.drafters import draft_passes

    assert [draft_passes(m, 4) for m in ("eagle3", "mtp", "draft_target", "medusa", "dflash", "ngram")] == [
        4,
        4,
        4,
        1,
        1,
        0,
    ]
    assert draft_passes("someone-elses-drafter", 3) == 3 and draft_passes("eagle3", 0) == 0


def test_the_h200_grid_is_better_explained_with_the_sdpa_proxy() -> None:
    """The grid's T > 1 jump: charging torch SDPA's G-fold KV reads lowers both the mean and the worst error."""
    from pathlib import Path

    from specdeploy.perfmodel.calibrate import calibrate_file

    grid = Path(__file__).resolve().parents[3] / "bench" / "results" / "step_cost-nvidia-h200.json"
    shipped, proxy = calibrate_file(str(grid)), calibrate_file(str(grid), gqa_packed=False)
    assert proxy.mean_rel_err < shipped.mean_rel_err and proxy.max_rel_err < shipped.max_rel_err / 2


README = Path(__file__).resolve().parents[3] / "docs" / "design" / "perfmodel.md"
RESULT = Path(__file__).resolve().parents[3] / "bench" / "results" / "perfmodel_published.json"


def _published_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## The published record and what it justifies") :]


def test_readme_terms_name_the_rows_that_justify_them() -> None:
    """Each term of docs/design/perfmodel.md names rows of the record (or the H200 grid); every id it names exists."""
    import re

    section = _published_section()
    table = section[section.index("| term (`Efficiency` field") : section.index("\n\n", section.index("| term ("))]
    ids = {r["id"] for r in record.rows()}
    for line in table.splitlines()[2:]:
        cited = [c for c in re.findall(r"`([a-z0-9][a-z0-9.-]+)`", line.split("|")[3]) if c.count("-") >= 2]
        assert cited or "grid" in line.split("|")[3], line
        assert set(cited) <= ids, set(cited) - ids


def test_readme_lists_every_held_out_miss_the_bench_writes() -> None:
    result = json.loads(RESULT.read_text(encoding="utf-8"))
    section = _published_section()
    for p in result["rows"]:
        if p["split"] == "held-out" and "miss" in p:
            assert f"| `{p['id']}` |" in section and p["miss"] in section, p["id"]
