"""A prediction is labelled a prediction, the K range is one, and a clamped K shows everywhere the K does
(issue 16, items 1 and 4). The model backend is the performance model: its numbers are predictions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from specdeploy import api
from specdeploy.plan.text import plan_text
from specdeploy.tune import run as tune_run
from specdeploy.tune.result import V1_NAMES, BackendChoice
from specdeploy.tune.setup import setup_from
from specdeploy.tune.summary import decision_lines
from specdeploy.tune.types import Request
from tests.helpers import slowed, write_profile


def test_a_prediction_never_reads_as_a_measurement(tmp_path: Path) -> None:
    resolved = api.load_and_resolve("h100-draft-target")
    lines: list[str] = []
    warnings: list[str] = []
    res = tune_run.tune_resolved(resolved, tmp_path, backend="auto", say=lines.append, warn=warnings.append)
    assert res.backend == "model" and res.evidence == "predicted"  # no TensorRT-LLM here
    assert res.backend_choice == BackendChoice("auto", "model", "auto: TensorRT-LLM is not installed")
    assert len(warnings) == 1 and "PREDICTION" in warnings[0] and "TensorRT-LLM is not installed" in warnings[0]
    assert res.cost["device_s"] is None and res.confidence["level"] == "none (predicted)"
    assert all(m["cost_s"] is None and m["evidence"] == "predicted" for m in res.measurements)
    assert all("measured" not in d["reason"] and d["evidence"] == "predicted" for d in res.decisions)
    # the live lines: "predicted", never a fake run time like "(18.0 s)"
    assert lines and all(": predicted " in line and not line.endswith(" s)") for line in lines)
    text = "\n".join(decision_lines(res.to_dict()))
    assert "PREDICTED by the performance model" in text and "measured" not in text.replace("nothing measured", "")
    report = Path(str(res.report)).read_text()
    assert "PREDICTED" in report and "device time" not in report and "device-seconds" not in report
    assert "confidence" not in report
    rows = (Path(str(res.report)).parent / "measurements.csv").read_text().splitlines()
    assert rows[0].startswith("kind,concurrency,k,evidence") and len(rows) == len(res.measurements) + 1
    assert "run_s" not in rows[0] and all(",predicted,model," in row for row in rows[1:])  # no run seconds
    lock = tune_run.record_in_lock(res, tmp_path)["tuned"]
    assert lock["backend"] == "model" and lock["evidence"] == "predicted" and lock["confidence"] == "none (predicted)"


def test_a_prediction_is_asked_once_and_shows_one_value_with_its_band(tmp_path: Path) -> None:
    """The model is deterministic: every point is predicted once (no `#0/#1/#2`, no second probe), shows one value
    per metric (no percentiles, no median/MAD, no noise-based confidence) and the model's relative error band."""
    lines: list[str] = []
    res = tune_run.tune_resolved(api.load_and_resolve("h200-eagle3"), tmp_path, backend="model", say=lines.append)
    points = [(m["request"]["kind"], m["request"]["concurrency"], m["request"]["k"]) for m in res.measurements]
    assert len(points) == len(set(points)) and all(m["request"]["repeat"] == 0 for m in res.measurements)
    assert len(lines) == len(points) and not any("#" in line for line in lines)
    e2e = [m["values"] for m in res.measurements if m["request"]["kind"] == "e2e"]
    assert all(
        {
            "request_throughput",
            "output_token_throughput",
            "output_token_throughput_per_user",
            "ttft_ms",
            "tpot_ms",
            "itl_ms",
        }
        <= set(v)
        for v in e2e
    )
    assert not any(name.startswith(("mean_", "p50_", "p90_", "p99_")) for v in e2e for name in v)
    assert all(set(c) == {"value"} for d in res.decisions for c in d["candidates"].values())
    assert res.confidence == {"level": "none (predicted)"} and "mad" not in json.dumps(res.record())
    band = res.error_band
    assert band is not None and set(band) >= {"max_rel_err", "median_rel_err"} and "max_abs_err" not in band
    suffix = "× ±{:.0%} ".format(band["max_rel_err"])
    assert all(suffix in line for line in decision_lines(res.to_dict()) if line.startswith("c="))
    report = re.sub(r"data:image/png;base64,[^']*", "", Path(str(res.report)).read_text())  # the text, not the PNGs
    assert "p99" not in report and "p50" not in report and "error band (relative, on speedup)" in report
    header = (Path(str(res.report)).parent / "measurements.csv").read_text().splitlines()[0].split(",")
    assert "repeat" not in header and {"ttft_ms", "tpot_ms", "itl_ms"} <= set(header)


