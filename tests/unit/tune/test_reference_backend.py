"""The reference backend on tiny random models (real speculative decoding, a second or two): the acceptance
histogram per category sums to the run's steps, step cost comes from the probe, and a whole factorized tune
runs end to end through it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the reference backend runs torch: the reference extra")
pytest.importorskip("transformers", reason="the reference backend runs transformers: the reference extra")

from specdeploy.engines.reference.tune import ReferenceBackend  # noqa: E402
from specdeploy.metrics import MEASURED_KEYS  # noqa: E402
from specdeploy.perfmodel import ConstantTimer  # noqa: E402
from specdeploy.tune.checkpoint import Checkpoint, Recorder  # noqa: E402
from specdeploy.tune.engine import Provenance, drive, finish, result  # noqa: E402
from specdeploy.tune.report import render_html  # noqa: E402
from specdeploy.tune.result import BackendChoice  # noqa: E402
from specdeploy.tune.setup import TuneSetup  # noqa: E402
from specdeploy.tune.strategies import STRATEGIES  # noqa: E402
from specdeploy.tune.summary import csv_fields, measurements_csv  # noqa: E402
from specdeploy.tune.types import Request  # noqa: E402


@pytest.fixture(scope="module")
def backend() -> ReferenceBackend:
    from specdeploy.engines.reference.runtime.models import ModelPair
    from tests.unit.runtime.tiny import noisy_copy, random_prompts, tiny_llama

    target = tiny_llama(0)
    pair = ModelPair(target, noisy_copy(target, 1, 0.05))
    prompts = [("coding" if i % 2 else "writing", p) for i, p in enumerate(random_prompts(4, 96, seed=2))]
    setup = TuneSetup("tiny", "draft_target", True, (1, 2), (1, 2, 3), repeats=1, prompts=4, output_len=6)
    return ReferenceBackend(None, setup, pair=pair, prompts=prompts)


def test_acceptance_cost_and_e2e_are_real_measurements(backend: ReferenceBackend) -> None:
    acc = backend(Request("acceptance", 2, 3))
    assert len(acc["hist"]) == 4 and sum(acc["hist"]) > 0
    assert set(acc["per_category"]) == {"coding", "writing"}
    assert sum(acc["hist"]) == pytest.approx(sum(sum(h) for h in acc["per_category"].values()))
    c0, c3 = backend(Request("cost", 2, 0)), backend(Request("cost", 2, 3))
    assert c0["step_s"] > 0 and c3["step_s"] > 0
    assert list(backend._probes) == [(2, 0)]  # one probe per concurrency covers every K
    again = backend(Request("cost", 2, 3, 1)), backend(Request("cost", 2, 1, 1))  # a repeat: a fresh probe of c
    assert all(a["step_s"] > 0 for a in again) and list(backend._probes) == [(2, 0), (2, 1)]
    e2e = backend(Request("e2e", 2, 2))
    assert e2e["output_token_throughput"] > 0 and e2e["al"] >= 1.0 and e2e["cost_s"] > 0


def test_an_e2e_run_gives_every_metric_the_field_names(backend: ReferenceBackend) -> None:
    """Request and output token throughput (total, per user), and TTFT, TPOT and ITL per request as mean, p50,
    p90 and p99 (docs/design/metrics.md), from the runtime's per-request timings."""
    e2e = backend(Request("e2e", 2, 2))
    assert set(MEASURED_KEYS) <= set(e2e) and all(e2e[name] is not None and e2e[name] > 0 for name in MEASURED_KEYS)
    assert e2e["output_token_throughput_per_user"] == pytest.approx(e2e["output_token_throughput"] / 2)
    assert e2e["request_throughput"] == pytest.approx(e2e["output_token_throughput"] / 6)  # 6 tokens a request
    for name in ("ttft", "tpot", "itl"):
        assert e2e[f"p50_{name}_ms"] <= e2e[f"p90_{name}_ms"] <= e2e[f"p99_{name}_ms"]


def test_factorized_tune_runs_on_the_reference_runtime(backend: ReferenceBackend, tmp_path: Path) -> None:
    prior = lambda plain: (ConstantTimer(min(plain.values()), 0.3), None)  # noqa: E731
    strategy = STRATEGIES["factorized"](backend.setup, prior)
    rec = Recorder(backend, Checkpoint(tmp_path / "ck.jsonl", "h"))
    drive(strategy, rec)
    out = finish(strategy, rec)
    assert set(out.decisions) == {1, 2} and out.mixed is None or "output_token_throughput" in out.mixed
    assert [m.request.kind for m in rec.log].count("acceptance") == 1
    # measured: the CSV and the report carry each latency's mean/p50/p90/p99, the repeat and the run seconds
    res = result(
        strategy,
        rec,
        out,
        backend="reference",
        stopped=None,
        provenance=Provenance(BackendChoice("reference", "reference", "test"), "p", "c", "r.json", []),
    )
    header, *rows = measurements_csv(res.record()).splitlines()
    assert header.split(",") == list(csv_fields(predicted=False)) and {"repeat", "run_s", "p90_tpot_ms"} <= set(
        header.split(",")
    )
    e2e = [dict(zip(header.split(","), r.split(","), strict=True)) for r in rows if r.startswith("e2e,")]
    assert e2e and all(float(r["p99_itl_ms"]) >= float(r["p50_itl_ms"]) > 0 for r in e2e)
    page = render_html(res.record(), tmp_path, [])
    assert all(f"<th colspan=4>{name} (ms)</th>" in page for name in ("TTFT", "TPOT", "ITL"))
    assert "<th>mean</th><th>p50</th><th>p90</th><th>p99</th>" in page and "request throughput" in page


def test_mixed_replay_pairs_each_point_with_plain_decoding(
    backend: ReferenceBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each concurrency's run sits next to its plain-decoding run (one slow spell hits both); where the schedule
    says K = 0 the two are the same configuration, measured once — a second run would only add noise (a demo
    tune failed as a "collapse" on two runs of plain decoding 17.9 and 14.9 tokens/s apart)."""
    calls: list[tuple[int, int]] = []

    def e2e(req: Request) -> dict[str, float]:
        calls.append((req.concurrency, req.k))
        return {"output_token_throughput": 10.0 * req.concurrency + req.k, "cost_s": 1.0}

    monkeypatch.setattr(backend, "e2e", e2e)
    out = backend.mixed(Request("mixed", 2, 1, 0, ((1, 0), (2, 1))))
    assert calls == [(1, 0), (2, 1), (2, 0)]
    assert out["output_token_throughput"] == (10.0 + 21.0) / 2
    assert out["plain_output_token_throughput"] == (10.0 + 20.0) / 2
    assert out["cost_s"] == 3.0
