"""Parsers for what TensorRT-LLM reports (docs/design/trtllm.md §7, §8), kept free of TRT-LLM so they are tested on
recorded/synthetic outputs: `trtllm-bench --report_json`, iteration stats (`get_stats()` items or the
`--iteration_log` lines) and the acceptance-bias correction for runs where a schedule shortened the drafts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.metrics import STATS, distribution, latency_fields, measured


def _p(section: dict[str, Any], name: str, pct: str = "p99") -> float | None:
    value = (section.get(name) or {}).get(pct)
    return float(value) if value is not None else None


def _stats(section: dict[str, Any], name: str) -> dict[str, float | None]:
    """trtllm-bench's `minimum, maximum, average, p50, p90, p95, p99` as mean/p50/p90/p99."""
    return {stat: _p(section, name, "average" if stat == "mean" else stat) for stat in STATS}


def parse_report(data: dict[str, Any]) -> dict[str, Any]:
    """`--report_json` -> the e2e metrics (docs/design/metrics.md): request and output token throughput,
    trtllm-bench's per-user output throughput, TTFT and TPOT per request (its `ttft_percentiles`,
    `tpot_percentiles`), and AL/DAR as it reports them (biased under a schedule: see `correct_acceptance`).
    trtllm-bench reports no ITL: `parse_iteration_stats` derives it from the iteration log."""
    try:
        perf = data["performance"]
        throughputs = (
            float(perf["request_throughput_req_s"]),
            float(perf["system_output_throughput_tok_s"]),
            float(perf["output_throughput_per_user_tok_s"]),
        )
        requests = int(data.get("request_info", {}).get("num_requests", 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise StepFailed(f"trtllm-bench report is missing {exc}: not a --report_json of trtllm-bench") from None
    stream = data.get("streaming_metrics") or {}
    out: dict[str, Any] = {
        **measured(
            *throughputs, ttft=_stats(stream, "ttft_percentiles"), tpot=_stats(stream, "tpot_percentiles"), itl=None
        ),
        "requests": requests,
    }
    dec = data.get("decoding_stats") or {}
    if dec:
        out["al_reported"] = _p(dec, "acceptance_length_percentiles", "average")
        out["dar_reported"] = _p(dec, "draft_acceptance_rate_percentiles", "average")
        out["drafted_reported"] = _p(dec, "num_draft_tokens_percentiles", "average")
        out["accepted_reported"] = _p(dec, "num_accepted_draft_tokens_percentiles", "average")
    return out


def read_run(report: Path, log: Path) -> dict[str, Any]:
    """One trtllm-bench run: its report's metrics, ITL from its iteration log, and the log's other statistics as
    `iter_*` (no log: ITL unknown)."""
    values = parse_report(json.loads(report.read_text(encoding="utf-8")))
    stats = parse_iteration_stats(log.read_text(encoding="utf-8").splitlines()) if log.exists() else {}
    values.update(latency_fields("itl", stats.pop("itl_ms", None)))  # trtllm-bench reports no ITL
    values.update({f"iter_{n}": v for n, v in stats.items()})
    return values


def iteration_rows(items: Iterable[Any]) -> list[dict[str, Any]]:
    """`get_stats()` items (dicts or JSON strings) or `--iteration_log` lines -> dicts; junk lines skipped."""
    rows = []
    for item in items:
        if isinstance(item, str):
            text = item.strip()
            text = text[text.find("{") :] if "{" in text else ""
            try:
                item = json.loads(text) if text else None
            except ValueError:
                item = None
        if isinstance(item, dict):
            rows.append(item)
    return rows


def parse_iteration_stats(items: Iterable[Any]) -> dict[str, Any]:
    """AL = (sum accepted + sum requests) / sum requests, AR = sum accepted / sum drafted, over iterations that
    drafted (numDraftTokens > 0); the median iteration latency (the measured step time); and ITL: an iteration's
    latency is the gap each of its `numActiveRequests` waited for its next tokens (a request's tokens of one
    iteration arrive together), so every iteration counts once per active request."""
    rows = iteration_rows(items)
    spec = [r["specDecodingStats"] for r in rows if (r.get("specDecodingStats") or {}).get("numDraftTokens", 0) > 0]
    timed = [r for r in rows if r.get("iterLatencyMS") is not None]
    lat = sorted(float(r["iterLatencyMS"]) for r in timed)
    gaps = [float(r["iterLatencyMS"]) for r in timed for _ in range(int(r.get("numActiveRequests") or 1))]
    out: dict[str, Any] = {
        "iterations": len(rows),
        "drafting_iterations": len(spec),
        "step_s": lat[len(lat) // 2] / 1e3 if lat else None,
        "itl_ms": distribution(gaps) if gaps else None,
    }
    if spec:
        acc = sum(int(s["numAcceptedTokens"]) for s in spec)
        req = sum(int(s["numRequestsWithDraftTokens"]) for s in spec)
        drafted = sum(int(s["numDraftTokens"]) for s in spec)
        out.update(
            {
                "al": (acc + req) / req if req else 1.0,
                "acceptance_rate": acc / drafted if drafted else 0.0,
                "drafted_tokens": drafted,
                "accepted_tokens": acc,
            }
        )
    return out


def correct_acceptance(values: dict[str, Any], *, configured_k: int, effective_k: int) -> dict[str, Any]:
    """trtllm-bench assumes `drafted = max_draft_len x (iter + 1)`: when a schedule ran at K_eff < K_cfg, the
    reported drafted count is K_cfg/K_eff too high and the DAR that much too low; at K_eff = 0 nothing was
    drafted (AL 1, no DAR). AL stays tokens per step (docs/design/trtllm.md §7 "Acceptance bias")."""
    out = dict(values)
    if values.get("dar_reported") is None:
        return out
    if effective_k <= 0:
        out.update(dar=None, drafted=0.0, al=1.0, bias_corrected=True)
        return out
    scale = configured_k / effective_k
    out.update(
        dar=min(1.0, float(values["dar_reported"]) * scale),
        drafted=float(values.get("drafted_reported") or 0.0) / scale,
        al=values.get("al_reported"),
        bias_corrected=scale != 1.0,
    )
    return out


def histogram_from_chunks(chunk_lengths: Sequence[int], k: int) -> list[int]:
    """Streaming chunk sizes with `stream_interval: 1` -> accepted drafts per step (chunk - 1, clipped to K);
    unconfirmed on 1.2.1 (docs/design/draft-length.md §1.2): one chunk per iteration is assumed."""
    hist = [0] * (k + 1)
    for n in chunk_lengths:
        if n >= 1:
            hist[min(k, n - 1)] += 1
    return hist