def test_a_v1_result_still_renders(tmp_path: Path) -> None:
    """A result written before the metrics were renamed (specdeploy.tune/1) re-renders under the new names."""
    from specdeploy.tune.report import write_report
    from specdeploy.tune.result import readable

    res = tune_run.tune_resolved(
        api.load_and_resolve("h200-eagle3", ("tune.concurrency=[1, 4]",)), tmp_path, backend="model", report=False
    ).record()
    old_names = {v: k for k, v in V1_NAMES.items()}
    v1 = json.loads(json.dumps(res), object_hook=lambda d: {old_names.get(k, k): v for k, v in d.items()})
    v1 = {**v1, "format": "specdeploy.tune/1"}
    v1.pop("environment")
    assert "system_tps" in json.dumps(v1) and "max_abs_err" in json.dumps(v1)
    page = write_report(v1, tmp_path / "old").read_text()
    assert "Not recorded" in page and "±{:.0%}".format(res["error_band"]["max_rel_err"]) in page
    write_report(res, tmp_path / "new")
    assert (tmp_path / "old" / "measurements.csv").read_text() == (tmp_path / "new" / "measurements.csv").read_text()
    assert readable(v1)["mixed"]["plain_output_token_throughput"] == res["mixed"]["plain_output_token_throughput"]
    with pytest.raises(ValueError, match="specdeploy.tune/9"):
        readable({**res, "format": "specdeploy.tune/9"})


def test_a_measuring_backend_keeps_its_seconds(tmp_path: Path) -> None:
    """The same numbers from a backend that measures (a double at the process boundary) read as measured."""
    resolved = api.load_and_resolve("h100-draft-target")
    setup = setup_from(resolved)
    model, _ = tune_run.make_backend("model", resolved, setup, tmp_path)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(tune_run, "PREDICTING", frozenset())
    try:
        lines: list[str] = []
        res = tune_run.tune_resolved(resolved, tmp_path, backend="model", measure=model, say=lines.append, report=False)
    finally:
        monkey.undo()
    assert res.evidence == "measured" and res.cost["device_s"] > 0
    assert any(line.endswith(" s)") for line in lines) and "best measured" in res.decisions[0]["reason"]


