"""One short device call that settles CUDA-graph decoding (issue 18 item 3), no model files to carry.

    python3 bench/gpu/graphs_check.py [--device cuda|cpu] [--budget-s 240] [--out DIR]

1. Exactness, tiny float64 Llamas (tests/unit/runtime/tiny.py, no argmax ties): in each decode mode, plain greedy
   output equals transformers' own `generate` on the device, and draft_target (a noisy copy) and eagle3 (an
   untrained head) propose exactly the drafts eager proposes, K = 1..4, c = 1 and 3 (buckets 1, 2 and 4 with a
   padding row, rows of different lengths joining and leaving).
2. Speed, a random-weight Llama of SmolLM2-135M's shape (float32, as the runtime loads it): plain decoding of 8
   prompts of 128 random tokens, 48 new tokens, at c = 1 and 4 in each mode; tokens/s, warm-up, same output as
   eager. Random weights decode the same costs as SmolLM2, not its text (the kit measures SmolLM2 itself).

`compile` runs last in each part (torch.compile may take a minute a shape). A mode the device cannot run, or one
that fails, is a row with the reason. Writes graphs-check-<device>.json (and $OUT/graphs-check.json when set) after
every row, so a run cut short keeps its rows. Needs only torch and transformers (the tree on sys.path).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(Path(__file__).parent)]

import decode_modes  # noqa: E402
import runtime_e2e  # noqa: E402

from specdeploy.engines.reference.runtime.drafters import ChainDrafter  # noqa: E402
from specdeploy.engines.reference.runtime.models import ModelPair  # noqa: E402
from tests.unit.runtime import tiny  # noqa: E402

MODES = ("eager", "static", "graphs", "compile")


def drafts_of(pair: ModelPair, *args: Any) -> tuple[list[list[int]], list]:
    """(outputs, every chain of drafts proposed, in order)."""
    from specdeploy.engines.reference.runtime import generate

    seen: list = []
    chain = ChainDrafter.chain

    def spy(self: Any, *a: Any, **kw: Any) -> Any:
        drafts = chain(self, *a, **kw)
        seen.append(drafts[0])
        return drafts

    ChainDrafter.chain = spy  # type: ignore[method-assign]
    try:
        outputs, _ = generate(pair, *args)
    finally:
        ChainDrafter.chain = chain  # type: ignore[method-assign]
    return outputs, seen


def exactness(device: str, deadline: float, rows: list[dict], save: Any) -> None:
    target = tiny.tiny_llama(0)  # built on the CPU (the noisy copy draws its noise there), then moved
    prompts = tiny.random_prompts(7, 96, seed=1) + tiny.repetitive_prompts(5, 96, seed=2)
    reference = tiny.hf_greedy(target, prompts, 12)
    drafters = {"draft_target": tiny.noisy_copy(target, 3, 0.3), "eagle3": tiny.tiny_head(target)}
    target.to(device)  # the head's shared embedding moves with it
    drafters = {m: d.to(device) for m, d in drafters.items()}
    eager_drafts: dict[tuple[str, int, int], list] = {}
    every = [("none", 0, c) for c in (1, 3)] + [(m, k, c) for m in drafters for c in (1, 3) for k in (1, 4)]
    for mode in MODES:
        for what in every if mode != "compile" else every[:1]:  # compile: a minute a bucket, plain c = 1 only
            mechanism, k, c = what
            row: dict = {"part": "exactness", "mode": mode, "mechanism": mechanism, "k": k, "concurrency": c}
            if time.monotonic() > deadline:
                row["skipped"] = "budget"
            else:
                try:
                    pair = ModelPair(target, drafters.get(mechanism), device=device, decode=mode)
                    started = time.monotonic()
                    outputs, seen = drafts_of(pair, prompts, mechanism, k, c, 12)
                    row |= {"seconds": time.monotonic() - started, "equals_generate": outputs == reference}
                    if mechanism != "none":
                        if mode == "eager":
                            eager_drafts[what] = seen
                        row["same_drafts_as_eager"] = seen == eager_drafts.get(what)
                except Exception as exc:  # refused (no CUDA) or failed on this device: the row says which
                    row["skipped"] = decode_modes.failure(exc)
            rows.append(row)
            save()


def speed(device: str, deadline: float, rows: list[dict], save: Any) -> None:
    import torch

    model = runtime_e2e.random_llama(runtime_e2e.SMOLLM2_SHAPE, 0, torch.float32).to(device)
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 49152, (128,), generator=gen).tolist() for _ in range(8)]
    plan = {"concurrency": (1, 4), "max_new_tokens": 48}
    eager: dict[int, list[list[int]]] = {}
    decoded: list[dict] = []

    def keep() -> None:
        rows[:] = [r for r in rows if r.get("part") != "speed"] + [{"part": "speed", **r} for r in decoded]
        save()

    decode_modes.plain_modes(ModelPair(model, device=device), prompts, plan, MODES, deadline, decoded, eager, keep)


def main(argv: list[str] | None = None) -> int:
    import torch
    import transformers

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budget-s", type=float, default=240.0, help="for both parts (the first gets at most 45 %%)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "gpu")
    args = ap.parse_args(argv)
    began = time.monotonic()
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    result: dict = {
        "check": "specdeploy.graphs-check/1",
        "device": args.device,
        "device_name": name,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "rows": [],
    }
    slug = "".join(ch if ch.isalnum() else "-" for ch in name.lower())
    path = args.out / f"graphs-check-{slug}.json"

    def save() -> None:
        result["elapsed_s"] = round(time.monotonic() - began, 1)
        text = json.dumps(result, indent=1) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if os.environ.get("OUT"):
            Path(os.environ["OUT"], "graphs-check.json").write_text(text)

    with torch.inference_mode():
        exactness(args.device, began + 0.45 * args.budget_s, result["rows"], save)
        speed(args.device, began + args.budget_s, result["rows"], save)
    save()
    for row in result["rows"]:
        print({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()})
    print(f"wrote {path} after {result['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