def test_the_progress_count_never_overshoots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The final mixed replay is not in any batch the strategy announced: the total grows for it (no 86/85)."""
    import contextlib

    from rich.progress import Progress

    bars: list[Progress] = []

    @contextlib.contextmanager
    def quiet_bar(enabled: bool) -> Any:
        bars.append(Progress(disable=enabled))  # a real bar that draws nothing
        yield bars[-1]

    monkeypatch.setattr(tune_run, "progress_bar", quiet_bar)
    res = tune_run.tune_resolved(
        api.load_and_resolve("h200-eagle3"), tmp_path, backend="model", progress=True, report=False
    )
    task = bars[0].tasks[0]
    assert res.mixed is not None  # the replay ran
    assert task.completed == len(res.measurements) and task.completed <= (task.total or 0)


def _auto_profile(tmp_path: Path) -> Path:
    return write_profile(
        tmp_path / "auto.yaml",
        {
            "target": {"model": "meta-llama/Llama-3.1-8B-Instruct"},
            "hardware": {"gpu": "h200"},
            "runtime": {"trtllm_version": "1.2.1"},
            "speculative": {
                "mechanism": "eagle3",
                "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                "draft_len": "auto",
            },
            "tune": {"concurrency": [1, 16]},
        },
    )


def test_plan_and_tune_search_one_k_range(tmp_path: Path) -> None:
    """plan said `up to K = 3` while tune searched 1..6: both now read draft_len_candidates."""
    resolved, the_plan = api.plan(str(_auto_profile(tmp_path)))
    full = api.load_and_resolve(str(_auto_profile(tmp_path)))
    assert setup_from(full).draft_lens == resolved.draft_lens == (1, 2, 3, 4, 5, 6)
    assert resolved.draft_len == 6 and resolved.to_dict()["draft_lens"] == [1, 2, 3, 4, 5, 6]
    text = plan_text(resolved, the_plan)
    assert "K = 1..6 (draft_len: auto" in text and "clamped" in text  # TRT-LLM 1.2's rule, before any tune
    assert "clamped" in the_plan.to_dict()["resolved"]["clamp"]


def test_a_clamped_k_shows_wherever_the_k_does(tmp_path: Path) -> None:
    """A world where drafting is slow at concurrency 1 (K = 1 there) but pays at 16: TRT-LLM 1.2 clamps."""
    full = api.load_and_resolve(str(_auto_profile(tmp_path)))
    model, _ = tune_run.make_backend("model", full, setup_from(full), tmp_path)

    def slow_drafts_alone(req: Request) -> dict[str, Any]:
        values = model(req)
        if req.concurrency == 1 and req.k > 1 and "output_token_throughput" in values:
            values = slowed(values, 0.2)
        return values

    res = tune_run.tune_resolved(full, tmp_path, backend="model", strategy="grid", measure=slow_drafts_alone)
    by_c = {d["concurrency"]: d for d in res.decisions}
    assert by_c[1]["k"] == 1 and by_c[16]["k"] > 1 and by_c[16]["k_emitted"] == 1
    assert res.schedule["clamped"] == {"16": {"tuned": by_c[16]["k"], "emitted": 1}}
    clamp = f"K={by_c[16]['k']} -> 1 (clamped)"
    assert any(clamp in line for line in decision_lines(res.to_dict()))  # console
    assert any("K clamped to 1" in n for n in res.schedule["notes"])  # JSON (--json prints the result)
    html = Path(str(res.report)).read_text()
    assert f"{by_c[16]['k']} -&gt; 1 (clamped)" in html and "K clamped to 1" in html  # report
    mixed = next(m for m in res.measurements if m["request"]["kind"] == "mixed")
    assert dict(mixed["request"]["schedule"]) == {1: 1, 16: 1}  # the replay runs the schedule as emitted
    lock = json.loads(json.dumps(tune_run.record_in_lock(res, tmp_path)["tuned"]))
    assert lock["clamped"]["16"]["emitted"] == 1 and any("clamped" in n for n in lock["notes"])  # lock
    # the emitted YAML (the build's emit step reads the tune step's outputs = the lock record)
    from specdeploy.engines.trtllm.actions import emit_llm_api
    from specdeploy.execute.context import ActionContext

    the_plan = api.plan(str(_auto_profile(tmp_path)))[1]
    ctx = ActionContext(
        full,
        the_plan,
        the_plan.step("emit.llm_api"),
        tmp_path / "emit",
        log=type("L", (), {"write": lambda *_: None})(),
        outputs={"tune.draft_len": lock},
    )
    emit_llm_api(ctx)
    options = (tmp_path / "emit" / "llm_api_options.yaml").read_text()
    assert "# note: TRT-LLM 1.2.x needs the smallest key's K = max_draft_len: K clamped to 1" in options
    assert "draft_len_schedule:\n    1: 1\n" in options


def test_a_clamp_to_plain_decoding_switches_speculation_off() -> None:
    """TRT-LLM 1.2 with plain decoding best at concurrency 1: every K clamps to 0, so speculation is off (not a
    schedule of zeros that still claims to speculate)."""
    from specdeploy.tune.book import Decision
    from specdeploy.tune.emit import schedule_of

    decisions = {1: Decision(1, 0, 100.0, 100.0, "plain"), 16: Decision(16, 6, 900.0, 500.0, "best")}
    sched = schedule_of(decisions, max_batch_size=64, trtllm_version="1.2.1")
    assert sched["speculation"] is False and sched["emitted"] is None and sched["clamped"]["16"]["emitted"] == 0
    assert any("K clamped to 0" in n for n in sched["notes"]) and any("speculation off" in n for n in sched["notes"])


def test_a_predicted_tune_stopped_by_its_budget_spends_no_device_seconds(tmp_path: Path) -> None:
    resolved = api.load_and_resolve("h100-draft-target", ("tune.time_budget_s=60",))
    res = tune_run.tune_resolved(resolved, tmp_path, backend="model", report=False)
    assert res.stopped and "device-seconds" not in res.stopped and "simulated" in res.stopped


def test_auto_with_tensorrt_llm_but_no_gpu_predicts_like_build(tmp_path: Path, monkeypatch) -> None:
    """`tune --backend auto` and `build`'s tune step ask one question; TensorRT-LLM without a GPU cannot measure
    (before: `tune` picked trtllm there, and its first trtllm-bench failed)."""
    from specdeploy.execute import needs
    from specdeploy.resolve.probe import probe_nvml

    assert not probe_nvml()[0]  # this machine has no NVIDIA GPU
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "fixtures" / "installed_trtllm"))  # the double
    monkeypatch.setattr(needs, "installed_trtllm", lambda: "1.3.0")  # it has no dist-info; the engine asks needs
    resolved = api.load_and_resolve("h100-draft-target")
    picked, why = tune_run.pick_backend(resolved, "auto")
    assert picked == "model" and why.startswith("auto: no NVIDIA GPU (")
    res = tune_run.tune_resolved(resolved, tmp_path, backend="auto", say=lambda _l: None, warn=lambda _w: None)
    assert res.backend == "model" and res.evidence == "predicted"
